//! Index allocation for the members of a gang: which indices to create and which to remove
//! when `desired` members are wanted and some indices are already in use.
//!
//! Pure planning (no I/O): `create` is every index in `0..desired` not in use, lowest first
//! or, given a seed, in a seeded random order (spreading churn without coordination);
//! `remove` is every index in use that is `>= desired`, highest first.

use crate::error::CoreError;

/// The largest `desired` accepted: guards against allocating a huge `create` list by mistake.
pub const MAX_DESIRED: u64 = 1 << 20;

/// What to do to reach the desired count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Indices to create, in the order to create them.
    pub create: Vec<u64>,
    /// Indices to remove, highest first.
    pub remove: Vec<u64>,
}

/// Plan the indices for `desired` members given those `in_use` (duplicates are ignored).
pub fn plan_indices(in_use: &[u64], desired: u64, seed: Option<u64>) -> Result<Plan, CoreError> {
    if desired > MAX_DESIRED {
        return Err(CoreError::new(
            "desired",
            format!("{desired} is over the limit of {MAX_DESIRED}"),
        ));
    }
    let n = desired as usize;
    let mut present = vec![false; n];
    let mut remove = Vec::new();
    for &i in in_use {
        if i < desired {
            present[i as usize] = true;
        } else {
            remove.push(i);
        }
    }
    remove.sort_unstable_by(|a, b| b.cmp(a));
    remove.dedup();
    let mut create: Vec<u64> = (0..desired).filter(|i| !present[*i as usize]).collect();
    if let Some(seed) = seed {
        shuffle(&mut create, seed);
    }
    Ok(Plan { create, remove })
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and good enough for spreading indices.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound > 0`), by Lemire's multiply-and-reject.
    fn below(&mut self, bound: u64) -> u64 {
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let m = u128::from(self.next()) * u128::from(bound);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// Fisher-Yates, from the end, driven by SplitMix64 seeded with `seed`.
fn shuffle(items: &mut [u64], seed: u64) {
    let mut rng = SplitMix64(seed);
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (in use, desired, create, remove)
    type Case = (&'static [u64], u64, &'static [u64], &'static [u64]);

    #[test]
    fn lowest_first() {
        let cases: &[Case] = &[
            (&[], 0, &[], &[]),
            (&[], 3, &[0, 1, 2], &[]),
            (&[0, 1, 2], 3, &[], &[]),
            (&[1], 3, &[0, 2], &[]),
            (&[0, 2, 5, 7], 4, &[1, 3], &[7, 5]),
            (&[3, 3, 9, 9, 0], 2, &[1], &[9, 3]),
            (&[4, 2, 0], 0, &[], &[4, 2, 0]),
            (&[10], 12, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11], &[]),
        ];
        for (in_use, desired, create, remove) in cases {
            let plan = plan_indices(in_use, *desired, None).unwrap();
            assert_eq!(plan.create, *create, "{in_use:?} -> {desired}");
            assert_eq!(plan.remove, *remove, "{in_use:?} -> {desired}");
        }
    }

    #[test]
    fn seeded_is_a_deterministic_permutation() {
        let in_use = [1, 4, 30];
        let a = plan_indices(&in_use, 20, Some(42)).unwrap();
        let b = plan_indices(&in_use, 20, Some(42)).unwrap();
        let c = plan_indices(&in_use, 20, Some(43)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.create, c.create);
        let mut sorted = a.create.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, plan_indices(&in_use, 20, None).unwrap().create);
        assert_eq!(a.remove, vec![30]);
    }

    #[test]
    fn seeded_spreads_the_first_pick() {
        let mut firsts = [0u32; 8];
        for seed in 0..8000 {
            firsts[plan_indices(&[], 8, Some(seed)).unwrap().create[0] as usize] += 1;
        }
        for count in firsts {
            assert!((800..1200).contains(&count), "{firsts:?}");
        }
    }

    #[test]
    fn limits() {
        assert!(plan_indices(&[], MAX_DESIRED, None).is_ok());
        let err = plan_indices(&[], MAX_DESIRED + 1, None).unwrap_err();
        assert_eq!(err.path, "desired");
        assert!(plan_indices(&[u64::MAX], 1, Some(u64::MAX)).unwrap().remove == [u64::MAX]);
    }
}
