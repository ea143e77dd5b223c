//! Buckets: a stable spread of objects over `n` shards by namespace and name.

use crate::error::CoreError;
use crate::hash::fnv1a_32;

/// The default number of buckets.
pub const DEFAULT_BUCKETS: u32 = 256;

/// `fnv1a_32("{namespace}/{name}") % buckets`; `buckets` must be positive.
pub fn bucket_of(namespace: &str, name: &str, buckets: u32) -> Result<u32, CoreError> {
    if buckets == 0 {
        return Err(CoreError::new("buckets", "must be positive"));
    }
    let mut key = Vec::with_capacity(namespace.len() + name.len() + 1);
    key.extend_from_slice(namespace.as_bytes());
    key.push(b'/');
    key.extend_from_slice(name.as_bytes());
    Ok(fnv1a_32(&key) % buckets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_fnv_of_the_key() {
        let cases = [
            ("default", "web", 256),
            ("default", "web", 1),
            ("kube-system", "coredns-0", 16),
            ("", "", 256),
            ("ns", "ü", 7),
        ];
        for (ns, name, n) in cases {
            let want = fnv1a_32(format!("{ns}/{name}").as_bytes()) % n;
            assert_eq!(bucket_of(ns, name, n).unwrap(), want);
            assert!(bucket_of(ns, name, n).unwrap() < n);
        }
        assert_eq!(bucket_of("default", "web", 1).unwrap(), 0);
    }

    #[test]
    fn known_values() {
        // FNV-1a 32 of the keys, computed independently (tests/reference_canonical.py).
        assert_eq!(fnv1a_32(b"a/b"), 0x3a8e75c1);
        assert_eq!(fnv1a_32(b"default/web"), 0x41d689bb);
        assert_eq!(bucket_of("a", "b", DEFAULT_BUCKETS).unwrap(), 0xc1);
        assert_eq!(bucket_of("default", "web", DEFAULT_BUCKETS).unwrap(), 187);
        assert_eq!(bucket_of("a", "b", u32::MAX).unwrap(), 0x3a8e75c1);
    }

    #[test]
    fn zero_buckets_is_an_error() {
        let err = bucket_of("a", "b", 0).unwrap_err();
        assert_eq!(err.to_string(), "buckets: must be positive");
    }

    #[test]
    fn spreads_evenly_enough() {
        let mut counts = [0u32; 16];
        for i in 0..16_000 {
            counts[bucket_of("team-a", &format!("clique-{i}"), 16).unwrap() as usize] += 1;
        }
        for c in counts {
            assert!((800..1200).contains(&c), "{counts:?}");
        }
    }
}
