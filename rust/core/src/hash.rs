//! The template hash (docs/hashing.md, "The hash").
//!
//! `template_hash` = FNV-1a 64 (`fnv`) over the canonical bytes (`canonical`), written in
//! decimal and passed through Kubernetes' `SafeEncodeString` so it is label-safe and
//! vowel-free. The bytes are hashed as the walker writes them: they are never stored.

use serde_json::Value;

use crate::canonical::{self, Fnv};
use crate::error::CoreError;
pub use crate::fnv::{fnv1a_32, fnv1a_64, safe_encode};
use crate::schema::Kind;

/// Bumped on any change to the canonical form or the hash; recorded next to every hash.
pub const HASH_ALGORITHM_VERSION: u32 = 1;

/// The hash of already canonical bytes.
pub fn hash_canonical(canonical: &[u8]) -> String {
    hash_of_fnv(fnv1a_64(canonical))
}

/// The hash given the FNV-1a 64 of the canonical bytes.
pub fn hash_of_fnv(fnv: u64) -> String {
    safe_encode(&fnv.to_string())
}

/// The template hash of a document given as a JSON value.
pub fn template_hash(doc: &Value, kind: Kind) -> Result<String, CoreError> {
    let fnv = canonical::write_value(doc, kind, Fnv::new())?;
    Ok(hash_of_fnv(fnv.finish()))
}

/// The template hash of a document given as JSON text.
pub fn template_hash_bytes(doc: &[u8], kind: Kind) -> Result<String, CoreError> {
    Ok(hash_of_fnv(canonical::canonical_fnv1a_64(doc, kind)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fnv::SAFE_ALPHABET;

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

    #[test]
    fn value_and_text_agree() {
        let text =
            br#"{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"1000m"}}}]}}"#;
        let value = canonical::parse(text).unwrap();
        assert_eq!(
            template_hash(&value, Kind::PodTemplateSpec).unwrap(),
            template_hash_bytes(text, Kind::PodTemplateSpec).unwrap()
        );
    }
}
