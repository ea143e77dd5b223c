//! The canonical form of a pod template (docs/hashing.md): compact JSON bytes that are equal
//! exactly when two templates mean the same thing to the Kubernetes API.
//!
//! One walk over the document, guided by the schema table (`schema`) from the root type:
//! object members are written in key order, nulls and empty lists/maps dropped, map lists
//! sorted by key tuple and set lists by element bytes, quantities (`quantity`) and numbers
//! (`json`) normalized. Errors carry the JSON path of the offending value in the input.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::decimal::Decimal;
use crate::error::{CoreError, Path, Seg};
use crate::json::{self, Num};
use crate::quantity;
use crate::schema::{self, Desc, KeyDefault, Kind, ListDesc, ListKind, TypeDef, TypeId};

/// Containers (objects and lists) may nest this deep; deeper documents are refused.
pub const MAX_DEPTH: usize = 100;

/// The canonical bytes of a document given as a JSON value.
pub fn canonical_json(doc: &Value, kind: Kind) -> Result<Vec<u8>, CoreError> {
    let Value::Object(obj) = doc else {
        return Err(CoreError::at_top(format!(
            "expected a JSON object at the top, got {}",
            type_name(doc)
        )));
    };
    let mut walker = Walker::default();
    let mut out = Vec::with_capacity(1024);
    walker.object(obj, Some(kind.root()), &mut out)?;
    Ok(out)
}

/// The canonical bytes of a document given as JSON text.
///
/// The fast path (`fast`: a borrowed tape, no `Value`) does the work; whenever it gives up
/// (any error, and a few rare inputs), this walker over a parsed `Value` decides, so that the
/// output and every error are exactly its own.
pub fn canonical_json_bytes(doc: &[u8], kind: Kind) -> Result<Vec<u8>, CoreError> {
    match crate::fast::canonical_json_bytes(doc, kind) {
        Ok(out) => Ok(out),
        Err(_) => canonical_json_reference_bytes(doc, kind),
    }
}

/// `canonical_json_bytes` through `serde_json::Value` only (the reference walker).
pub fn canonical_json_reference_bytes(doc: &[u8], kind: Kind) -> Result<Vec<u8>, CoreError> {
    canonical_json(&parse(doc)?, kind)
}

/// Parse JSON text (UTF-8) into a value.
pub fn parse(doc: &[u8]) -> Result<Value, CoreError> {
    serde_json::from_slice(doc).map_err(|e| CoreError::at_top(format!("invalid JSON: {e}")))
}

/// The JSON type of a value, as error messages name it.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Whether an object member with this value is left out: `null`, an empty list, or a map
/// (by the table) whose members are all left out.
fn dropped(v: &Value, desc: Option<&Desc>) -> bool {
    match (v, desc) {
        (Value::Null, _) => true,
        (Value::Array(a), _) => a.is_empty(),
        (Value::Object(m), Some(Desc::Map(value))) => m.values().all(|v| dropped(v, Some(value))),
        _ => false,
    }
}

/// One component of a map-list key tuple, as the element's canonical form has it: numbers
/// (by the value of their canonical text) sort before strings (by UTF-8 bytes).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum KeyPart<'a> {
    Num(Decimal, String),
    Str(Cow<'a, str>),
}

impl KeyPart<'_> {
    fn num(num: &Num) -> Self {
        let text = num.canonical();
        let value = Decimal::parse_json_number(&text).unwrap_or_else(Decimal::zero);
        KeyPart::Num(value, text)
    }

    /// As shown in a duplicate-key error: the canonical JSON of the value.
    fn render(&self) -> String {
        match self {
            KeyPart::Num(_, text) => text.clone(),
            KeyPart::Str(s) => {
                let mut out = Vec::new();
                json::write_str(s, &mut out);
                String::from_utf8_lossy(&out).into_owned()
            }
        }
    }
}

#[derive(Default)]
struct Walker<'a> {
    path: Path<'a>,
}

