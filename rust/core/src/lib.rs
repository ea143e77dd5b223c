//! cliques core: pure Rust, no Python. The `cliques._core` extension (rust/py) wraps it.

/// FNV-1a, 64 bit.
pub fn fnv1a_64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
