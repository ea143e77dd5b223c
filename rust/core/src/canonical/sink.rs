//! Where the canonical bytes go: a buffer, or straight into FNV-1a 64 ([`Fnv`]).
//!
//! The walker passes its sink by value and gets it back, so the hash state stays in a
//! register: the hash's byte-serial multiply chain then runs alongside the walk, fed in small
//! pieces (no buffer, no store and reload of the state between pieces).

use crate::fnv::{fnv1a_64_from, FNV64_OFFSET, FNV64_PRIME};

/// A consumer of canonical bytes.
pub trait Sink {
    fn byte(&mut self, b: u8);
    fn bytes(&mut self, s: &[u8]);
    /// Run `f`, which writes to a `Vec<u8>`, and take what it wrote (`buf` is a spare).
    fn via_vec<R>(&mut self, buf: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> R) -> R;
}

impl Sink for &mut Vec<u8> {
    #[inline]
    fn byte(&mut self, b: u8) {
        self.push(b);
    }

    #[inline]
    fn bytes(&mut self, s: &[u8]) {
        self.extend_from_slice(s);
    }

    #[inline]
    fn via_vec<R>(&mut self, _: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        f(self)
    }
}

/// FNV-1a 64 of the bytes written so far.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Fnv {
    /// The hash of no bytes.
    pub fn new() -> Self {
        Fnv(FNV64_OFFSET)
    }

    /// The hash of everything written.
    pub fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv::new()
    }
}

impl Sink for Fnv {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ u64::from(b)).wrapping_mul(FNV64_PRIME);
    }

    #[inline(always)]
    fn bytes(&mut self, s: &[u8]) {
        self.0 = fnv1a_64_from(self.0, s);
    }

    #[inline]
    fn via_vec<R>(&mut self, buf: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        buf.clear();
        let r = f(buf);
        self.bytes(buf);
        r
    }
}
