use std::io::Cursor;
use std::net::TcpListener;

use super::*;

/// A server's bytes, canned, and what the client wrote.
struct Canned {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Canned {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Canned {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn literal_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        b.push(0);
        put_string(&mut b, n.as_bytes());
        put_string(&mut b, v.as_bytes());
    }
    b
}

fn framed(message: &[u8]) -> Vec<u8> {
    let mut b = vec![0];
    b.extend_from_slice(&(message.len() as u32).to_be_bytes());
    b.extend_from_slice(message);
    b
}

/// A header block in one HEADERS frame that ends the stream.
fn put_ending_headers(s: &mut Vec<u8>, block: &[u8]) {
    let flags = flag::END_HEADERS | flag::END_STREAM;
    put_frame(s, kind::HEADERS, flags, STREAM, block);
}

/// The trailers of a successful answer, ending the stream.
fn put_ok_trailers(s: &mut Vec<u8>) {
    put_ending_headers(s, &literal_block(&[("grpc-status", "0")]));
}

/// The frames of a successful answer carrying `message`.
fn ok_answer(message: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    put_frame(&mut s, kind::SETTINGS, 0, 0, &[0, 4, 0, 0x10, 0, 0]);
    let head = literal_block(&[(":status", "200"), ("content-type", "application/grpc")]);
    put_frame(&mut s, kind::HEADERS, flag::END_HEADERS, STREAM, &head);
    put_frame(&mut s, kind::DATA, 0, STREAM, &framed(message));
    put_ok_trailers(&mut s);
    s
}

fn request<'a>(metadata: &'a HeaderMap, message: &'a [u8]) -> Request<'a> {
    Request {
        authority: "ctl:6817",
        path: "/slurm.v1.SlurmController/SubmitJob",
        metadata,
        message,
    }
}

fn run_canned(server: Vec<u8>, message: &[u8]) -> (Result<Vec<u8>, Status>, Vec<u8>) {
    let mut s = Canned {
        input: Cursor::new(server),
        output: Vec::new(),
    };
    let md = HeaderMap::new();
    let r = exchange(
        &mut s,
        &request(&md, message),
        Instant::now() + Duration::from_secs(5),
    );
    (r, s.output)
}

/// Frames (kind, flags, stream, payload) in `bytes`, after the preface.
fn frames(bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    assert!(bytes.starts_with(PREFACE));
    let mut at = PREFACE.len();
    let mut out = Vec::new();
    while at < bytes.len() {
        let h = &bytes[at..at + FRAME_HEAD];
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]);
        out.push((
            h[3],
            h[4],
            stream,
            bytes[at + FRAME_HEAD..at + FRAME_HEAD + len].to_vec(),
        ));
        at += FRAME_HEAD + len;
    }
    out
}

#[test]
fn hpack_integers_as_rfc_7541_spells_them() {
    // C.1.1, C.1.2, C.1.3: 10 and 1337 with a 5-bit prefix, 42 with 8.
    let mut b = Vec::new();
    put_integer(&mut b, 0, 5, 10);
    assert_eq!(b, [0x0a]);
    b.clear();
    put_integer(&mut b, 0, 5, 1337);
    assert_eq!(b, [0x1f, 0x9a, 0x0a]);
    b.clear();
    put_integer(&mut b, 0, 8, 42);
    assert_eq!(b, [0x2a]);
    // The prefix's own maximum needs a second byte (of zero).
    b.clear();
    put_integer(&mut b, 0, 7, 127);
    assert_eq!(b, [0x7f, 0x00]);
}

