//! The canonical form against the rules of docs/hashing.md, one table per rule.

use cliques_core::canonical::{canonical_json, canonical_json_bytes, MAX_DEPTH};
use cliques_core::{ErrorKind, Kind};
use serde_json::{json, Value};

fn canon(doc: &Value) -> String {
    canon_as(doc, Kind::PodTemplateSpec)
}

fn canon_as(doc: &Value, kind: Kind) -> String {
    let bytes = canonical_json(doc, kind).unwrap_or_else(|e| panic!("{doc}: {e}"));
    String::from_utf8(bytes).unwrap()
}

fn error(doc: &Value, kind: Kind) -> String {
    canonical_json(doc, kind)
        .expect_err(&doc.to_string())
        .to_string()
}

fn container(fields: Value) -> Value {
    let mut c = json!({"name": "main"});
    c.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    json!({"spec": {"containers": [c]}})
}

#[test]
fn objects_sorted_nulls_and_empties() {
    let cases = [
        (json!({}), "{}"),
        (
            json!({"spec": {}, "metadata": {}}),
            r#"{"metadata":{},"spec":{}}"#,
        ),
        (json!({"spec": null}), "{}"),
        // Unknown fields: keys sorted, nulls and empty lists dropped, empty objects kept.
        (
            json!({"zz": {"b": 1, "a": null, "c": [], "d": {}}, "aa": [3, 1, 2]}),
            r#"{"aa":[3,1,2],"zz":{"b":1,"d":{}}}"#,
        ),
        // Keys by UTF-8 bytes: "Z" < "a" < "é".
        (
            json!({"x": {"é": 1, "a": 2, "Z": 3}}),
            r#"{"x":{"Z":3,"a":2,"é":1}}"#,
        ),
        // Empty maps dropped (also when all values are null); empty structs kept.
        (
            json!({"metadata": {"labels": {}, "annotations": {"a": null}},
                   "spec": {"securityContext": {}, "nodeSelector": {},
                            "volumes": [{"name": "v", "emptyDir": {}}]}}),
            r#"{"metadata":{},"spec":{"securityContext":{},"volumes":[{"emptyDir":{},"name":"v"}]}}"#,
        ),
        (
            json!({"spec": {"securityContext": {"runAsUser": null}}}),
            r#"{"spec":{"securityContext":{}}}"#,
        ),
        // Empty lists dropped whatever their type.
        (
            json!({"spec": {"containers": [], "tolerations": [], "initContainers": []},
                   "metadata": {"finalizers": []}}),
            r#"{"metadata":{},"spec":{}}"#,
        ),
        // Positions in lists are kept: null, [] and {} elements stay.
        (
            json!({"x": [null, [], {}, {"a": null}]}),
            r#"{"x":[null,[],{},{}]}"#,
        ),
    ];
    for (doc, want) in cases {
        assert_eq!(canon(&doc), want, "{doc}");
    }
}

