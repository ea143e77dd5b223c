//! `cargo run --release -p cliques-core --example hashloop [FILE.json ...] [--secs N]`: the
//! template hash of each file (bench/hash/*.json by default) in a tight loop, median ns per
//! call over several batches. Meant for profiling (`perf record`) the bytes path; with
//! `--iters N`, exactly N calls per file and no timing (for `perf stat`).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cliques_core::{template_hash_bytes, Kind};

fn main() {
    let mut files = Vec::new();
    let mut secs = 1.0f64;
    let mut iters = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--secs" {
            secs = args.next().and_then(|s| s.parse().ok()).unwrap_or(secs);
        } else if arg == "--iters" {
            iters = args.next().and_then(|s| s.parse::<u32>().ok());
        } else {
            files.push(PathBuf::from(arg));
        }
    }
    if files.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/hash");
        files = vec![dir.join("nginx.json"), dir.join("inference.json")];
    }
    for path in files {
        let raw = std::fs::read(&path).unwrap();
        let once = || black_box(template_hash_bytes(black_box(&raw), Kind::PodTemplateSpec));
        once().unwrap();
        if let Some(n) = iters {
            for _ in 0..n {
                once().unwrap();
            }
            continue;
        }
        let start = Instant::now();
        let mut n = 0u32;
        while start.elapsed() < Duration::from_millis(50) {
            once().unwrap();
            n += 1;
        }
        // Many short batches: the low ones are the least disturbed by other load.
        let batches: u32 = 101;
        let per_batch = ((f64::from(n) * secs * 20.0) / f64::from(batches)).max(1.0) as u32;
        let mut samples: Vec<f64> = (0..batches)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..per_batch {
                    once().unwrap();
                }
                t.elapsed().as_nanos() as f64 / f64::from(per_batch)
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        println!(
            "{:<20} {:>6} bytes {:>8.0} ns/op median, {:.0} p10, {:.0} min",
            path.file_name().unwrap().to_string_lossy(),
            raw.len(),
            samples[samples.len() / 2],
            samples[samples.len() / 10],
            samples[0]
        );
    }
}
