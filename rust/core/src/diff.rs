//! Which parts of two pod templates differ, and whether a running pod can take the change
//! in place (docs/hashing.md, "Differences").
//!
//! Both documents are brought to their canonical form first (`canonical`), so only
//! differences of meaning count: a reordered map, a quantity spelled another way, a
//! defaulted field left out are no difference. The canonical values are then compared
//! member by member; the elements of a list whose elements are all objects with a unique
//! string `name` are matched by name (`spec.containers[name=main].image`), other lists
//! position by position (`spec.tolerations[1]`). A member on one side only is a difference
//! at its own path.
//!
//! A change is **in place** when every path is one the API server lets a running pod change
//! and the kubelet applies without replacing the pod: the `image` of a container or an init
//! container (`IN_PLACE`; the kubelet restarts that container), and, where the server serves
//! the `pods/resize` subresource and the caller says so, a container's CPU or memory request
//! or limit (`RESIZE`). Whether a resize keeps the pod's QoS class and removes no request or
//! limit, which the API server also requires, depends on the values: the caller checks it.

use serde_json::Value;

use crate::canonical::{canonical_json, parse};
use crate::error::CoreError;
use crate::schema::Kind;

/// The container lists whose elements' `image` may change on a running pod.
pub const IN_PLACE: [&str; 2] = ["spec.containers", "spec.initContainers"];

/// The paths at which the canonical forms of two templates (JSON text) differ, sorted;
/// empty when they mean the same.
pub fn template_diff(old: &[u8], new: &[u8], kind: Kind) -> Result<Vec<String>, CoreError> {
    canonical_diff(
        &canonical_json(&parse(old)?, kind)?,
        &canonical_json(&parse(new)?, kind)?,
    )
}

/// `template_diff` of two canonical forms (as `canonical_json` writes them).
pub fn canonical_diff(old: &[u8], new: &[u8]) -> Result<Vec<String>, CoreError> {
    let mut out = Vec::new();
    diff_value(&parse(old)?, &parse(new)?, String::new(), &mut out);
    out.sort();
    Ok(out)
}

/// The resources of a container the `pods/resize` subresource may change.
pub const RESIZE: [&str; 2] = ["cpu", "memory"];

/// Whether a change at exactly `paths` can be made to a running pod in place (and is a
/// change at all); with `resize`, CPU and memory requests and limits of containers count too.
pub fn in_place(paths: &[String], resize: bool) -> bool {
    !paths.is_empty()
        && paths
            .iter()
            .all(|p| in_place_path(p) || (resize && resize_path(p)))
}

/// Whether `path` is a container's CPU or memory request or limit
/// (`spec.containers[name=main].resources.limits.cpu`). Init containers are left out: the
/// server resizes only sidecars among them, which a path does not tell apart.
pub fn resize_path(path: &str) -> bool {
    path.strip_prefix("spec.containers[name=")
        .and_then(|rest| rest.split_once("].resources."))
        .is_some_and(|(name, rest)| {
            !name.contains(']')
                && rest.split_once('.').is_some_and(|(kind, res)| {
                    (kind == "requests" || kind == "limits") && RESIZE.contains(&res)
                })
        })
}

fn in_place_path(path: &str) -> bool {
    IN_PLACE.iter().any(|list| {
        path.strip_prefix(list)
            .and_then(|rest| rest.strip_prefix("[name="))
            .and_then(|rest| rest.strip_suffix("].image"))
            .is_some_and(|name| !name.contains(']'))
    })
}

fn diff_value(a: &Value, b: &Value, path: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, va) in x {
                let sub = member(&path, key);
                match y.get(key) {
                    Some(vb) => diff_value(va, vb, sub, out),
                    None => out.push(sub),
                }
            }
            for key in y.keys() {
                if !x.contains_key(key) {
                    out.push(member(&path, key));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => match (named(x), named(y)) {
            (Some(nx), Some(ny)) => {
                for (name, va) in &nx {
                    let sub = format!("{path}[name={name}]");
                    match ny.iter().find(|(n, _)| n == name) {
                        Some((_, vb)) => diff_value(va, vb, sub, out),
                        None => out.push(sub),
                    }
                }
                for (name, _) in &ny {
                    if !nx.iter().any(|(n, _)| n == name) {
                        out.push(format!("{path}[name={name}]"));
                    }
                }
            }
            _ => {
                for i in 0..x.len().max(y.len()) {
                    let sub = format!("{path}[{i}]");
                    match (x.get(i), y.get(i)) {
                        (Some(va), Some(vb)) => diff_value(va, vb, sub, out),
                        _ => out.push(sub),
                    }
                }
            }
        },
        _ => {
            if a != b {
                out.push(path);
            }
        }
    }
}

/// `(name, element)` of a list whose elements are all objects with a unique string `name`.
fn named(list: &[Value]) -> Option<Vec<(&str, &Value)>> {
    let mut out: Vec<(&str, &Value)> = Vec::with_capacity(list.len());
    for item in list {
        let name = item.as_object()?.get("name")?.as_str()?;
        if out.iter().any(|(n, _)| *n == name) {
            return None;
        }
        out.push((name, item));
    }
    Some(out)
}

