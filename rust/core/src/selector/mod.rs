//! Kubernetes label selectors with apimachinery semantics.
//!
//! A `Selector` is compiled once, from a `LabelSelector` object (`matchLabels`,
//! `matchExpressions`) or from the string form (`app=web,tier in (a,b),!canary`), and then
//! matches many label sets. The empty selector matches everything; `NotIn` and `!=` match a
//! label set without the key. `Display` writes the canonical string form, which parses back
//! to the same selector and can be sent as a `labelSelector` query parameter.

mod parse;
mod validation;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

use serde_json::Value;

use crate::canonical::type_name;
use crate::error::CoreError;

pub use validation::{check_key, check_value};

/// How a requirement relates a key to its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// `key=value` (also `key==value`): the key is present with this value.
    Equals,
    /// `key!=value`: the key is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the key is present with one of the values.
    In,
    /// `key notin (a,b)`: the key is absent or has none of the values.
    NotIn,
    /// `key`: the key is present.
    Exists,
    /// `!key`: the key is absent.
    DoesNotExist,
}

/// One condition on one key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Requirement {
    key: String,
    op: Operator,
    /// Sorted and unique; one value for `Equals`/`NotEquals`, none for the existence checks.
    values: Vec<String>,
}

impl Requirement {
    /// A validated requirement; `values` may be in any order and repeat.
    pub fn new(key: &str, op: Operator, values: Vec<String>) -> Result<Self, String> {
        check_key(key)?;
        let values: Vec<String> = values
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        match op {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err("values must be non-empty for the In and NotIn operators".into());
            }
            Operator::Equals | Operator::NotEquals if values.len() != 1 => {
                return Err("exactly one value is needed for equality".into());
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(
                    "values must be empty for the Exists and DoesNotExist operators".into(),
                );
            }
            _ => {}
        }
        for v in &values {
            check_value(v)?;
        }
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.op
    }

    /// The values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a label set satisfies this requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let found = labels.label(&self.key);
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Operator::Equals | Operator::In => found.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => !found.is_some_and(listed),
            Operator::Exists => found.is_some(),
            Operator::DoesNotExist => found.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |f: &mut fmt::Formatter<'_>| {
            if self.values.len() == 1 && self.values[0].is_empty() {
                // `(,)` is the set holding just the empty value; `()` would not parse.
                f.write_str("(,)")
            } else {
                write!(f, "({})", self.values.join(","))
            }
        };
        match self.op {
            Operator::Equals => write!(f, "{}={}", self.key, self.values[0]),
            Operator::NotEquals => write!(f, "{}!={}", self.key, self.values[0]),
            Operator::In => {
                write!(f, "{} in ", self.key)?;
                set(f)
            }
            Operator::NotIn => {
                write!(f, "{} notin ", self.key)?;
                set(f)
            }
            Operator::Exists => f.write_str(&self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

/// A label set a selector can look keys up in.
pub trait Labels {
    /// The value of a label, if present.
    fn label(&self, key: &str) -> Option<&str>;
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// A small label set as pairs, searched linearly (fast for the usual handful of labels).
impl<K: AsRef<str>, V: AsRef<str>> Labels for [(K, V)] {
    fn label(&self, key: &str) -> Option<&str> {
        self.iter()
            .find(|(k, _)| k.as_ref() == key)
            .map(|(_, v)| v.as_ref())
    }
}

/// A compiled label selector: all requirements must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    /// Sorted (by key, then operator and values) and unique.
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// From requirements in any order.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort();
        requirements.dedup();
        Selector { requirements }
    }

    /// From a `LabelSelector` object: `{"matchLabels": {…}, "matchExpressions": [{"key": …,
    /// "operator": "In"|"NotIn"|"Exists"|"DoesNotExist", "values": […]}]}`. `null` and `{}`
    /// match everything.
    pub fn from_label_selector(spec: &Value) -> Result<Self, CoreError> {
        let obj = match spec {
            Value::Null => return Ok(Selector::everything()),
            Value::Object(obj) => obj,
            other => {
                return Err(CoreError::at_top(format!(
                    "a label selector must be an object, got {}",
                    type_name(other)
                )))
            }
        };
        let mut reqs = Vec::new();
        for (field, value) in obj {
            match (field.as_str(), value) {
                (_, Value::Null) => {}
                ("matchLabels", Value::Object(labels)) => {
                    for (key, v) in labels {
                        let at = || format!("matchLabels.{key}");
                        let Value::String(v) = v else {
                            return Err(CoreError::new(
                                at(),
                                format!("expected a string, got {}", type_name(v)),
                            ));
                        };
                        let req = Requirement::new(key, Operator::Equals, vec![v.clone()])
                            .map_err(|e| CoreError::new(at(), e))?;
                        reqs.push(req);
                    }
                }
                ("matchExpressions", Value::Array(exprs)) => {
                    for (i, expr) in exprs.iter().enumerate() {
                        reqs.push(expression(expr, &format!("matchExpressions[{i}]"))?);
                    }
                }
                ("matchLabels", other) => {
                    return Err(CoreError::new(
                        "matchLabels",
                        format!("expected an object, got {}", type_name(other)),
                    ))
                }
                ("matchExpressions", other) => {
                    return Err(CoreError::new(
                        "matchExpressions",
                        format!("expected a list, got {}", type_name(other)),
                    ))
                }
                (other, _) => {
                    return Err(CoreError::new(
                        other,
                        "unknown field: a label selector has matchLabels and matchExpressions",
                    ))
                }
            }
        }
        Ok(Selector::from_requirements(reqs))
    }

    /// Whether no requirement is set (the selector matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a label set satisfies every requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// One `matchExpressions` entry.
fn expression(expr: &Value, at: &str) -> Result<Requirement, CoreError> {
    let Value::Object(obj) = expr else {
        return Err(CoreError::new(
            at,
            format!("expected an object, got {}", type_name(expr)),
        ));
    };
    let string_field = |name: &str| match obj.get(name) {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(Value::Null) | None => Err(CoreError::new(format!("{at}.{name}"), "required")),
        Some(other) => Err(CoreError::new(
            format!("{at}.{name}"),
            format!("expected a string, got {}", type_name(other)),
        )),
    };
    if let Some(unknown) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "key" | "operator" | "values"))
    {
        return Err(CoreError::new(
            format!("{at}.{unknown}"),
            "unknown field: an expression has key, operator and values",
        ));
    }
    let key = string_field("key")?;
    let op = match string_field("operator")? {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(CoreError::new(
                format!("{at}.operator"),
                format!("{other:?} is not a valid label selector operator"),
            ))
        }
    };
    let values = match obj.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut values = Vec::with_capacity(items.len());
            for (j, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => values.push(s.clone()),
                    other => {
                        return Err(CoreError::new(
                            format!("{at}.values[{j}]"),
                            format!("expected a string, got {}", type_name(other)),
                        ))
                    }
                }
            }
            values
        }
        Some(other) => {
            return Err(CoreError::new(
                format!("{at}.values"),
                format!("expected a list, got {}", type_name(other)),
            ))
        }
    };
    Requirement::new(key, op, values).map_err(|e| CoreError::new(at, e))
}

impl FromStr for Selector {
    type Err = CoreError;

    /// Parse the string form: comma-separated `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
    /// `k notin (a)`, `k`, `!k`; whitespace around tokens is ignored; `""` matches everything.
    fn from_str(s: &str) -> Result<Self, CoreError> {
        parse::parse(s)
            .map(Selector::from_requirements)
            .map_err(|e| CoreError::at_top(format!("invalid label selector {s:?}: {e}")))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