#[test]
fn map_lists_sorted_by_key() {
    let doc = json!({"spec": {"containers": [
        {"name": "b", "image": "x"},
        {"name": "a", "image": "y"},
        {"name": "A"},
    ]}});
    assert_eq!(
        canon(&doc),
        r#"{"spec":{"containers":[{"name":"A"},{"image":"y","name":"a"},{"image":"x","name":"b"}]}}"#
    );
    // Ports: (containerPort, protocol) with protocol defaulting to TCP; numbers before
    // strings, numbers by value; the default is not written.
    let ports = json!([
        {"containerPort": 8080, "protocol": "UDP"},
        {"containerPort": 8080},
        {"containerPort": 443.0, "protocol": "SCTP"},
        {"containerPort": "9000"},
        {"containerPort": 53, "protocol": "TCP", "name": "dns"},
    ]);
    assert_eq!(
        canon(&container(json!({"ports": ports}))),
        concat!(
            r#"{"spec":{"containers":[{"name":"main","#,
            r#""ports":[{"containerPort":53,"name":"dns","protocol":"TCP"},"#,
            r#"{"containerPort":443,"protocol":"SCTP"},{"containerPort":8080},"#,
            r#"{"containerPort":8080,"protocol":"UDP"},{"containerPort":"9000"}]}]}}"#
        )
    );
    // A missing key counts as its default or "": sorts first among strings.
    let volumes = json!({"spec": {"volumes": [{"name": "b"}, {"emptyDir": {}}]}});
    assert_eq!(
        canon(&volumes),
        r#"{"spec":{"volumes":[{"emptyDir":{}},{"name":"b"}]}}"#
    );
    // Multi-key string tuples compare key by key.
    let spread = json!({"spec": {"topologySpreadConstraints": [
        {"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1},
        {"topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 2},
        {"topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 3},
    ]}});
    let out = canon(&spread);
    let skews: Vec<usize> = ["\"maxSkew\":3", "\"maxSkew\":2", "\"maxSkew\":1"]
        .iter()
        .map(|s| out.find(s).unwrap())
        .collect();
    assert!(skews.windows(2).all(|w| w[0] < w[1]), "{out}");
}

#[test]
fn map_list_duplicates() {
    let cases = [
        (
            json!({"spec": {"containers": [{"name": "main"}, {"name": "main"}]}}),
            r#"spec.containers[1]: duplicate key name="main""#,
        ),
        (
            json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}, {"name": "a"}, {"name": "b"}]}}),
            r#"spec.containers[2]: duplicate key name="a""#,
        ),
        (
            json!({"spec": {"containers": [{"name": "x"}, {"name": "y"}, {"name": "x"}]}}),
            r#"spec.containers[2]: duplicate key name="x""#,
        ),
        (
            // The default makes them equal; 80.0 equals 80.
            container(
                json!({"ports": [{"containerPort": 80}, {"containerPort": 80.0, "protocol": "TCP"}]}),
            ),
            r#"spec.containers[0].ports[1]: duplicate key containerPort=80, protocol="TCP""#,
        ),
        (
            json!({"spec": {"volumes": [{"emptyDir": {}}, {"name": ""}]}}),
            r#"spec.volumes[1]: duplicate key name="""#,
        ),
    ];
    for (doc, want) in cases {
        assert_eq!(error(&doc, Kind::PodTemplateSpec), want, "{doc}");
    }
    // Ordered lists are not checked for duplicates.
    let env = container(json!({"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}));
    assert!(canonical_json(&env, Kind::PodTemplateSpec).is_ok());
}

#[test]
fn ordered_atomic_and_set_lists() {
    let doc = json!({
        "metadata": {"finalizers": ["b", "a", "c", "a"]},
        "spec": {
            "initContainers": [{"name": "z"}, {"name": "a"}],
            "tolerations": [{"key": "b"}, {"key": "a"}],
            "readinessGates": [{"conditionType": "z"}, {"conditionType": "a"}],
            "containers": [{"name": "c", "args": ["z", "a"], "command": ["b", "a"],
                            "env": [{"name": "Z", "value": "1"}, {"name": "A", "value": "$(Z)"}],
                            "envFrom": [{"prefix": "z"}, {"prefix": "a"}]}],
        },
    });
    assert_eq!(
        canon(&doc),
        concat!(
            r#"{"metadata":{"finalizers":["a","a","b","c"]},"spec":{"containers":[{"args":["z","a"],"#,
            r#""command":["b","a"],"env":[{"name":"Z","value":"1"},{"name":"A","value":"$(Z)"}],"#,
            r#""envFrom":[{"prefix":"z"},{"prefix":"a"}],"name":"c"}],"#,
            r#""initContainers":[{"name":"z"},{"name":"a"}],"#,
            r#""readinessGates":[{"conditionType":"z"},{"conditionType":"a"}],"#,
            r#""tolerations":[{"key":"b"},{"key":"a"}]}}"#
        )
    );
}

#[test]
fn quantities() {
    let cases: &[(&[Value], &str)] = &[
        (
            &[
                json!("1"),
                json!("1000m"),
                json!(1),
                json!("1e0"),
                json!("+1"),
                json!(1.0),
            ],
            "1",
        ),
        (
            &[
                json!("1Gi"),
                json!("1024Mi"),
                json!("1073741824"),
                json!(1073741824),
            ],
            "1073741824",
        ),
        (
            &[json!("0.5"), json!("500m"), json!(0.5), json!("5e-1")],
            "0.5",
        ),
        (
            &[
                json!("0"),
                json!("-0"),
                json!("0Gi"),
                json!(0),
                json!("0e5"),
            ],
            "0",
        ),
        (
            &[json!("0.1n"), json!("1e-100"), json!(1e-10)],
            "0.000000001",
        ),
        (&[json!("-1.5")], "-1.5"),
    ];
    for (spellings, want) in cases {
        for q in *spellings {
            let doc = container(json!({"resources": {"limits": {"cpu": q}}}));
            let out = canon(&doc);
            assert!(
                out.contains(&format!("\"limits\":{{\"cpu\":\"{want}\"}}")),
                "{q}: {out}"
            );
        }
    }
    // Quantities in overhead (a map) and in PodSpec-level resources.
    let doc = json!({"overhead": {"memory": "1Ki"}, "resources": {"requests": {"cpu": "2k"}}});
    assert_eq!(
        canon_as(&doc, Kind::PodSpec),
        r#"{"overhead":{"memory":"1024"},"resources":{"requests":{"cpu":"2000"}}}"#
    );
    // A number literal with a fraction or exponent is a double: parsed from its shortest
    // round-trip form, as Python's `json` would give it.
    let bytes = br#"{"spec":{"overhead":{"cpu":0.10000000000000000001,"x":1e-7,"y":12}}}"#;
    let out = canonical_json_bytes(bytes, Kind::PodTemplateSpec).unwrap();
    assert_eq!(
        out,
        br#"{"spec":{"overhead":{"cpu":"0.1","x":"0.0000001","y":"12"}}}"#
    );
}

#[test]
fn invalid_quantities() {
    for bad in [
        json!("abc"),
        json!(""),
        json!(" 1"),
        json!("1KB"),
        json!("1e101"),
        json!("."),
        json!("-"),
        json!(true),
        json!({}),
        json!([1]),
    ] {
        let doc = container(json!({"resources": {"limits": {"cpu": bad}}}));
        let err = error(&doc, Kind::PodTemplateSpec);
        assert!(
            err.starts_with("spec.containers[0].resources.limits.cpu: invalid quantity "),
            "{err}"
        );
    }
    let doc = container(json!({"resources": {"limits": {"cpu": "abc"}}}));
    assert_eq!(
        error(&doc, Kind::PodTemplateSpec),
        r#"spec.containers[0].resources.limits.cpu: invalid quantity "abc""#
    );
    let doc = container(json!({"resources": {"limits": {"cpu": "1e-101"}}}));
    assert_eq!(
        error(&doc, Kind::PodTemplateSpec),
        r#"spec.containers[0].resources.limits.cpu: invalid quantity "1e-101": exponent out of range"#
    );
}

#[test]
fn numbers_and_strings() {
    let doc = json!({"spec": {"terminationGracePeriodSeconds": 30.0,
                              "x": [0.1, 1e-7, -2.5, 1e21, 3, -0.0, true, null, "s"]}});
    assert_eq!(
        canon(&doc),
        r#"{"spec":{"terminationGracePeriodSeconds":30,"x":[0.1,1e-07,-2.5,1000000000000000000000,3,0,true,null,"s"]}}"#
    );
    let doc = json!({"metadata": {"labels": {"a": "q\"b\\n\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}é/"}}});
    assert_eq!(
        canon(&doc),
        "{\"metadata\":{\"labels\":{\"a\":\"q\\\"b\\\\n\\n\\r\\t\\b\\f\\u0001\\u001f\u{7f}é/\"}}}"
    );
    let big = br#"{"x":123456789012345678901234567890}"#;
    assert_eq!(
        canonical_json_bytes(big, Kind::PodSpec).unwrap(),
        br#"{"x":123456789012345678901234567890}"#
    );
}

#[test]
fn type_mismatches_and_bad_documents() {
    let cases = [
        (
            json!([1]),
            Kind::PodSpec,
            "expected a JSON object at the top, got list",
        ),
        (
            json!("x"),
            Kind::PodSpec,
            "expected a JSON object at the top, got string",
        ),
        (
            json!({"spec": {"containers": {"name": "a"}}}),
            Kind::PodTemplateSpec,
            "spec.containers: expected a list, got object",
        ),
        (
            json!({"spec": {"securityContext": "yes"}}),
            Kind::PodTemplateSpec,
            "spec.securityContext: expected an object, got string",
        ),
        (
            json!({"metadata": {"labels": ["a"]}}),
            Kind::PodTemplateSpec,
            "metadata.labels: expected an object, got list",
        ),
        (
            json!({"containers": [{"name": true}]}),
            Kind::PodSpec,
            "containers[0].name: map-list key must be a string or a number, got boolean",
        ),
        (
            json!({"containers": [{"name": {}}]}),
            Kind::PodSpec,
            "containers[0].name: map-list key must be a string or a number, got object",
        ),
        (
            json!({"containers": [null]}),
            Kind::PodSpec,
            "containers[0]: expected an object, got null",
        ),
        (
            json!({"containers": [{"name": "a", "resources": {"requests": {"memory": "x"}}}]}),
            Kind::PodSpec,
            r#"containers[0].resources.requests.memory: invalid quantity "x""#,
        ),
    ];
    for (doc, kind, want) in cases {
        assert_eq!(error(&doc, kind), want, "{doc}");
        let err = canonical_json(&doc, kind).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Template, "{doc}");
    }
    for bad in [
        &b"{"[..],
        b"\xff",
        b"{\"a\":1}x",
        b"{\"a\":\"\\ud800\"}",
        b"{\"a\": NaN}",
    ] {
        let err = canonical_json_bytes(bad, Kind::PodSpec).unwrap_err();
        assert!(err.message.starts_with("invalid JSON"), "{err}");
        assert_eq!(err.kind, ErrorKind::Template, "{err}");
    }
    let err = canonical_json_bytes(b"{\"a\":1e400}", Kind::PodSpec).unwrap_err();
    assert_eq!(err.to_string(), "a: number out of range");
    assert_eq!(err.kind, ErrorKind::Template);
}

#[test]
fn errors_in_key_order_then_input_order() {
    // Members are walked in sorted key order, list elements in input order.
    let doc = json!({"spec": {"overhead": {"b": "x", "a": "y"},
                              "containers": [{"name": "a", "resources": {"limits": {"cpu": "?"}}},
                                             {"name": "a"}]}});
    assert_eq!(
        error(&doc, Kind::PodTemplateSpec),
        r#"spec.containers[0].resources.limits.cpu: invalid quantity "?""#
    );
}

#[test]
fn nesting_limit() {
    let mut deep = json!(1);
    for _ in 0..MAX_DEPTH {
        deep = json!([deep]);
    }
    assert!(canonical_json(&json!({ "x": deep.clone() }), Kind::PodSpec).is_err());
    let mut ok = json!(1);
    for _ in 0..MAX_DEPTH - 1 {
        ok = json!([ok]);
    }
    assert!(canonical_json(&json!({ "x": ok }), Kind::PodSpec).is_ok());
}

#[test]
fn scalars_take_any_json_value() {
    // A scalar field holding an object or list gets the generic rules.
    let doc = json!({"hostname": {"b": [], "a": null, "c": {}}, "subdomain": [2, 1]});
    assert_eq!(
        canon_as(&doc, Kind::PodSpec),
        r#"{"hostname":{"c":{}},"subdomain":[2,1]}"#
    );
    // A key field dropped as a member (null, []) counts as absent.
    let doc = json!({"containers": [{"name": []}, {"name": "a"}]});
    assert_eq!(
        canon_as(&doc, Kind::PodSpec),
        r#"{"containers":[{},{"name":"a"}]}"#
    );
}

#[test]
fn idempotent_and_forms_agree() {
    let doc = container(
        json!({"resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}},
                               "args": ["x"], "ports": [{"containerPort": 80}]}),
    );
    let once = canonical_json(&doc, Kind::PodTemplateSpec).unwrap();
    let text = serde_json::to_vec(&doc).unwrap();
    assert_eq!(
        canonical_json_bytes(&text, Kind::PodTemplateSpec).unwrap(),
        once
    );
    assert_eq!(
        canonical_json_bytes(&once, Kind::PodTemplateSpec).unwrap(),
        once
    );
}

#[test]
fn podspec_and_template_roots() {
    let spec = json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1000m"}}}]});
    let as_spec = canon_as(&spec, Kind::PodSpec);
    let as_template = canon(&json!({ "spec": spec }));
    assert_eq!(as_template, format!("{{\"spec\":{as_spec}}}"));
    // Under PodTemplateSpec, a bare PodSpec's fields are unknown: no quantity rule applies.
    let out = canon(&spec);
    assert!(out.contains("\"cpu\":\"1000m\""), "{out}");
}
