//! How a walk fails: an invalid document (with the JSON path, collected on the way out so the
//! walk keeps no path while it succeeds), or a give-up, when an input met something it leaves
//! to the reference (`serde_json::Value`) walk to judge.

use crate::error::{path_text, CoreError, Step};

/// An invalid value: the message, and the path to it from the innermost step outwards.
#[derive(Clone, Debug)]
pub struct Invalid {
    steps: Vec<Step>,
    message: String,
}

/// Why a walk stopped.
#[derive(Clone, Debug)]
pub enum Fail {
    /// The input defers to the reference walk (a duplicate member name, a Python value that
    /// is not JSON, …), which reports the exact error, if any.
    GiveUp,
    /// The document is not a valid template.
    Invalid(Box<Invalid>),
}

pub type WalkResult<T> = Result<T, Fail>;

impl Fail {
    /// An invalid value here.
    pub fn invalid(message: impl Into<String>) -> Fail {
        Fail::Invalid(Box::new(Invalid {
            steps: Vec::new(),
            message: message.into(),
        }))
    }

    /// The same failure seen from the member `key` up.
    #[cold]
    pub fn in_key(mut self, key: &str) -> Fail {
        if let Fail::Invalid(e) = &mut self {
            e.steps.push(Step::Key(key.to_owned()));
        }
        self
    }

    /// The same failure seen from element `i` up.
    #[cold]
    pub fn in_index(mut self, i: usize) -> Fail {
        if let Fail::Invalid(e) = &mut self {
            e.steps.push(Step::Index(i));
        }
        self
    }

    /// The core error, an invalid template (`None` for a give-up).
    pub fn into_error(self) -> Option<CoreError> {
        let Fail::Invalid(e) = self else {
            return None;
        };
        Some(CoreError::template(
            path_text(e.steps.iter().rev()),
            e.message,
        ))
    }
}
