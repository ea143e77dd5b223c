//! The one error type of the core, and the JSON path it carries.
//!
//! Every fallible operation (canonical form, quantities, selectors, index planning, bucketing)
//! returns `CoreError`: a path into the input (`spec.containers[1]`, `matchExpressions[0]`,
//! or empty when the error is about the input as a whole) and a message. The Python binding
//! turns it into `ValueError("<path>: <message>")`.

use std::fmt;

/// An error with the location in the input where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreError {
    /// JSON path in the input: member names joined with `.`, list positions as `[i]`.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl CoreError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        CoreError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// An error about the input as a whole.
    pub fn at_top(message: impl Into<String>) -> Self {
        CoreError::new(String::new(), message)
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

/// One step of a path.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// A path, built only once an error is found, and rendered.
#[derive(Debug, Default)]
pub(crate) struct Path<'a> {
    segs: Vec<Seg<'a>>,
}

impl<'a> Path<'a> {
    pub(crate) fn push(&mut self, seg: Seg<'a>) {
        self.segs.push(seg);
    }

    /// The path as text, with `extra` appended.
    pub(crate) fn render_with(&self, extra: &[Seg<'_>]) -> String {
        let mut out = String::new();
        for seg in self.segs.iter().chain(extra) {
            match seg {
                Seg::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    /// An error here.
    pub(crate) fn error(&self, message: impl Into<String>) -> CoreError {
        CoreError::new(self.render_with(&[]), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_paths() {
        let mut p = Path::default();
        assert_eq!(p.render_with(&[]), "");
        assert_eq!(p.render_with(&[Seg::Index(2)]), "[2]");
        p.push(Seg::Key("spec"));
        p.push(Seg::Key("containers"));
        p.push(Seg::Index(1));
        assert_eq!(p.render_with(&[]), "spec.containers[1]");
        assert_eq!(
            p.render_with(&[Seg::Key("resources"), Seg::Key("nvidia.com/gpu")]),
            "spec.containers[1].resources.nvidia.com/gpu"
        );
    }

    #[test]
    fn displays_with_and_without_path() {
        assert_eq!(CoreError::new("a.b", "bad").to_string(), "a.b: bad");
        assert_eq!(CoreError::at_top("bad").to_string(), "bad");
    }
}