#[test]
fn the_request_leaves_in_one_write_and_the_settings_are_acknowledged() {
    let (r, out) = run_canned(ok_answer(b"reply"), b"hello");
    assert_eq!(r.unwrap(), b"reply");
    let f = frames(&out);
    let kinds: Vec<u8> = f.iter().map(|f| f.0).collect();
    assert_eq!(
        kinds,
        [
            kind::SETTINGS,
            kind::WINDOW_UPDATE,
            kind::HEADERS,
            kind::DATA,
            kind::SETTINGS
        ]
    );
    assert_eq!(f[2].1, flag::END_HEADERS);
    assert_eq!(f[3].1, flag::END_STREAM);
    assert_eq!(f[3].3, framed(b"hello"));
    assert_eq!(f[4].1, flag::ACK, "the server's SETTINGS acknowledged");
    // The header block decodes to what a gRPC server expects.
    let fields = fluke_hpack::Decoder::new().decode(&f[2].3).unwrap();
    let get = |n: &str| {
        fields
            .iter()
            .find(|(k, _)| k == n.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    assert_eq!(get(":method").as_deref(), Some("POST"));
    assert_eq!(
        get(":path").as_deref(),
        Some("/slurm.v1.SlurmController/SubmitJob")
    );
    assert_eq!(get(":authority").as_deref(), Some("ctl:6817"));
    assert_eq!(get("content-type").as_deref(), Some("application/grpc"));
    assert_eq!(get("te").as_deref(), Some("trailers"));
}

#[test]
fn pings_are_answered_and_padding_and_continuations_are_read() {
    let mut s = Vec::new();
    put_frame(&mut s, kind::PING, 0, 0, b"12345678");
    let head = literal_block(&[(":status", "200"), ("content-type", "application/grpc")]);
    // Padded, with a priority, and split over a CONTINUATION.
    let mut padded = vec![3];
    padded.extend_from_slice(&[0, 0, 0, 0, 16]);
    padded.extend_from_slice(&head[..10]);
    padded.extend_from_slice(&[0, 0, 0]);
    put_frame(
        &mut s,
        kind::HEADERS,
        flag::PADDED | flag::PRIORITY,
        STREAM,
        &padded,
    );
    put_frame(
        &mut s,
        kind::CONTINUATION,
        flag::END_HEADERS,
        STREAM,
        &head[10..],
    );
    let body = framed(b"abcdef");
    let mut data = vec![2];
    data.extend_from_slice(&body[..7]);
    data.extend_from_slice(&[0, 0]);
    put_frame(&mut s, kind::DATA, flag::PADDED, STREAM, &data);
    // Frames of other streams and of unknown types are passed over.
    put_frame(&mut s, kind::DATA, 0, 3, b"noise");
    put_frame(&mut s, 0xfa, 0, 0, b"future");
    put_frame(&mut s, kind::DATA, 0, STREAM, &body[7..]);
    put_ok_trailers(&mut s);
    let (r, out) = run_canned(s, b"x");
    assert_eq!(r.unwrap(), b"abcdef");
    let pong = frames(&out)
        .into_iter()
        .find(|f| f.0 == kind::PING)
        .unwrap();
    assert_eq!((pong.1, pong.3.as_slice()), (flag::ACK, &b"12345678"[..]));
}

#[test]
fn an_error_answer_keeps_its_code_message_and_metadata() {
    let mut s = Vec::new();
    let head = literal_block(&[
        (":status", "200"),
        ("content-type", "application/grpc"),
        ("grpc-status", "3"),
        ("grpc-message", "Invalid%20partition%20name%20specified"),
        ("x-slurm-errno", "2000"),
        ("grpc-status-details-bin", "not base64 !!"),
    ]);
    put_ending_headers(&mut s, &head);
    let err = run_canned(s, b"x").0.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(err.message(), "Invalid partition name specified");
    assert_eq!(
        err.metadata()
            .get("x-slurm-errno")
            .unwrap()
            .to_str()
            .unwrap(),
        "2000"
    );
}

#[test]
fn what_ends_a_call_early_reads_as_tonic_reports_it() {
    // The server refused the stream: not processed, try elsewhere.
    let mut s = Vec::new();
    put_frame(&mut s, kind::RST_STREAM, 0, STREAM, &7u32.to_be_bytes());
    assert_eq!(
        run_canned(s, b"x").0.unwrap_err().code(),
        tonic::Code::Unavailable
    );
    // Going away before the stream: the same.
    let mut s = Vec::new();
    let mut goaway = 0u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&0u32.to_be_bytes());
    put_frame(&mut s, kind::GOAWAY, 0, 0, &goaway);
    assert_eq!(
        run_canned(s, b"x").0.unwrap_err().code(),
        tonic::Code::Unavailable
    );
    // The connection closed midway.
    let mut s = ok_answer(b"reply");
    s.truncate(s.len() - 3);
    let err = run_canned(s, b"x").0.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);
    // Not HTTP 200.
    let mut s = Vec::new();
    put_frame(
        &mut s,
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        STREAM,
        &literal_block(&[(":status", "503")]),
    );
    assert!(run_canned(s, b"x").0.unwrap_err().message().contains("503"));
    // Garbage: a frame too large, a header block that does not decode, a
    // reply whose framing lies, no grpc-status.
    let mut s = Vec::new();
    put_frame(&mut s, kind::DATA, 0, STREAM, &vec![0; MAX_FRAME + 1]);
    assert_eq!(
        run_canned(s, b"x").0.unwrap_err().code(),
        tonic::Code::Internal
    );
    let mut s = Vec::new();
    put_frame(
        &mut s,
        kind::HEADERS,
        flag::END_HEADERS,
        STREAM,
        &[0xff, 0xff, 0xff],
    );
    assert_eq!(
        run_canned(s, b"x").0.unwrap_err().code(),
        tonic::Code::Internal
    );
    let mut s = ok_answer(b"reply");
    let at = s
        .windows(5)
        .position(|w| *w == framed(b"reply")[..5])
        .unwrap();
    s[at + 4] = 9;
    assert!(run_canned(s, b"x")
        .0
        .unwrap_err()
        .message()
        .contains("framing"));
    let mut s = Vec::new();
    put_frame(&mut s, kind::HEADERS, 0, STREAM, &[0; 100]);
    for _ in 0..70 {
        put_frame(&mut s, kind::CONTINUATION, 0, STREAM, &vec![0; MAX_FRAME]);
    }
    assert!(run_canned(s, b"x")
        .0
        .unwrap_err()
        .message()
        .contains("1 MiB"));
    let mut s = Vec::new();
    let head = literal_block(&[(":status", "200")]);
    put_ending_headers(&mut s, &head);
    assert!(run_canned(s, b"x")
        .0
        .unwrap_err()
        .message()
        .contains("grpc-status"));
}

