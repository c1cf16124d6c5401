//! One unary gRPC call over HTTP/2 on a blocking socket, without the
//! async stack.
//!
//! A command that makes a single call (sbatch's submission) spends more
//! on the general client than on the call: an async runtime with its event
//! loop, signal pipe and timers, the connection's own task, and a request
//! that leaves in five writes (preface, settings, headers, message, end of
//! stream), each a pass through the TCP stack. Here the connection is a
//! plain socket, the whole request goes out in one write when flow control
//! allows it (it always does for a few kB), and the reply is read frame by
//! frame until the stream ends.
//!
//! What is implemented is what a client of one unary call needs from
//! RFC 9113: the connection preface and SETTINGS (acknowledged: see
//! [`Conn::deferred`]), PING
//! (answered), flow control of the request (WINDOW_UPDATE and the peer's
//! INITIAL_WINDOW_SIZE), and of the reply (a window of 2^31-1 is granted
//! up front, so none is sent later), HEADERS with CONTINUATION, padding and
//! priority fields, DATA, RST_STREAM and GOAWAY. Header blocks are decoded
//! with a full HPACK decoder (Huffman strings, dynamic table); the request
//! is encoded with literal fields only, which every decoder reads. The
//! outcome is a `tonic::Status` built as tonic builds it from the trailers,
//! so errors read the same as on the async path.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use tonic::codegen::http::{HeaderMap, HeaderName, HeaderValue};
use tonic::Status;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEAD: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's default, which this client keeps for what it
/// receives and never exceeds when it sends.
const MAX_FRAME: usize = 16_384;
/// The flow-control windows every peer starts with.
const DEFAULT_WINDOW: i64 = 65_535;
/// The largest window HTTP/2 allows, granted to the server for the reply.
const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The one stream this client opens.
const STREAM: u32 = 1;
/// Replies larger than this are refused (a command's single answer; the
/// async path has no cap but the controller's own).
const MAX_REPLY: usize = 1 << 30;
/// Header blocks larger than this are refused (what the server sends is a
/// status line and a few trailers).
const MAX_HEADER_BLOCK: usize = 1 << 20;

mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
}

/// The request of one call.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `host:port`, for `:authority`.
    pub authority: &'a str,
    /// `/package.Service/Method`.
    pub path: &'a str,
    /// Metadata (credentials): lower-case names, as HTTP/2 wants them.
    pub metadata: &'a HeaderMap,
    /// The encoded request message.
    pub message: &'a [u8],
}

/// Connects to `host:port` (each address it resolves to in turn) and makes
/// the call; `timeout` bounds the connection and the call each.
pub fn call(
    host: &str,
    port: u16,
    timeout: Duration,
    req: &Request<'_>,
) -> Result<Vec<u8>, Status> {
    let addrs = resolve(host, port, timeout)?;
    let mut last = Status::unavailable(format!("tcp connect error: {host} has no address"));
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(mut stream) => {
                // Both only fail on a socket that is already unusable,
                // which the first write reports.
                let _ = stream.set_nodelay(true);
                let _ = stream.set_read_timeout(Some(timeout));
                let _ = stream.set_write_timeout(Some(timeout));
                return exchange(&mut stream, req, Instant::now() + timeout);
            }
            Err(e) => last = Status::unavailable(format!("tcp connect error: {e}")),
        }
    }
    Err(last)
}

/// The addresses of `host`: an IP address as it is, a name through the
/// system's resolver on a thread of its own, so that a resolver that hangs
/// holds the call no longer than `timeout` (as on the async path).
fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, Status> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let name = host.to_owned();
    std::thread::Builder::new()
        .name("resolve".into())
        .spawn(move || {
            let _ = tx.send((name.as_str(), port).to_socket_addrs().map(Vec::from_iter));
        })
        .map_err(|e| Status::unavailable(format!("dns error: cannot start a resolver: {e}")))?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(addrs)) => Ok(addrs),
        Ok(Err(e)) => Err(Status::unavailable(format!("dns error: {e}"))),
        Err(_) => Err(Status::deadline_exceeded(format!(
            "dns error: no answer for {host} within {} ms",
            timeout.as_millis()
        ))),
    }
}

