//! `cargo bench -p cliques-core`: time of the canonical form and hash of each golden vector
//! (testdata/hash-golden), from JSON bytes and from a parsed value. Dependency-free: a warm-up,
//! then the median of several timed batches, printed as a table.

use std::fs;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cliques_core::{canonical_json, canonical_json_bytes, hash, Kind};
use serde_json::Value;

fn median_per_call(mut f: impl FnMut()) -> Duration {
    for _ in 0..50 {
        f();
    }
    let batch = 200;
    let mut samples: Vec<Duration> = (0..9)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                f();
            }
            start.elapsed() / batch
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/hash-golden");
    let expected: serde_json::Map<String, Value> =
        serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
    println!(
        "{:<32} {:>8} {:>14} {:>14}",
        "vector", "bytes", "from bytes", "from value"
    );
    for (name, want) in &expected {
        if name.contains("--") {
            continue;
        }
        let kind: Kind = want["kind"].as_str().unwrap().parse().unwrap();
        let raw = fs::read(dir.join(name)).unwrap();
        let value: Value = serde_json::from_slice(&raw).unwrap();
        let from_bytes = median_per_call(|| {
            let c = canonical_json_bytes(black_box(&raw), kind).unwrap();
            black_box(hash::hash_canonical(&c));
        });
        let from_value = median_per_call(|| {
            let c = canonical_json(black_box(&value), kind).unwrap();
            black_box(hash::hash_canonical(&c));
        });
        println!(
            "{name:<32} {:>8} {:>12.1}us {:>12.1}us",
            raw.len(),
            from_bytes.as_secs_f64() * 1e6,
            from_value.as_secs_f64() * 1e6
        );
    }
}