/// `path.key`, or `path["key"]` for a key that is not a plain identifier (a label key).
fn member(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_string(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", Value::String(key.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(a: &str, b: &str) -> Vec<String> {
        template_diff(a.as_bytes(), b.as_bytes(), Kind::PodTemplateSpec).unwrap()
    }

    const BASE: &str = r#"{"metadata":{"labels":{"app.kubernetes.io/name":"x"}},
        "spec":{"containers":[{"name":"main","image":"vllm:1","resources":{"limits":{"cpu":"1"}}},
                              {"name":"side","image":"envoy:1"}]}}"#;

    #[test]
    fn the_same_meaning_is_no_difference() {
        let same = r#"{"spec":{"containers":[{"image":"envoy:1","name":"side"},
            {"resources":{"limits":{"cpu":"1000m"}},"name":"main","image":"vllm:1"}]},
            "metadata":{"labels":{"app.kubernetes.io/name":"x"}}}"#;
        assert_eq!(diff(BASE, same), Vec::<String>::new());
        assert!(!in_place(&diff(BASE, same), true));
    }

    #[test]
    fn an_image_change_is_in_place() {
        let new = BASE.replace("vllm:1", "vllm:2");
        let paths = diff(BASE, &new);
        assert_eq!(paths, vec!["spec.containers[name=main].image"]);
        assert!(in_place(&paths, false));
        let both = new.replace("envoy:1", "envoy:2");
        assert!(in_place(&diff(BASE, &both), false));
    }

    #[test]
    fn anything_else_is_not() {
        let env = BASE.replace(
            r#""image":"envoy:1""#,
            r#""image":"envoy:1","env":[{"name":"A","value":"1"}]"#,
        );
        assert_eq!(diff(BASE, &env), vec!["spec.containers[name=side].env"]);
        assert!(!in_place(&diff(BASE, &env), true));
        let label = BASE.replace(r#""x""#, r#""y""#);
        assert_eq!(
            diff(BASE, &label),
            vec![r#"metadata.labels["app.kubernetes.io/name"]"#]
        );
        let mixed = label.replace("vllm:1", "vllm:2");
        assert!(!in_place(&diff(BASE, &mixed), true));
        let cpu = BASE.replace(r#""cpu":"1""#, r#""cpu":"2""#);
        assert_eq!(
            diff(BASE, &cpu),
            vec!["spec.containers[name=main].resources.limits.cpu"]
        );
        assert!(!in_place(&diff(BASE, &cpu), false));
        let removed = r#"{"metadata":{"labels":{"app.kubernetes.io/name":"x"}},
            "spec":{"containers":[{"name":"main","image":"vllm:1","resources":{"limits":{"cpu":"1"}}}]}}"#;
        assert_eq!(diff(BASE, removed), vec!["spec.containers[name=side]"]);
        assert!(!in_place(&diff(BASE, removed), true));
    }

    #[test]
    fn cpu_and_memory_are_in_place_with_a_resize() {
        let cpu = BASE.replace(r#""cpu":"1""#, r#""cpu":"2","memory":"1Gi""#);
        let paths = diff(BASE, &cpu);
        assert_eq!(
            paths,
            vec![
                "spec.containers[name=main].resources.limits.cpu",
                "spec.containers[name=main].resources.limits.memory"
            ]
        );
        assert!(in_place(&paths, true));
        assert!(!in_place(&paths, false));
        let with_image = cpu.replace("vllm:1", "vllm:2");
        assert!(in_place(&diff(BASE, &with_image), true));
        let gpu = BASE.replace(r#""cpu":"1""#, r#""cpu":"1","nvidia.com/gpu":"1""#);
        assert!(!in_place(&diff(BASE, &gpu), true));
        let side = BASE.replace(
            r#""image":"envoy:1""#,
            r#""image":"envoy:1","resources":{"requests":{"cpu":"1"}}"#,
        );
        assert_eq!(
            diff(BASE, &side),
            vec!["spec.containers[name=side].resources"]
        );
        assert!(!in_place(&diff(BASE, &side), true));
        for path in [
            "spec.initContainers[name=i].resources.limits.cpu",
            "spec.containers[name=m].resources.claims",
            "spec.containers[name=m].resources.limits.cpu.x",
            "spec.resources.limits.cpu",
        ] {
            assert!(!resize_path(path), "{path}");
        }
    }

    #[test]
    fn lists_without_names_go_by_position() {
        let a = r#"{"spec":{"containers":[{"name":"m","image":"i"}],"tolerations":[{"key":"a"}]}}"#;
        let b = r#"{"spec":{"containers":[{"name":"m","image":"i"}],"tolerations":[{"key":"a"},{"key":"b"}]}}"#;
        assert_eq!(diff(a, b), vec!["spec.tolerations[1]"]);
    }

    #[test]
    fn invalid_templates_are_refused() {
        assert!(template_diff(b"{", b"{}", Kind::PodTemplateSpec).is_err());
    }
}
