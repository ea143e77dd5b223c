//! What the walker reads: a document seen through [`Input`], whatever holds it.
//!
//! Three inputs exist: the tape of parsed JSON text (`tape`), a `serde_json::Value`
//! (`value`), and, in the Python binding, the Python objects themselves. An input only
//! answers questions about its values (their shape, text, number, members, elements); every
//! rule of the canonical form lives in the walker (`walk`).

use std::borrow::Cow;

use super::sink::Sink;
use crate::json;

/// The JSON type of a value (with the length of a container).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Null,
    Bool(bool),
    Num,
    Str,
    List(usize),
    Object(usize),
}

impl Shape {
    /// The name error messages give the type.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Null => "null",
            Shape::Bool(_) => "boolean",
            Shape::Num => "number",
            Shape::Str => "string",
            Shape::List(_) => "list",
            Shape::Object(_) => "object",
        }
    }
}

/// A number as an input holds it.
#[derive(Clone, Debug)]
pub enum Number<'t> {
    /// A JSON number literal (as in JSON text, or the digits of a big integer).
    Literal(Cow<'t, str>),
    /// An integer.
    Int(i64),
    /// A double (not necessarily finite).
    Float(f64),
}

/// A document the walker can read. Values are named by `Node`s, small copyable handles valid
/// for `'t`. Object member names are nodes too (of shape `Str`).
pub trait Input<'t>: Copy {
    type Node: Copy;

    fn shape(&self, n: Self::Node) -> Shape;

    /// The text of a string (or member name).
    fn text(&self, n: Self::Node) -> &'t str;

    /// The number of a `Num` node.
    fn number(&self, n: Self::Node) -> Number<'t>;

    /// The members of an object: (name, value).
    fn members(&self, n: Self::Node) -> impl Iterator<Item = (Self::Node, Self::Node)> + 't;

    /// The elements of a list.
    fn elements(&self, n: Self::Node) -> impl Iterator<Item = Self::Node> + 't;

    /// The value of member `key` of an object (`None` for anything else).
    fn get(&self, n: Self::Node, key: &str) -> Option<Self::Node> {
        if !matches!(self.shape(n), Shape::Object(_)) {
            return None;
        }
        self.members(n)
            .find(|(k, _)| self.text(*k) == key)
            .map(|(_, v)| v)
    }

    /// Write a string node as a canonical JSON string literal.
    #[inline]
    fn write_str<S: Sink>(&self, n: Self::Node, spare: &mut Vec<u8>, out: &mut S) {
        let text = self.text(n).as_bytes();
        if json::find_special(text, 0) == text.len() {
            // Nothing to escape: the text between quotes.
            out.byte(b'"');
            out.bytes(text);
            out.byte(b'"');
        } else {
            out.via_vec(spare, |v| json::write_str(self.text(n), v));
        }
    }

    /// The value as compact JSON, for an error message (`None`: the input cannot tell, and
    /// the walk gives up instead).
    fn json_text(&self, _n: Self::Node) -> Option<String> {
        None
    }
}
