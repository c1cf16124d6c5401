//! The byte-level pieces of the journal's event encoding and of the
//! snapshot: little-endian fixed-width integers, length-prefixed strings,
//! presence bytes. Each format adds its own composite fields in its module
//! (`impl Writer` blocks in `event.rs` and `snapshot.rs`); the primitives
//! live once, here, so both formats read and write them the same way.

use slurm_sched::Hold;

use super::event::DecodeError;

/// Appends encoded values to a buffer.
pub(super) struct Writer<'a>(pub(super) &'a mut Vec<u8>);

impl Writer<'_> {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn bool(&mut self, v: bool) {
        self.0.push(u8::from(v));
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A count or length, as a `u32` (saturating).
    pub(super) fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }
    pub(super) fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    /// `key=value` attributes (of a partition created or updated): a count,
    /// then each key and value.
    pub(super) fn attributes<K: AsRef<str>, V: AsRef<str>>(&mut self, pairs: &[(K, V)]) {
        self.len(pairs.len());
        for (k, v) in pairs {
            self.str(k.as_ref());
            self.str(v.as_ref());
        }
    }
    pub(super) fn opt_u32(&mut self, v: Option<u32>) {
        match v {
            Some(v) => {
                self.bool(true);
                self.u32(v);
            }
            None => self.bool(false),
        }
    }
    /// 0: none, 1: user hold, 2: admin hold.
    pub(super) fn hold(&mut self, h: Option<Hold>) {
        self.u8(match h {
            None => 0,
            Some(Hold::User) => 1,
            Some(Hold::Admin) => 2,
        });
    }
}

/// Reads encoded values from a record, naming what it was reading and
/// where when the bytes are short or wrong.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }
    /// Bytes not read yet.
    pub(super) fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }
    /// Fails unless every byte was read.
    pub(super) fn done(&self) -> Result<(), DecodeError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(DecodeError::Trailing { extra: self.left() })
        }
    }
    pub(super) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or(DecodeError::Truncated {
                offset: self.pos,
                what,
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }
    pub(super) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.arr::<1>(what)?[0])
    }
    pub(super) fn bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(DecodeError::Unknown {
                offset: at,
                what,
                value: u32::from(v),
            }),
        }
    }
    pub(super) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.arr(what)?))
    }
    pub(super) fn i32(&mut self, what: &'static str) -> Result<i32, DecodeError> {
        Ok(i32::from_le_bytes(self.arr(what)?))
    }
    pub(super) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.arr(what)?))
    }
    pub(super) fn i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.arr(what)?))
    }
    /// A length-prefixed byte string.
    pub(super) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.u32(what)?;
        self.take(usize::try_from(n).unwrap_or(usize::MAX), what)
    }
    pub(super) fn text(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let b = self.bytes(what)?;
        std::str::from_utf8(b).map_err(|_| DecodeError::Utf8 { offset: at, what })
    }
    pub(super) fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        self.text(what).map(str::to_owned)
    }
    /// What [`Writer::attributes`] wrote.
    pub(super) fn attributes(&mut self) -> Result<Vec<(String, String)>, DecodeError> {
        let n = self.u32("attribute count")?;
        let mut pairs = Vec::new();
        for _ in 0..n {
            pairs.push((self.string("attribute")?, self.string("attribute value")?));
        }
        Ok(pairs)
    }
    pub(super) fn opt_u32(&mut self, what: &'static str) -> Result<Option<u32>, DecodeError> {
        if self.bool(what)? {
            Ok(Some(self.u32(what)?))
        } else {
            Ok(None)
        }
    }
    pub(super) fn hold(&mut self) -> Result<Option<Hold>, DecodeError> {
        let at = self.pos;
        match self.u8("hold")? {
            0 => Ok(None),
            1 => Ok(Some(Hold::User)),
            2 => Ok(Some(Hold::Admin)),
            v => Err(DecodeError::Unknown {
                offset: at,
                what: "hold",
                value: u32::from(v),
            }),
        }
    }
}