/// The call on an open connection; the reply message on success, else the
/// gRPC status the server (or the connection) ended it with.
pub fn exchange<S: Read + Write>(
    stream: &mut S,
    req: &Request<'_>,
    deadline: Instant,
) -> Result<Vec<u8>, Status> {
    let mut conn = Conn {
        stream,
        buf: Vec::with_capacity(MAX_FRAME + FRAME_HEAD),
        start: 0,
        deadline,
        send_conn: DEFAULT_WINDOW,
        send_stream: DEFAULT_WINDOW,
        peer_initial: DEFAULT_WINDOW,
        decoder: fluke_hpack::Decoder::new(),
        reply: Reply::default(),
        deferred: Vec::new(),
    };
    conn.decoder.set_max_allowed_table_size(4096);
    conn.run(req)?;
    conn.reply.outcome()
}

/// A frame as read: type, flags, stream and payload (a range of the read
/// buffer).
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    len: usize,
}

/// What the server sent on the stream so far.
#[derive(Default)]
struct Reply {
    /// Header blocks decoded: the response headers, then the trailers.
    blocks: Vec<HeaderMap>,
    /// A header block being gathered (HEADERS then CONTINUATION) and
    /// whether the stream ends with it.
    pending: Option<(Vec<u8>, bool)>,
    body: Vec<u8>,
    ended: bool,
}

struct Conn<'s, S> {
    stream: &'s mut S,
    buf: Vec<u8>,
    /// Start of the unread bytes of `buf`.
    start: usize,
    deadline: Instant,
    /// What the server lets this client send, on the connection and on the
    /// stream.
    send_conn: i64,
    send_stream: i64,
    /// The server's INITIAL_WINDOW_SIZE (changes adjust `send_stream`).
    peer_initial: i64,
    decoder: fluke_hpack::Decoder<'static>,
    reply: Reply,
    /// The acknowledgement of the server's SETTINGS, written with the next
    /// frames this client sends, else when the reply has ended. Written at
    /// once, it reaches the server while the server works on the call, and
    /// waking it for that alone made a sequential sbatch loop 15% slower
    /// (771-796 against 919-924 submissions per second). The server's
    /// settings take effect here as soon as they are read, whenever the
    /// acknowledgement leaves.
    deferred: Vec<u8>,
}

