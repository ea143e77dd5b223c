//! Golden vectors (testdata/hash-golden): every `NAME.json` has the kind, hash and canonical
//! SHA-256 that `expected.json` records; `BASE--VARIANT.json` hashes like `BASE.json`; distinct
//! bases hash differently.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use cliques_core::{canonical_json_bytes, hash, Kind};
use serde_json::Value;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/hash-golden")
}

struct Vector {
    name: String,
    kind: Kind,
    hash: String,
    sha256: Option<String>,
}

fn vectors() -> Vec<Vector> {
    let text = fs::read(golden_dir().join("expected.json")).expect("expected.json");
    let expected: BTreeMap<String, Value> = serde_json::from_slice(&text).unwrap();
    expected
        .into_iter()
        .map(|(name, v)| Vector {
            kind: v["kind"].as_str().unwrap().parse().unwrap(),
            hash: v["hash"].as_str().unwrap().to_string(),
            sha256: v
                .get("canonical_sha256")
                .and_then(Value::as_str)
                .map(String::from),
            name,
        })
        .collect()
}

#[test]
fn every_vector_matches() {
    let vectors = vectors();
    assert!(vectors.len() >= 15, "only {} golden vectors", vectors.len());
    for v in &vectors {
        let input = fs::read(golden_dir().join(&v.name)).unwrap();
        let canonical =
            canonical_json_bytes(&input, v.kind).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(hash::hash_canonical(&canonical), v.hash, "{}", v.name);
        if let Some(sha) = &v.sha256 {
            assert_eq!(&hex(&sha256(&canonical)), sha, "{}", v.name);
        }
        // Canonical bytes are a fixed point.
        assert_eq!(canonical_json_bytes(&canonical, v.kind).unwrap(), canonical);
    }
}

#[test]
fn every_input_file_has_a_vector() {
    let names: Vec<String> = vectors().into_iter().map(|v| v.name).collect();
    for entry in fs::read_dir(golden_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".json") && name != "expected.json" {
            assert!(names.contains(&name), "{name} is not in expected.json");
        }
    }
}

#[test]
fn variants_hash_like_their_base_and_bases_differ() {
    let vectors = vectors();
    let by_name: BTreeMap<&str, &Vector> = vectors.iter().map(|v| (v.name.as_str(), v)).collect();
    let mut variants = 0;
    for v in &vectors {
        if let Some((base, _)) = v.name.split_once("--") {
            let original = by_name[format!("{base}.json").as_str()];
            assert_eq!(v.hash, original.hash, "{} vs {}", v.name, original.name);
            variants += 1;
        }
    }
    assert!(variants >= 5, "only {variants} variants");
    let bases: Vec<&Vector> = vectors.iter().filter(|v| !v.name.contains("--")).collect();
    for (i, a) in bases.iter().enumerate() {
        for b in &bases[i + 1..] {
            assert_ne!(a.hash, b.hash, "{} and {}", a.name, b.name);
        }
    }
}

#[test]
fn sha256_reference_vectors() {
    assert_eq!(
        hex(&sha256(b"")),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        hex(&sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_eq!(
        hex(&sha256(long)),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (FIPS 180-4), enough for checking the recorded digests without a dependency.
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (slot, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *slot = slot.wrapping_add(v);
        }
    }
    let mut out = [0u8; 32];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}