/// An HTTP/2 server of the h2 crate (the one slurmctld's gRPC stack uses:
/// Huffman-coded headers, its own flow control) answering one call with
/// `answer(request message)`; returns its address.
/// What the test server answers: a reply message, or a gRPC code and
/// message.
type Answer = fn(Vec<u8>) -> Result<Vec<u8>, (u32, &'static str)>;

fn h2_server(answer: Answer) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let (sock, _) = listener.accept().await.unwrap();
            let mut conn = h2::server::handshake(sock).await.unwrap();
            let Some(Ok((req, mut respond))) = conn.accept().await else {
                return;
            };
            tokio::spawn(async move { while conn.accept().await.is_some() {} });
            assert_eq!(req.headers()["content-type"], "application/grpc");
            assert_eq!(req.headers()["x-auth"], "token");
            let mut body = req.into_body();
            let mut bytes = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                body.flow_control().release_capacity(chunk.len()).unwrap();
                bytes.extend_from_slice(&chunk);
            }
            assert_eq!(bytes[0], 0);
            let message = bytes[5..].to_vec();
            let head = tonic::codegen::http::Response::builder()
                .status(200)
                .header("content-type", "application/grpc")
                .body(())
                .unwrap();
            let mut trailers = HeaderMap::new();
            match answer(message) {
                Ok(reply) => {
                    let mut send = respond.send_response(head, false).unwrap();
                    send.reserve_capacity(reply.len() + 5);
                    send.send_data(framed(&reply).into(), false).unwrap();
                    trailers.insert("grpc-status", HeaderValue::from_static("0"));
                    send.send_trailers(trailers).unwrap();
                }
                Err((code, text)) => {
                    let mut send = respond.send_response(head, false).unwrap();
                    trailers.insert("grpc-status", HeaderValue::from(code));
                    trailers.insert("grpc-message", HeaderValue::from_static(text));
                    trailers.insert("x-slurm-errno", HeaderValue::from_static("2011"));
                    send.send_trailers(trailers).unwrap();
                }
            }
            // Until the client is done with the connection.
            std::future::pending::<()>().await;
        });
    });
    addr
}