impl<S: Read + Write> Conn<'_, S> {
    fn run(&mut self, req: &Request<'_>) -> Result<(), Status> {
        let mut out = Vec::with_capacity(256 + req.message.len() + 5);
        out.extend_from_slice(PREFACE);
        let mut settings = Vec::with_capacity(18);
        for (id, value) in [
            (setting::ENABLE_PUSH, 0),
            (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
            (setting::HEADER_TABLE_SIZE, 4096),
        ] {
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&value.to_be_bytes());
        }
        put_frame(&mut out, kind::SETTINGS, 0, 0, &settings);
        let grant = MAX_WINDOW - DEFAULT_WINDOW as u32;
        put_frame(&mut out, kind::WINDOW_UPDATE, 0, 0, &grant.to_be_bytes());
        put_headers(&mut out, &header_block(req)?);

        // The message with gRPC's framing: not compressed, then its length.
        let len = u32::try_from(req.message.len())
            .map_err(|_| Status::resource_exhausted("request message over 4 GiB"))?;
        let mut body = Vec::with_capacity(5 + req.message.len());
        body.push(0);
        body.extend_from_slice(&len.to_be_bytes());
        body.extend_from_slice(req.message);

        let mut sent = 0;
        loop {
            // As much as the windows allow, in frames of at most MAX_FRAME.
            while sent < body.len() {
                let room = self.send_conn.min(self.send_stream).max(0) as usize;
                let n = (body.len() - sent).min(room).min(MAX_FRAME);
                if n == 0 {
                    break;
                }
                let last = sent + n == body.len();
                let flags = if last { flag::END_STREAM } else { 0 };
                put_frame(&mut out, kind::DATA, flags, STREAM, &body[sent..sent + n]);
                sent += n;
                self.send_conn -= n as i64;
                self.send_stream -= n as i64;
            }
            if !out.is_empty() {
                if !self.deferred.is_empty() {
                    out.splice(0..0, std::mem::take(&mut self.deferred));
                }
                self.write(&out)?;
                out.clear();
            }
            // Read what the server sends: a window update lets the rest of
            // the request go; the reply's end stops.
            let frame = self.read_frame()?;
            self.handle(&frame, &mut out)?;
            if self.reply.ended {
                self.flush_deferred();
                return Ok(());
            }
        }
    }

    /// Writes what waited for the end of the call. The call has its
    /// answer by then, so a connection the server already closed is no
    /// failure.
    fn flush_deferred(&mut self) {
        if !self.deferred.is_empty() {
            let _ = self.stream.write_all(&self.deferred);
            self.deferred.clear();
        }
    }

    /// Acts on one frame; frames to send back go to `out`.
    fn handle(&mut self, f: &Frame, out: &mut Vec<u8>) -> Result<(), Status> {
        let at = self.start - f.len..self.start;
        if self.reply.pending.is_some() && f.kind != kind::CONTINUATION {
            return Err(protocol("a header block was interrupted"));
        }
        if f.kind == kind::DATA && f.stream == STREAM {
            // Straight from the read buffer into the reply.
            if self.reply.blocks.is_empty() {
                return Err(protocol("DATA before the response headers"));
            }
            let data = strip_padding(&self.buf[at], f.flags)?;
            if self.reply.body.len() + data.len() > MAX_REPLY {
                return Err(Status::resource_exhausted("reply over 1 GiB"));
            }
            self.reply.body.extend_from_slice(data);
            if f.flags & flag::END_STREAM != 0 {
                self.reply.ended = true;
            }
            return Ok(());
        }
        // Control frames and header blocks are small; a copy frees `self`.
        let payload = self.buf[at].to_vec();
        match f.kind {
            kind::SETTINGS => {
                if f.flags & flag::ACK != 0 {
                    return Ok(());
                }
                if f.stream != 0 || payload.len() % 6 != 0 {
                    return Err(protocol("malformed SETTINGS"));
                }
                for p in payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([p[0], p[1]]);
                    let value = i64::from(u32::from_be_bytes([p[2], p[3], p[4], p[5]]));
                    if id == setting::INITIAL_WINDOW_SIZE {
                        if value > i64::from(MAX_WINDOW) {
                            return Err(protocol("INITIAL_WINDOW_SIZE above 2^31-1"));
                        }
                        self.send_stream += value - self.peer_initial;
                        self.peer_initial = value;
                    }
                }
                put_frame(&mut self.deferred, kind::SETTINGS, flag::ACK, 0, &[]);
            }
            kind::PING => {
                if f.stream != 0 || payload.len() != 8 {
                    return Err(protocol("malformed PING"));
                }
                if f.flags & flag::ACK == 0 {
                    put_frame(out, kind::PING, flag::ACK, 0, &payload);
                }
            }
            kind::WINDOW_UPDATE => {
                if payload.len() != 4 {
                    return Err(protocol("malformed WINDOW_UPDATE"));
                }
                let inc = i64::from(
                    u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & 0x7fff_ffff,
                );
                match f.stream {
                    0 => self.send_conn += inc,
                    STREAM => self.send_stream += inc,
                    _ => {}
                }
            }
            kind::GOAWAY => {
                if payload.len() < 8 {
                    return Err(protocol("malformed GOAWAY"));
                }
                let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                    & 0x7fff_ffff;
                let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                if last < STREAM || code != 0 {
                    // Not processed (or the connection failed): as tonic
                    // reports a connection the server went away from.
                    return Err(Status::unavailable(format!(
                        "connection closed by the server (GOAWAY, error code {code})"
                    )));
                }
                // Graceful: the stream still completes.
            }
            kind::RST_STREAM if f.stream == STREAM => {
                if payload.len() != 4 {
                    return Err(protocol("malformed RST_STREAM"));
                }
                let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                return Err(reset_status(code));
            }
            kind::HEADERS if f.stream == STREAM => {
                let block = strip_headers(&payload, f.flags)?;
                let end_stream = f.flags & flag::END_STREAM != 0;
                if f.flags & flag::END_HEADERS != 0 {
                    self.header_block(block, end_stream)?;
                } else {
                    self.reply.pending = Some((block.to_vec(), end_stream));
                }
            }
            kind::CONTINUATION if f.stream == STREAM => {
                let Some((mut block, end_stream)) = self.reply.pending.take() else {
                    return Err(protocol("CONTINUATION without HEADERS"));
                };
                block.extend_from_slice(&payload);
                if block.len() > MAX_HEADER_BLOCK {
                    return Err(protocol("header block over 1 MiB"));
                }
                if f.flags & flag::END_HEADERS != 0 {
                    self.header_block(&block, end_stream)?;
                } else {
                    self.reply.pending = Some((block, end_stream));
                }
            }
            kind::PUSH_PROMISE => return Err(protocol("PUSH_PROMISE though push is off")),
            // Frames of other streams, PRIORITY and unknown types.
            _ => {}
        }
        Ok(())
    }

    fn header_block(&mut self, block: &[u8], end_stream: bool) -> Result<(), Status> {
        let fields = self
            .decoder
            .decode(block)
            .map_err(|e| protocol(&format!("header block does not decode: {e:?}")))?;
        let mut map = HeaderMap::new();
        for (name, value) in fields {
            // Pseudo-headers are not valid names; only :status matters.
            if name == b":status" {
                if value != b"200" {
                    return Err(Status::unknown(format!(
                        "HTTP status {} from the server",
                        String::from_utf8_lossy(&value)
                    )));
                }
                continue;
            }
            if name.first() == Some(&b':') {
                continue;
            }
            let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(&name),
                HeaderValue::from_bytes(&value),
            ) else {
                return Err(protocol("a header field is not valid HTTP"));
            };
            map.append(n, v);
        }
        self.reply.blocks.push(map);
        if end_stream {
            self.reply.ended = true;
        }
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Status> {
        self.stream.write_all(bytes).map_err(|e| io_status(&e))
    }

    /// The next whole frame; its payload ends at `self.start`.
    fn read_frame(&mut self) -> Result<Frame, Status> {
        self.fill(FRAME_HEAD)?;
        let h = &self.buf[self.start..self.start + FRAME_HEAD];
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let frame = Frame {
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
            len,
        };
        if len > MAX_FRAME {
            return Err(protocol("frame larger than SETTINGS_MAX_FRAME_SIZE"));
        }
        self.fill(FRAME_HEAD + len)?;
        self.start += FRAME_HEAD + len;
        Ok(frame)
    }

    /// Reads until `n` unread bytes are buffered.
    fn fill(&mut self, n: usize) -> Result<(), Status> {
        if self.start > 0 && self.buf.len() - self.start < n {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        while self.buf.len() - self.start < n {
            if Instant::now() > self.deadline {
                return Err(Status::deadline_exceeded("Timeout expired"));
            }
            let have = self.buf.len();
            self.buf.resize(have + MAX_FRAME + FRAME_HEAD, 0);
            let got = self.stream.read(&mut self.buf[have..]);
            self.buf.truncate(have + *got.as_ref().unwrap_or(&0));
            match got {
                Ok(0) => {
                    return Err(Status::unavailable(
                        "connection closed before the reply ended",
                    ))
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_status(&e)),
            }
        }
        Ok(())
    }
}

