//! FNV-1a and the template hash (docs/hashing.md, "The hash").
//!
//! `template_hash` = FNV-1a 64 over the canonical bytes (`canonical`), written in decimal and
//! passed through Kubernetes' `SafeEncodeString` so it is label-safe and vowel-free.

use serde_json::Value;

use crate::canonical;
use crate::error::CoreError;
use crate::schema::Kind;

/// Bumped on any change to the canonical form or the hash; recorded next to every hash.
pub const HASH_ALGORITHM_VERSION: u32 = 1;

/// The alphabet of `k8s.io/apimachinery/pkg/util/rand.SafeEncodeString`.
const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// FNV-1a, 32 bit.
pub fn fnv1a_32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The FNV-1a 64 offset basis: the hash of no bytes.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bit.
pub fn fnv1a_64(data: &[u8]) -> u64 {
    fnv1a_64_from(FNV_OFFSET, data)
}

/// FNV-1a 64 continued: the hash of `a ++ data` given `h` = the hash of `a`.
#[inline]
pub(crate) fn fnv1a_64_from(mut h: u64, data: &[u8]) -> u64 {
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `SafeEncodeString`: every byte `b` becomes `alphabet[b % 27]`.
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()]))
        .collect()
}

/// The hash of already canonical bytes.
pub fn hash_canonical(canonical: &[u8]) -> String {
    hash_of_fnv(fnv1a_64(canonical))
}

/// The hash given the FNV-1a 64 of the canonical bytes.
fn hash_of_fnv(fnv: u64) -> String {
    safe_encode(&fnv.to_string())
}

/// The template hash of a document given as a JSON value.
pub fn template_hash(doc: &Value, kind: Kind) -> Result<String, CoreError> {
    Ok(hash_canonical(&canonical::canonical_json(doc, kind)?))
}

/// The template hash of a document given as JSON text.
///
/// The fast path hashes the canonical bytes as it writes them (no copy); when it gives up,
/// the reference walker decides, as in [`canonical::canonical_json_bytes`].
pub fn template_hash_bytes(doc: &[u8], kind: Kind) -> Result<String, CoreError> {
    match crate::fast::canonical_fnv1a_64(doc, kind) {
        Ok(fnv) => Ok(hash_of_fnv(fnv)),
        Err(_) => Ok(hash_canonical(&canonical::canonical_json_reference_bytes(
            doc, kind,
        )?)),
    }
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

    #[test]
    fn hash_shape() {
        for doc in [
            &b"{}"[..],
            b"{\"spec\":{}}",
            b"{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
        ] {
            let h = template_hash_bytes(doc, Kind::PodTemplateSpec).unwrap();
            assert!(!h.is_empty() && h.len() <= 20, "{h}");
            assert!(h.bytes().all(|b| SAFE_ALPHABET.contains(&b)), "{h}");
        }
        // {} canonicalizes to "{}".
        assert_eq!(
            template_hash_bytes(b"{}", Kind::PodSpec).unwrap(),
            safe_encode(&fnv1a_64(b"{}").to_string())
        );
    }
}
