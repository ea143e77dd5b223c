//! The one error type of the core and of its Python binding: what kind of error, the JSON
//! path it is at, and its message.
//!
//! Every fallible operation (canonical form, quantities, selectors, index planning, bucketing)
//! returns `CoreError`, and so does the binding's reading of Python objects. It carries a
//! kind, a path into the input (`spec.containers[1]`, `matchExpressions[0]`, or empty when the
//! error is about the input as a whole) and a message; its text is `"<path>: <message>"`, or
//! the message alone without a path. The binding raises each kind as one Python exception
//! (rust/py, `py_err`): `Template` as `TemplateError` (a `ValueError` with `.path` and
//! `.message`), `Value` as `ValueError`, `Type` as `TypeError`, always with that text.

use std::fmt;

/// What is wrong, which decides the exception the binding raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A document that is not a valid template (its canonical form cannot be written).
    Template,
    /// Any other invalid value (a selector, a kind, a count).
    Value,
    /// A value of the wrong type (an object that is not JSON, a label that is not a string).
    Type,
}

/// An error with the location in the input where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreError {
    pub kind: ErrorKind,
    /// JSON path in the input: member names joined with `.`, list positions as `[i]`.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl CoreError {
    /// An invalid value at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        CoreError::of(ErrorKind::Value, path, message)
    }

    /// An invalid value, the input as a whole.
    pub fn at_top(message: impl Into<String>) -> Self {
        CoreError::of(ErrorKind::Value, String::new(), message)
    }

    /// An invalid template, wrong at `path` (empty: the document as a whole).
    pub fn template(path: impl Into<String>, message: impl Into<String>) -> Self {
        CoreError::of(ErrorKind::Template, path, message)
    }

    /// A value of the wrong type at `path` (empty: the input as a whole).
    pub fn wrong_type(path: impl Into<String>, message: impl Into<String>) -> Self {
        CoreError::of(ErrorKind::Type, path, message)
    }

    fn of(kind: ErrorKind, path: impl Into<String>, message: impl Into<String>) -> Self {
        CoreError {
            kind,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for CoreError {}

/// One step of a path: a member name or a list position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A path as text: member names joined with `.`, list positions as `[i]`
/// (`spec.containers[1].resources.nvidia.com/gpu`).
pub fn path_text<'a>(steps: impl IntoIterator<Item = &'a Step>) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_paths() {
        let key = |k: &str| Step::Key(k.to_owned());
        assert_eq!(path_text(&[]), "");
        assert_eq!(path_text(&[Step::Index(2)]), "[2]");
        let mut steps = vec![key("spec"), key("containers"), Step::Index(1)];
        assert_eq!(path_text(&steps), "spec.containers[1]");
        steps.extend([key("resources"), key("nvidia.com/gpu")]);
        assert_eq!(
            path_text(&steps),
            "spec.containers[1].resources.nvidia.com/gpu"
        );
        // A member name is always set off by a dot, even one that looks like a position.
        assert_eq!(path_text(&[key("spec"), key("[x")]), "spec.[x");
    }

    #[test]
    fn displays_with_and_without_path() {
        assert_eq!(CoreError::new("a.b", "bad").to_string(), "a.b: bad");
        assert_eq!(CoreError::at_top("bad").to_string(), "bad");
        assert_eq!(CoreError::template("", "bad").to_string(), "bad");
        assert_eq!(
            CoreError::wrong_type("x[0]", "bad").to_string(),
            "x[0]: bad"
        );
    }

    #[test]
    fn constructors_give_kinds() {
        assert_eq!(CoreError::new("a", "m").kind, ErrorKind::Value);
        assert_eq!(CoreError::at_top("m").kind, ErrorKind::Value);
        assert_eq!(CoreError::template("a", "m").kind, ErrorKind::Template);
        assert_eq!(CoreError::wrong_type("a", "m").kind, ErrorKind::Type);
    }
}
