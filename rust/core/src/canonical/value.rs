//! A `serde_json::Value` as an [`Input`] of the walker: the reference input, whose walk
//! decides every error (the other inputs give up to it).

use std::borrow::Cow;

use serde_json::Value;

use super::input::{Input, Number, Shape};

/// Values of a document held as `serde_json::Value`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Values;

/// A value, or an object member's name (which is no `Value`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Node<'t> {
    Value(&'t Value),
    Name(&'t str),
}

impl<'t> Input<'t> for Values {
    type Node = Node<'t>;

    fn shape(&self, n: Node<'t>) -> Shape {
        match n {
            Node::Name(_) | Node::Value(Value::String(_)) => Shape::Str,
            Node::Value(Value::Null) => Shape::Null,
            Node::Value(Value::Bool(b)) => Shape::Bool(*b),
            Node::Value(Value::Number(_)) => Shape::Num,
            Node::Value(Value::Array(a)) => Shape::List(a.len()),
            Node::Value(Value::Object(m)) => Shape::Object(m.len()),
        }
    }

    fn text(&self, n: Node<'t>) -> &'t str {
        match n {
            Node::Name(s) => s,
            Node::Value(v) => v.as_str().unwrap_or_default(),
        }
    }

    fn number(&self, n: Node<'t>) -> Number<'t> {
        match n {
            // With `arbitrary_precision` a number is its literal text.
            Node::Value(Value::Number(n)) => Number::Literal(Cow::Borrowed(n.as_str())),
            _ => Number::Literal(Cow::Borrowed("")),
        }
    }

    fn members(&self, n: Node<'t>) -> impl Iterator<Item = (Node<'t>, Node<'t>)> + 't {
        let map = match n {
            Node::Value(Value::Object(m)) => Some(m),
            _ => None,
        };
        map.into_iter()
            .flat_map(|m| m.iter())
            .map(|(k, x)| (Node::Name(k), Node::Value(x)))
    }

    fn elements(&self, n: Node<'t>) -> impl Iterator<Item = Node<'t>> + 't {
        let list = match n {
            Node::Value(Value::Array(a)) => Some(a),
            _ => None,
        };
        list.into_iter().flat_map(|a| a.iter()).map(Node::Value)
    }

    fn get(&self, n: Node<'t>, key: &str) -> Option<Node<'t>> {
        match n {
            Node::Value(v) => v.get(key).map(Node::Value),
            Node::Name(_) => None,
        }
    }

    fn json_text(&self, n: Node<'t>) -> Option<String> {
        match n {
            Node::Value(v) => Some(v.to_string()),
            Node::Name(s) => Some(Value::String(s.to_owned()).to_string()),
        }
    }
}
