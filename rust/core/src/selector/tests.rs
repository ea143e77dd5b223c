use std::collections::HashMap;

use serde_json::json;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn parses_and_renders_canonically() {
    let cases = [
        ("", ""),
        ("   ", ""),
        ("a=b", "a=b"),
        ("a==b", "a=b"),
        (" a = b ", "a=b"),
        ("a!=b", "a!=b"),
        ("a=", "a="),
        ("a!=", "a!="),
        ("a", "a"),
        ("!a", "!a"),
        ("! a", "!a"),
        ("a in (x,y)", "a in (x,y)"),
        ("a in (y, x, y)", "a in (x,y)"),
        ("a in(x)", "a in (x)"),
        ("a notin (x)", "a notin (x)"),
        ("a in (,x)", "a in (,x)"),
        ("a in (x,)", "a in (,x)"),
        ("a in (,)", "a in (,)"),
        ("b=1,a=2", "a=2,b=1"),
        (
            "z,!y,x in (1),w notin (2),v!=3,u=4",
            "u=4,v!=3,w notin (2),x in (1),!y,z",
        ),
        ("app.kubernetes.io/name=web", "app.kubernetes.io/name=web"),
        ("a=in", "a=in"),
        ("a in (in,notin)", "a in (in,notin)"),
        ("a=b,a=b", "a=b"),
        ("a=b,a!=c", "a=b,a!=c"),
        ("a\t=\nb", "a=b"),
    ];
    for (input, want) in cases {
        let sel: Selector = input.parse().unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(sel.to_string(), want, "{input:?}");
        let again: Selector = want.parse().unwrap();
        assert_eq!(again, sel, "round trip of {want:?}");
    }
}

#[test]
fn refuses_bad_strings() {
    let cases = [
        ("a in ()", "expected a value"),
        ("a in x", "expected '('"),
        ("a in (x", "expected a value, ',' or ')'"),
        ("a in (x y)", "expected a value, ',' or ')'"),
        ("a,", "expected a key"),
        (",a", "expected a key"),
        ("a,,b", "expected a key"),
        ("=b", "expected a key"),
        ("!", "expected a key"),
        ("!a=b", "expected ',' or the end"),
        ("a b", "expected an operator"),
        ("a=b=c", "expected ',' or the end"),
        ("a=(b)", "expected a value"),
        ("a>1", "'>' is not supported"),
        ("a<1", "'<' is not supported"),
        ("in=a", "expected a key"),
        ("a=b c", "expected ',' or the end"),
        ("-a=b", "invalid label key"),
        ("a=-b", "invalid label value"),
        ("a/b/c", "at most one '/'"),
        ("a in (x,-y)", "invalid label value"),
    ];
    for (input, msg) in cases {
        let err = input.parse::<Selector>().unwrap_err();
        assert!(err.message.contains(msg), "{input:?}: {err}");
        assert!(err.message.starts_with("invalid label selector"), "{err}");
    }
}

#[test]
fn matching() {
    let web = labels(&[("app", "web"), ("tier", "frontend"), ("env", "")]);
    let cases = [
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("app!=db", true),
        ("app!=web", false),
        ("missing!=x", true),
        ("missing=x", false),
        ("app in (web,db)", true),
        ("app in (db)", false),
        ("missing in (x)", false),
        ("app notin (db)", true),
        ("app notin (web)", false),
        ("missing notin (x)", true),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("env=", true),
        ("env", true),
        ("env in (,x)", true),
        ("tier=frontend,app=web", true),
        ("tier=frontend,app=db", false),
    ];
    for (input, want) in cases {
        let sel: Selector = input.parse().unwrap();
        assert_eq!(sel.matches(&web), want, "{input:?}");
    }
    let none: HashMap<String, String> = HashMap::new();
    assert!("".parse::<Selector>().unwrap().matches(&none));
    assert!("!a,b notin (c),d!=e"
        .parse::<Selector>()
        .unwrap()
        .matches(&none));
    let pairs = [("app", "web")];
    assert!("app=web".parse::<Selector>().unwrap().matches(&pairs[..]));
}