fn call_h2(addr: std::net::SocketAddr, message: &[u8]) -> Result<Vec<u8>, Status> {
    let mut md = HeaderMap::new();
    md.insert("x-auth", HeaderValue::from_static("token"));
    call(
        &addr.ip().to_string(),
        addr.port(),
        Duration::from_secs(10),
        &Request {
            authority: &addr.to_string(),
            path: "/p.S/M",
            metadata: &md,
            message,
        },
    )
}

#[test]
fn against_the_h2_server_a_reply_comes_back() {
    let addr = h2_server(|m| Ok([b"got ".as_slice(), &m].concat()));
    assert_eq!(call_h2(addr, b"job").unwrap(), b"got job");
}

#[test]
fn against_the_h2_server_large_requests_and_replies_cross_the_windows() {
    // 300 kB each way: several windows of 65,535 bytes and many frames.
    let addr = h2_server(|m| Ok(m.iter().rev().copied().collect()));
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let reply = call_h2(addr, &big).unwrap();
    assert_eq!(reply.len(), big.len());
    assert!(reply.iter().rev().eq(big.iter()));
}

#[test]
fn against_the_h2_server_an_error_keeps_its_huffman_coded_texts() {
    let addr = h2_server(|_| Err((9, "Requested partition configuration not available now")));
    let err = call_h2(addr, b"x").unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        err.message(),
        "Requested partition configuration not available now"
    );
    assert_eq!(err.metadata().get("x-slurm-errno").unwrap(), "2011");
}

#[test]
fn names_and_addresses_resolve() {
    let t = Duration::from_secs(5);
    assert_eq!(
        resolve("127.0.0.1", 7, t).unwrap(),
        ["127.0.0.1:7".parse().unwrap()]
    );
    assert_eq!(resolve("::1", 7, t).unwrap(), ["[::1]:7".parse().unwrap()]);
    assert!(resolve("localhost", 7, t)
        .unwrap()
        .iter()
        .all(|a| a.ip().is_loopback() && a.port() == 7));
    let err = resolve("no-such-host.invalid", 7, t).unwrap_err();
    assert!(err.message().starts_with("dns error"), "{err}");
}

#[test]
fn nothing_listening_is_a_connection_error_and_silence_a_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let md = HeaderMap::new();
    let req = Request {
        authority: "x",
        path: "/p.S/M",
        metadata: &md,
        message: b"",
    };
    let err = call("127.0.0.1", addr.port(), Duration::from_secs(5), &req).unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);
    assert!(err.message().contains("tcp connect error"), "{err}");
    // Accepted (by the kernel) and never answered.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let err = call("127.0.0.1", port, Duration::from_millis(200), &req).unwrap_err();
    assert_eq!(err.code(), tonic::Code::DeadlineExceeded);
}

proptest::proptest! {
    /// Whatever a server sends, the call ends with a reply or a status,
    /// never a panic: random bytes, and random frames around a valid
    /// answer's.
    #[test]
    fn garbage_from_the_server_is_an_error_not_a_panic(
        noise in proptest::collection::vec(proptest::num::u8::ANY, 0..3000),
        kinds in proptest::collection::vec((0u8..12, proptest::num::u8::ANY, 0u32..4), 0..8),
    ) {
        let _ = run_canned(noise.clone(), b"x");
        let mut s = Vec::new();
        for (i, (k, flags, stream)) in kinds.iter().enumerate() {
            let from = (i * 37) % noise.len().max(1);
            let to = noise.len().min(from + 40);
            put_frame(&mut s, *k, *flags, *stream, noise.get(from..to).unwrap_or(&[]));
        }
        s.extend_from_slice(&ok_answer(b"reply"));
        let _ = run_canned(s, b"x");
    }
}