impl Reply {
    /// The reply message, or the status the call ended with.
    fn outcome(mut self) -> Result<Vec<u8>, Status> {
        // Trailers, or the response headers of a trailers-only answer.
        let Some(mut last) = self.blocks.pop() else {
            return Err(protocol("the stream ended without headers"));
        };
        // Its details are not read here, and a malformed value would make
        // tonic's parser panic.
        last.remove("grpc-status-details-bin");
        let status = Status::from_header_map(&last)
            .ok_or_else(|| Status::internal("the reply has no grpc-status"))?;
        if status.code() != tonic::Code::Ok {
            return Err(status);
        }
        let body = std::mem::take(&mut self.body);
        if body.len() < 5 {
            return Err(Status::internal("the reply holds no message"));
        }
        if body[0] != 0 {
            return Err(Status::internal(
                "the reply is compressed, which was not asked for",
            ));
        }
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        if body.len() != 5 + len {
            return Err(Status::internal(format!(
                "the reply's message is {} bytes, its framing says {len}",
                body.len() - 5
            )));
        }
        let mut body = body;
        body.drain(..5);
        Ok(body)
    }
}

/// Appends a frame of `kind` to `out`.
fn put_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len();
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Appends the request's header block as HEADERS and CONTINUATION frames.
fn put_headers(out: &mut Vec<u8>, block: &[u8]) {
    let mut chunks = block.chunks(MAX_FRAME).peekable();
    let mut first = true;
    if block.is_empty() {
        put_frame(out, kind::HEADERS, flag::END_HEADERS, STREAM, &[]);
        return;
    }
    while let Some(chunk) = chunks.next() {
        let end = if chunks.peek().is_none() {
            flag::END_HEADERS
        } else {
            0
        };
        let kind = if first {
            kind::HEADERS
        } else {
            kind::CONTINUATION
        };
        put_frame(out, kind, end, STREAM, chunk);
        first = false;
    }
}