#[test]
fn from_label_selector() {
    let cases = [
        (json!(null), ""),
        (json!({}), ""),
        (json!({"matchLabels": {}, "matchExpressions": []}), ""),
        (json!({"matchLabels": null}), ""),
        (json!({"matchLabels": {"b": "2", "a": "1"}}), "a=1,b=2"),
        (
            json!({"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["x"]},
                {"key": "gpu", "operator": "Exists", "values": []},
            ]}),
            "!canary,gpu,tier in (a,b),zone notin (x)",
        ),
        (
            json!({"matchLabels": {"app": "web"},
                   "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}),
            "app=web,app in (web)",
        ),
    ];
    for (spec, want) in cases {
        let sel = Selector::from_label_selector(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(sel.to_string(), want, "{spec}");
        assert_eq!(sel.is_empty(), want.is_empty());
    }
}

#[test]
fn refuses_bad_label_selectors() {
    let cases = [
        (json!([]), "", "must be an object"),
        (json!({"matchLabel": {}}), "matchLabel", "unknown field"),
        (
            json!({"matchLabels": []}),
            "matchLabels",
            "expected an object",
        ),
        (
            json!({"matchLabels": {"a": 1}}),
            "matchLabels.a",
            "expected a string",
        ),
        (
            json!({"matchLabels": {"a b": "c"}}),
            "matchLabels.a b",
            "invalid label key",
        ),
        (
            json!({"matchLabels": {"a": "-"}}),
            "matchLabels.a",
            "invalid label value",
        ),
        (
            json!({"matchExpressions": {}}),
            "matchExpressions",
            "expected a list",
        ),
        (
            json!({"matchExpressions": ["a"]}),
            "matchExpressions[0]",
            "expected an object",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}),
            "matchExpressions[0].operator",
            "\"Equals\" is not a valid label selector operator",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "in", "values": ["b"]}]}),
            "matchExpressions[0].operator",
            "not a valid",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            "matchExpressions[0]",
            "values must be non-empty",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]}),
            "matchExpressions[0]",
            "values must be non-empty",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]}),
            "matchExpressions[0]",
            "values must be empty",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": [""]}]}),
            "matchExpressions[0]",
            "values must be empty",
        ),
        (
            json!({"matchExpressions": [{"operator": "Exists"}]}),
            "matchExpressions[0].key",
            "required",
        ),
        (
            json!({"matchExpressions": [{"key": "a"}]}),
            "matchExpressions[0].operator",
            "required",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}),
            "matchExpressions[0].values[0]",
            "expected a string",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": "b"}]}),
            "matchExpressions[0].values",
            "expected a list",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"], "x": 1}]}),
            "matchExpressions[0].x",
            "unknown field",
        ),
        (
            json!({"matchExpressions": [{"key": "", "operator": "Exists"}]}),
            "matchExpressions[0]",
            "invalid label key",
        ),
    ];
    for (spec, path, msg) in cases {
        let err = Selector::from_label_selector(&spec).unwrap_err();
        assert_eq!(err.path, path, "{spec}: {err}");
        assert!(err.message.contains(msg), "{spec}: {err}");
    }
}

#[test]
fn requirement_accessors() {
    let r = Requirement::new("a", Operator::In, vec!["y".into(), "x".into(), "y".into()]).unwrap();
    assert_eq!(r.key(), "a");
    assert_eq!(r.operator(), Operator::In);
    assert_eq!(r.values(), ["x", "y"]);
    assert!(Requirement::new("a", Operator::Equals, vec![]).is_err());
    assert!(Requirement::new("a", Operator::Equals, vec!["b".into(), "c".into()]).is_err());
    let sel = Selector::from_requirements(vec![r.clone(), r]);
    assert_eq!(sel.requirements().len(), 1);
}