impl<'a> Walker<'a> {
    fn enter(&mut self, seg: Seg<'a>) -> Result<(), CoreError> {
        self.path.push(seg);
        if self.path.depth() > MAX_DEPTH {
            return Err(self
                .path
                .error(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    /// Write `v`, described by `desc` (`None`: not in the table, generic rules).
    fn value(
        &mut self,
        v: &'a Value,
        desc: Option<&'static Desc>,
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        match desc {
            None | Some(Desc::Scalar) => self.generic(v, out),
            Some(Desc::Quantity) => self.quantity(v, out),
            Some(Desc::Object(t)) => match v {
                Value::Object(m) => self.object(m, Some(*t), out),
                _ => Err(self.mismatch("an object", v)),
            },
            Some(Desc::Map(value)) => match v {
                Value::Object(m) => self.map(m, value, out),
                _ => Err(self.mismatch("an object", v)),
            },
            Some(Desc::List(l)) => match v {
                Value::Array(a) => self.list(a, l, out),
                _ => Err(self.mismatch("a list", v)),
            },
        }
    }

    fn mismatch(&self, expected: &str, got: &Value) -> CoreError {
        self.path
            .error(format!("expected {expected}, got {}", type_name(got)))
    }

    /// Values the table says nothing about: objects with keys sorted and dropped members,
    /// lists in order, scalars as they are.
    fn generic(&mut self, v: &'a Value, out: &mut Vec<u8>) -> Result<(), CoreError> {
        match v {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Number(n) => match Num::from_json(n) {
                Some(num) => num.write(out),
                None => return Err(self.path.error("number out of range")),
            },
            Value::String(s) => json::write_str(s, out),
            Value::Array(a) => self.elements(a, None, out)?,
            Value::Object(m) => self.object(m, None, out)?,
        }
        Ok(())
    }

    /// A struct (`ty` from the table) or an unknown object (`ty` is `None`).
    fn object(
        &mut self,
        m: &'a Map<String, Value>,
        ty: Option<TypeId>,
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        let def = ty.map(schema::type_def);
        let mut members: Vec<(&'a str, &'a Value, Option<&'static Desc>)> = m
            .iter()
            .map(|(k, v)| (k.as_str(), v, def.and_then(|d| d.field(k))))
            .filter(|(_, v, desc)| !dropped(v, *desc))
            .collect();
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        self.members(&members, out)
    }

    /// A map field: like an object, every value described by `value`.
    fn map(
        &mut self,
        m: &'a Map<String, Value>,
        value: &'static Desc,
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        let mut members: Vec<(&'a str, &'a Value, Option<&'static Desc>)> = m
            .iter()
            .filter(|(_, v)| !dropped(v, Some(value)))
            .map(|(k, v)| (k.as_str(), v, Some(value)))
            .collect();
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        self.members(&members, out)
    }

    fn members(
        &mut self,
        members: &[(&'a str, &'a Value, Option<&'static Desc>)],
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        out.push(b'{');
        for (i, (k, v, desc)) in members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json::write_str(k, out);
            out.push(b':');
            self.enter(Seg::Key(k))?;
            self.value(v, *desc, out)?;
            self.path.pop();
        }
        out.push(b'}');
        Ok(())
    }

    fn list(
        &mut self,
        a: &'a [Value],
        l: &'static ListDesc,
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        match l.kind {
            ListKind::Atomic | ListKind::Ordered => self.elements(a, Some(&l.item), out),
            ListKind::Set => self.set(a, &l.item, out),
            ListKind::Map => self.map_list(a, l, out),
        }
    }

    /// Elements in input order.
    fn elements(
        &mut self,
        a: &'a [Value],
        item: Option<&'static Desc>,
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        out.push(b'[');
        for (i, v) in a.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.enter(Seg::Index(i))?;
            self.value(v, item, out)?;
            self.path.pop();
        }
        out.push(b']');
        Ok(())
    }

    /// Each element canonicalized on its own, in input order.
    fn each_element(
        &mut self,
        a: &'a [Value],
        item: &'static Desc,
    ) -> Result<Vec<Vec<u8>>, CoreError> {
        let mut parts = Vec::with_capacity(a.len());
        for (i, v) in a.iter().enumerate() {
            let mut buf = Vec::new();
            self.enter(Seg::Index(i))?;
            self.value(v, Some(item), &mut buf)?;
            self.path.pop();
            parts.push(buf);
        }
        Ok(parts)
    }

    fn set(
        &mut self,
        a: &'a [Value],
        item: &'static Desc,
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        let mut parts = self.each_element(a, item)?;
        parts.sort();
        join(&parts, out);
        Ok(())
    }

    fn map_list(
        &mut self,
        a: &'a [Value],
        l: &'static ListDesc,
        out: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        let parts = self.each_element(a, &l.item)?;
        let item_type = match l.item {
            Desc::Object(t) => Some(schema::type_def(t)),
            _ => None,
        };
        let mut keyed = Vec::with_capacity(a.len());
        for (i, v) in a.iter().enumerate() {
            let tuple = l
                .keys
                .iter()
                .map(|key| self.key_part(v, key, item_type, i))
                .collect::<Result<Vec<_>, _>>()?;
            keyed.push((tuple, i));
        }
        // Stable: elements with equal keys stay in input order, so the duplicate reported
        // is the first element (in input order) whose key equals an earlier one.
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        let duplicate = keyed
            .windows(2)
            .filter(|w| w[0].0.cmp(&w[1].0) == Ordering::Equal)
            .map(|w| (w[1].1, &w[1].0))
            .min_by_key(|(i, _)| *i);
        if let Some((i, tuple)) = duplicate {
            let shown: Vec<String> = l
                .keys
                .iter()
                .zip(tuple)
                .map(|(k, part)| format!("{k}={}", part.render()))
                .collect();
            return Err(CoreError::new(
                self.path.render_with(&[Seg::Index(i)]),
                format!("duplicate key {}", shown.join(", ")),
            ));
        }
        let ordered: Vec<&Vec<u8>> = keyed.iter().map(|(_, i)| &parts[*i]).collect();
        join(&ordered, out);
        Ok(())
    }

    /// The value of one key field of map-list element `i`: as in the element's canonical
    /// form, or the field's default, or `""`. It must be a string or a number.
    fn key_part(
        &mut self,
        element: &'a Value,
        key: &'static str,
        item_type: Option<&'static TypeDef>,
        i: usize,
    ) -> Result<KeyPart<'a>, CoreError> {
        let desc = item_type.and_then(|t| t.field(key));
        let found = element.get(key).filter(|v| !dropped(v, desc));
        let part = match (found, desc) {
            (None, _) => match item_type.and_then(|t| t.key_default(key)) {
                Some(KeyDefault::Str(s)) => KeyPart::Str(Cow::Borrowed(s)),
                Some(KeyDefault::Int(n)) => KeyPart::num(&Num::Int(Decimal::from_digits(
                    n < 0,
                    &n.unsigned_abs().to_string(),
                    "",
                    0,
                ))),
                None => KeyPart::Str(Cow::Borrowed("")),
            },
            (Some(Value::String(s)), Some(Desc::Quantity)) => {
                // Canonicalized already: it parses.
                let value = quantity::parse(s).map(quantity::canonical_value);
                KeyPart::Str(Cow::Owned(value.unwrap_or_default()))
            }
            (Some(Value::String(s)), _) => KeyPart::Str(Cow::Borrowed(s)),
            (Some(Value::Number(n)), Some(Desc::Quantity)) => {
                let value = Num::from_json(n)
                    .and_then(|num| quantity::parse(&num.quantity_text()).ok())
                    .map(quantity::canonical_value);
                KeyPart::Str(Cow::Owned(value.unwrap_or_default()))
            }
            (Some(Value::Number(n)), _) => match Num::from_json(n) {
                Some(num) => KeyPart::num(&num),
                None => {
                    let at = self.path.render_with(&[Seg::Index(i), Seg::Key(key)]);
                    return Err(CoreError::new(at, "number out of range"));
                }
            },
            (Some(other), _) => {
                let at = self.path.render_with(&[Seg::Index(i), Seg::Key(key)]);
                return Err(CoreError::new(
                    at,
                    format!(
                        "map-list key must be a string or a number, got {}",
                        type_name(other)
                    ),
                ));
            }
        };
        Ok(part)
    }

    fn quantity(&mut self, v: &Value, out: &mut Vec<u8>) -> Result<(), CoreError> {
        let parsed = match v {
            Value::String(s) => quantity::parse(s),
            // An integer from its digits, a double from its shortest round-trip form.
            Value::Number(n) => match Num::from_json(n) {
                Some(num) => quantity::parse(&num.quantity_text()),
                None => Err(quantity::Invalid::Syntax),
            },
            _ => Err(quantity::Invalid::Syntax),
        };
        match parsed {
            Ok(d) => {
                json::write_str(&quantity::canonical_value(d), out);
                Ok(())
            }
            Err(why) => {
                let mut shown = Vec::new();
                match v {
                    Value::String(s) => json::write_str(s, &mut shown),
                    _ => shown.extend_from_slice(v.to_string().as_bytes()),
                }
                let shown = String::from_utf8_lossy(&shown);
                Err(self.path.error(match why {
                    quantity::Invalid::Syntax => format!("invalid quantity {shown}"),
                    quantity::Invalid::ExponentRange => {
                        format!("invalid quantity {shown}: exponent out of range")
                    }
                }))
            }
        }
    }
}

/// Write `[p0,p1,…]`.
fn join<T: AsRef<[u8]>>(parts: &[T], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(p.as_ref());
    }
    out.push(b']');
}
