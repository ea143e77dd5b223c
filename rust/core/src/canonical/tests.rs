//! The tape input agrees with the reference (`Value`) input whenever it does not give up.

use super::*;

/// Whether the tape walk succeeded; when it did, it must agree with the reference walk.
fn agrees(doc: &[u8]) -> bool {
    let want = canonical_json_reference_bytes(doc, Kind::PodTemplateSpec);
    let mut got = Vec::new();
    match tape::walk_text(doc, Kind::PodTemplateSpec, &mut got) {
        Ok(_) => {
            let fnv = tape::walk_text(doc, Kind::PodTemplateSpec, Fnv::new()).unwrap();
            assert_eq!(fnv.finish(), crate::fnv::fnv1a_64(&got));
            assert_eq!(
                Ok(String::from_utf8_lossy(&got).into_owned()),
                want.map(|w| String::from_utf8_lossy(&w).into_owned()),
                "{}",
                String::from_utf8_lossy(doc)
            );
            true
        }
        Err(_) => false,
    }
}

#[test]
fn golden_inputs_and_fixtures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut taken = 0;
    for dir in ["testdata/hash-golden", "bench/hash"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                taken += usize::from(agrees(&std::fs::read(&path).unwrap()));
            }
        }
    }
    assert!(taken > 10, "{taken}");
}

#[test]
fn tricky_documents() {
    let taken = [
        r#"{"spec":{"containers":[{"name":"a\u00e9\ud83d\ude42\n\"\\\/","image":"x"}]}}"#,
        r#" { "x" : [ 1 , -0 , -0.0 , 1e2 , 1E-7 , 12345678901234567890123 , 0.1 ] } "#,
        r#"{"x":{"b":null,"a":[],"c":{}},"metadata":{"labels":{"a":null}}}"#,
        r#"{"spec":{"containers":[{"name":"b","ports":[{"containerPort":80},{"containerPort":80.5},{"containerPort":8,"protocol":"UDP"}]},{"name":"a"}]}}"#,
        r#"{"spec":{"overhead":{"cpu":"100m","memory":1024,"x":0.5}}}"#,
        r#"{"metadata":{"finalizers":["b","a","b"]}}"#,
        r#"{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":1e3}}}]}}"#,
        r#"{"metadata":{"finalizers":["b\"","a\u0001","\u00e9"]},"x":["\t",-0.5,1e-7]}"#,
    ];
    for doc in taken {
        assert!(agrees(doc.as_bytes()), "{doc}");
    }
    let given_up = [
        "[]",
        "{",
        r#"{"a":1,"a":null}"#,
        r#"{"a":"\ud800"}"#,
        r#"{"a":01}"#,
        r#"{"a":NaN}"#,
        r#"{"a":1e400}"#,
        r#"{"spec":{"containers":{}}}"#,
        r#"{"spec":{"containers":[{"name":"a"},{"name":"a"}]}}"#,
        r#"{"spec":{"overhead":{"cpu":"abc"}}}"#,
        "{\"a\":\"\t\"}",
        "{} x",
    ];
    for doc in given_up {
        assert!(!agrees(doc.as_bytes()), "{doc}");
    }
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(120), "]".repeat(120));
    assert!(!agrees(deep.as_bytes()));
    let ok = format!("{{\"a\":{}1{}}}", "[".repeat(90), "]".repeat(90));
    assert!(agrees(ok.as_bytes()));
}

#[test]
fn reference_errors_in_order() {
    // An invalid element is reported before a duplicate key, whatever the key order.
    let doc = br#"{"spec":{"containers":[{"name":"b"},{"name":"b"},{"name":"a","ports":{}}]}}"#;
    let err = canonical_json_bytes(doc, Kind::PodTemplateSpec).unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec.containers[2].ports: expected a list, got object"
    );
    let doc = br#"{"spec":{"containers":[{"name":"b"},{"name":"a"},{"name":"b"},{"name":"a"}]}}"#;
    let err = canonical_json_bytes(doc, Kind::PodTemplateSpec).unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec.containers[2]: duplicate key name=\"b\""
    );
}