/// The request's header block: every field a literal not indexed, with a
/// literal name.
fn header_block(req: &Request<'_>) -> Result<Vec<u8>, Status> {
    let mut block = Vec::with_capacity(256);
    let mut field = |name: &[u8], value: &[u8]| {
        block.push(0);
        put_string(&mut block, name);
        put_string(&mut block, value);
    };
    field(b":method", b"POST");
    field(b":scheme", b"http");
    field(b":path", req.path.as_bytes());
    field(b":authority", req.authority.as_bytes());
    field(b"content-type", b"application/grpc");
    field(b"te", b"trailers");
    for (name, value) in req.metadata {
        if name.as_str().starts_with(':') {
            return Err(Status::internal("metadata may not be a pseudo-header"));
        }
        field(name.as_str().as_bytes(), value.as_bytes());
    }
    Ok(block)
}

/// An HPACK string literal, not Huffman-coded.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// An HPACK integer with an `n`-bit prefix after the bits of `first`.
fn put_integer(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// A HEADERS payload without its padding and priority fields.
fn strip_headers(payload: &[u8], flags: u8) -> Result<&[u8], Status> {
    let mut p = strip_padding(payload, flags)?;
    if flags & flag::PRIORITY != 0 {
        p = p
            .get(5..)
            .ok_or_else(|| protocol("HEADERS too short for its priority"))?;
    }
    Ok(p)
}

/// A DATA or HEADERS payload without its padding.
fn strip_padding(payload: &[u8], flags: u8) -> Result<&[u8], Status> {
    if flags & flag::PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload
        .split_first()
        .ok_or_else(|| protocol("padded frame without its pad length"))?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|end| &rest[..end])
        .ok_or_else(|| protocol("padding longer than the frame"))
}

fn protocol(what: &str) -> Status {
    Status::internal(format!("HTTP/2 protocol error: {what}"))
}

/// How a reset stream reads, as tonic maps HTTP/2 reasons.
fn reset_status(code: u32) -> Status {
    let text = format!("stream reset by the server (error code {code})");
    match code {
        // REFUSED_STREAM: not processed, safe to try elsewhere.
        0x7 => Status::unavailable(text),
        // CANCEL
        0x8 => Status::cancelled(text),
        // ENHANCE_YOUR_CALM
        0xb => Status::resource_exhausted(text),
        // INADEQUATE_SECURITY
        0xc => Status::permission_denied(text),
        _ => Status::internal(text),
    }
}

fn io_status(e: &io::Error) -> Status {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            Status::deadline_exceeded("Timeout expired")
        }
        _ => Status::unavailable(format!("connection error: {e}")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "h2call/tests.rs"]
mod tests;
