//! FNV-1a (32 and 64 bit) and Kubernetes' `SafeEncodeString`: the leaf the hashing builds on.
//!
//! Nothing here knows about JSON or templates; `canonical` feeds FNV-1a 64 through its
//! [`Fnv`](crate::canonical::Fnv) sink and `hash` turns the result into a label-safe string.

/// The alphabet of `k8s.io/apimachinery/pkg/util/rand.SafeEncodeString`.
pub const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// The FNV-1a 64 offset basis: the hash of no bytes.
pub const FNV64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The FNV-1a 64 prime.
pub const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 32 bit.
pub fn fnv1a_32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// FNV-1a, 64 bit.
pub fn fnv1a_64(data: &[u8]) -> u64 {
    fnv1a_64_from(FNV64_OFFSET, data)
}

/// FNV-1a 64 continued: the hash of `a ++ data` given `h` = the hash of `a`.
#[inline]
pub fn fnv1a_64_from(mut h: u64, data: &[u8]) -> u64 {
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV64_PRIME);
    }
    h
}

/// `SafeEncodeString`: every byte `b` becomes `alphabet[b % 27]`.
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_reference_vectors() {
        // From the FNV reference test suite (http://www.isthe.com/chongo/tech/comp/fnv/).
        let cases: &[(&[u8], u32, u64)] = &[
            (b"", 0x811c9dc5, 0xcbf29ce484222325),
            (b"a", 0xe40c292c, 0xaf63dc4c8601ec8c),
            (b"b", 0xe70c2de5, 0xaf63df4c8601f1a5),
            (b"foobar", 0xbf9cf968, 0x85944171f73967e8),
            (b"chongo was here!\n", 0xd49930d5, 0x46810940eff5f915),
        ];
        for (data, h32, h64) in cases {
            assert_eq!(fnv1a_32(data), *h32, "{data:?}");
            assert_eq!(fnv1a_64(data), *h64, "{data:?}");
        }
    }

    #[test]
    fn safe_encoding_of_digits() {
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        assert_eq!(safe_encode(""), "");
    }
}
