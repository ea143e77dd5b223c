//! The rules of the canonical form (docs/hashing.md), written once: one walk over any
//! [`Input`] into any [`Sink`].
//!
//! Guided by the schema table (`schema`) from the root type: object members are written in
//! key order, nulls and empty lists/maps dropped, map lists sorted by key tuple and set lists
//! by element bytes, quantities (`quantity`) and numbers (`json`) normalized. Everything is
//! written in final order (a map list's key tuples are found before its elements are
//! written), so nothing is buffered but set elements. Errors are those of the reference
//! (`Value`) walk, found in the same order; a duplicate member name gives up (JSON text and
//! `serde_json` disagree on what it means).

use std::borrow::Cow;
use std::cmp::Ordering;

use super::fail::{Fail, WalkResult};
use super::input::{Input, Number, Shape};
use super::keys::KeyPart;
use super::sink::Sink;
use super::MAX_DEPTH;
use crate::decimal::Decimal;
use crate::json::{self, Num};
use crate::quantity;
use crate::schema::{self, Desc, KeyDefault, Kind, ListDesc, ListKind, TypeId};

/// A member to write: its name's first 8 bytes (a quick sort key), name and value nodes, and
/// descriptor.
#[derive(Clone, Copy, Debug)]
pub struct Member<N> {
    prefix: u64,
    key: N,
    value: N,
    desc: Option<&'static Desc>,
}

/// Work buffers, reusable from walk to walk (an input keeps one per thread).
#[derive(Debug)]
pub struct Scratch<N> {
    /// Members of the objects being written, a stack of runs (one per object).
    members: Vec<Member<N>>,
    /// (position, element) of the map lists being written, a stack of runs.
    order: Vec<(u32, N)>,
    /// Reused buffers for set elements, which are sorted by their bytes.
    sets: Vec<Vec<u8>>,
    /// Spare buffer for `Sink::via_vec`.
    spare: Vec<u8>,
}

impl<N> Default for Scratch<N> {
    fn default() -> Self {
        Scratch {
            members: Vec::new(),
            order: Vec::new(),
            sets: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<N> Scratch<N> {
    /// Emptied, and released if a huge document made them large.
    pub fn reset(&mut self) {
        const KEEP: usize = 1 << 20;
        if self.spare.capacity() > KEEP || self.members.capacity() > KEEP / 32 {
            *self = Scratch::default();
        }
        self.members.clear();
        self.order.clear();
    }
}

/// Write the canonical form of the document `root` (of `kind`) into `out`.
pub fn walk<'t, I: Input<'t>, S: Sink>(
    input: I,
    root: I::Node,
    kind: Kind,
    scratch: &mut Scratch<I::Node>,
    out: S,
) -> WalkResult<S> {
    let shape = input.shape(root);
    if !matches!(shape, Shape::Object(_)) {
        return Err(Fail::invalid(format!(
            "expected a JSON object at the top, got {}",
            shape.name()
        )));
    }
    scratch.reset();
    let mut w = Walker {
        input,
        depth: 0,
        scratch,
        parts: Vec::new(),
    };
    w.object(root, Some(kind.root()), out)
}

struct Walker<'t, 's, I: Input<'t>> {
    input: I,
    depth: usize,
    scratch: &'s mut Scratch<I::Node>,
    /// Key tuples of the map lists being written, a stack of runs.
    parts: Vec<KeyPart<'t>>,
}

impl<'t, I: Input<'t>> Walker<'t, '_, I> {
    /// Whether an object member with this value is left out: `null`, an empty list, or a map
    /// (by the table) whose members are all left out.
    #[inline(always)]
    fn dropped(&self, v: I::Node, desc: Option<&Desc>) -> bool {
        match self.input.shape(v) {
            Shape::Null => true,
            Shape::List(n) => n == 0,
            Shape::Object(_) => match desc {
                Some(Desc::Map(value)) => self.map_dropped(v, value),
                _ => false,
            },
            _ => false,
        }
    }

    #[inline(never)]
    fn map_dropped(&self, v: I::Node, value: &Desc) -> bool {
        let input = self.input;
        input.members(v).all(|(_, x)| self.dropped(x, Some(value)))
    }

    /// `value` one level down; a plain string is written here, without the call.
    #[inline(always)]
    fn child<S: Sink>(
        &mut self,
        v: I::Node,
        desc: Option<&'static Desc>,
        mut out: S,
    ) -> WalkResult<S> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Fail::invalid(format!(
                "nested deeper than {MAX_DEPTH} levels"
            )));
        }
        if matches!(desc, None | Some(Desc::Scalar)) && self.input.shape(v) == Shape::Str {
            self.input.write_str(v, &mut self.scratch.spare, &mut out);
        } else {
            out = self.value(v, desc, out)?;
        }
        self.depth -= 1;
        Ok(out)
    }

    /// Write `v`, described by `desc` (`None`: not in the table, generic rules).
    fn value<S: Sink>(&mut self, v: I::Node, desc: Option<&'static Desc>, out: S) -> WalkResult<S> {
        let shape = self.input.shape(v);
        match (desc, shape) {
            (None | Some(Desc::Scalar), _) => self.generic(v, out),
            (Some(Desc::Quantity), _) => self.quantity(v, out),
            (Some(Desc::Object(t)), Shape::Object(_)) => self.object(v, Some(*t), out),
            (Some(Desc::Map(value)), Shape::Object(_)) => self.map(v, value, out),
            (Some(Desc::List(l)), Shape::List(_)) => self.list(v, l, out),
            (Some(Desc::List(_)), _) => Err(mismatch("a list", shape)),
            (Some(_), _) => Err(mismatch("an object", shape)),
        }
    }

    /// Values the table says nothing about: objects with keys sorted and dropped members,
    /// lists in order, scalars as they are.
    fn generic<S: Sink>(&mut self, v: I::Node, mut out: S) -> WalkResult<S> {
        match self.input.shape(v) {
            Shape::Null => out.bytes(b"null"),
            Shape::Bool(true) => out.bytes(b"true"),
            Shape::Bool(false) => out.bytes(b"false"),
            Shape::Num => self.write_number(v, &mut out)?,
            Shape::Str => self.input.write_str(v, &mut self.scratch.spare, &mut out),
            Shape::List(_) => return self.elements(v, None, out),
            Shape::Object(_) => return self.object(v, None, out),
        }
        Ok(out)
    }

    /// A struct (`ty` from the table) or an unknown object (`ty` is `None`).
    fn object<S: Sink>(&mut self, v: I::Node, ty: Option<TypeId>, out: S) -> WalkResult<S> {
        let base = self.scratch.members.len();
        let input = self.input;
        for (k, x) in input.members(v) {
            let name = input.text(k).as_bytes();
            let prefix = schema::name_prefix(name);
            self.scratch.members.push(Member {
                prefix,
                key: k,
                value: x,
                desc: ty.and_then(|t| schema::field_of(t, name, prefix)),
            });
        }
        self.members_out(base, out)
    }

    /// A map field: like an object, every value described by `value`.
    fn map<S: Sink>(&mut self, v: I::Node, value: &'static Desc, out: S) -> WalkResult<S> {
        let base = self.scratch.members.len();
        let input = self.input;
        for (k, x) in input.members(v) {
            self.scratch.members.push(Member {
                prefix: schema::name_prefix(input.text(k).as_bytes()),
                key: k,
                value: x,
                desc: Some(value),
            });
        }
        self.members_out(base, out)
    }

    /// Write the members pushed from `base` on, sorted by name (UTF-8 bytes), leaving out
    /// dropped ones; a duplicate name gives up.
    fn members_out<S: Sink>(&mut self, base: usize, mut out: S) -> WalkResult<S> {
        let input = self.input;
        let cmp = |a: &Member<I::Node>, b: &Member<I::Node>| {
            a.prefix.cmp(&b.prefix).then_with(|| {
                input
                    .text(a.key)
                    .as_bytes()
                    .cmp(input.text(b.key).as_bytes())
            })
        };
        let run = &mut self.scratch.members[base..];
        run.sort_unstable_by(cmp);
        if run.windows(2).any(|w| cmp(&w[0], &w[1]) == Ordering::Equal) {
            return Err(Fail::GiveUp);
        }
        let end = self.scratch.members.len();
        out.byte(b'{');
        let mut first = true;
        for i in base..end {
            let m = self.scratch.members[i];
            if self.dropped(m.value, m.desc) {
                continue;
            }
            if !first {
                out.byte(b',');
            }
            first = false;
            input.write_str(m.key, &mut self.scratch.spare, &mut out);
            out.byte(b':');
            out = self
                .child(m.value, m.desc, out)
                .map_err(|e| e.in_key(input.text(m.key)))?;
        }
        out.byte(b'}');
        self.scratch.members.truncate(base);
        Ok(out)
    }

    fn list<S: Sink>(&mut self, v: I::Node, l: &'static ListDesc, out: S) -> WalkResult<S> {
        match l.kind {
            ListKind::Atomic | ListKind::Ordered => self.elements(v, Some(&l.item), out),
            ListKind::Set => self.set(v, &l.item, out),
            ListKind::Map => self.map_list(v, l, out),
        }
    }

    /// Elements in input order.
    fn elements<S: Sink>(
        &mut self,
        v: I::Node,
        item: Option<&'static Desc>,
        mut out: S,
    ) -> WalkResult<S> {
        out.byte(b'[');
        let input = self.input;
        for (i, x) in input.elements(v).enumerate() {
            if i > 0 {
                out.byte(b',');
            }
            out = self.child(x, item, out).map_err(|e| e.in_index(i))?;
        }
        out.byte(b']');
        Ok(out)
    }

    /// A set: each element canonicalized on its own, sorted by those bytes.
    fn set<S: Sink>(&mut self, v: I::Node, item: &'static Desc, mut out: S) -> WalkResult<S> {
        let mut buf = self.scratch.sets.pop().unwrap_or_default();
        buf.clear();
        let mut ranges = Vec::new();
        let input = self.input;
        for (i, x) in input.elements(v).enumerate() {
            let start = buf.len();
            self.child(x, Some(item), &mut buf)
                .map_err(|e| e.in_index(i))?;
            ranges.push((start, buf.len()));
        }
        ranges.sort_by(|a, b| buf[a.0..a.1].cmp(&buf[b.0..b.1]));
        out.byte(b'[');
        for (i, (s, e)) in ranges.iter().enumerate() {
            if i > 0 {
                out.byte(b',');
            }
            out.bytes(&buf[*s..*e]);
        }
        out.byte(b']');
        self.scratch.sets.push(buf);
        Ok(out)
    }

    /// A map list: the elements' key tuples first, then the elements written in key order.
    ///
    /// The reference order of errors is kept: any invalid element (in input order) first,
    /// then a bad key, then a duplicate key (the first element, in input order, whose key
    /// equals an earlier one's).
    fn map_list<S: Sink>(&mut self, v: I::Node, l: &'static ListDesc, mut out: S) -> WalkResult<S> {
        let item_type = match l.item {
            Desc::Object(t) => Some(t),
            _ => None,
        };
        let k = l.keys.len();
        let (parts_base, order_base) = (self.parts.len(), self.scratch.order.len());
        let input = self.input;
        for (i, x) in input.elements(v).enumerate() {
            for key in l.keys {
                match self.key_part(x, key, item_type) {
                    Ok(part) => self.parts.push(part),
                    Err(e) => {
                        self.first_invalid_element(v, &l.item)?;
                        return Err(e.in_key(key).in_index(i));
                    }
                }
            }
            self.scratch.order.push((i as u32, x));
        }
        let parts = &self.parts[parts_base..];
        let tuple = |i: u32| &parts[i as usize * k..i as usize * k + k];
        let run = &mut self.scratch.order[order_base..];
        // Ties by position, so the run is as a stable sort leaves it.
        run.sort_unstable_by(|a, b| tuple(a.0).cmp(tuple(b.0)).then(a.0.cmp(&b.0)));
        let duplicate = run
            .windows(2)
            .filter(|w| tuple(w[0].0) == tuple(w[1].0))
            .map(|w| w[1].0)
            .min();
        if let Some(i) = duplicate {
            let shown: Vec<String> = l
                .keys
                .iter()
                .zip(tuple(i))
                .map(|(k, part)| format!("{k}={}", part.render()))
                .collect();
            self.first_invalid_element(v, &l.item)?;
            return Err(
                Fail::invalid(format!("duplicate key {}", shown.join(", "))).in_index(i as usize)
            );
        }
        let end = self.scratch.order.len();
        out.byte(b'[');
        for j in order_base..end {
            if j > order_base {
                out.byte(b',');
            }
            let (i, x) = self.scratch.order[j];
            out = match self.child(x, Some(&l.item), out) {
                Ok(out) => out,
                Err(e) => {
                    self.first_invalid_element(v, &l.item)?;
                    return Err(e.in_index(i as usize));
                }
            };
        }
        out.byte(b']');
        self.scratch.order.truncate(order_base);
        self.parts.truncate(parts_base);
        Ok(out)
    }

    /// The error of the first invalid element of list `v`, in input order (none: `Ok`).
    #[cold]
    fn first_invalid_element(&mut self, v: I::Node, item: &'static Desc) -> WalkResult<()> {
        let input = self.input;
        let mut buf = Vec::new();
        for (i, x) in input.elements(v).enumerate() {
            buf.clear();
            self.child(x, Some(item), &mut buf)
                .map_err(|e| e.in_index(i))?;
        }
        Ok(())
    }

    /// The value of one key field of a map-list element: as in the element's canonical
    /// form, or the field's default, or `""`. It must be a string or a number.
    fn key_part(
        &self,
        element: I::Node,
        key: &'static str,
        item_type: Option<TypeId>,
    ) -> WalkResult<KeyPart<'t>> {
        let name = key.as_bytes();
        let desc = item_type.and_then(|t| schema::field_of(t, name, schema::name_prefix(name)));
        let found = self
            .input
            .get(element, key)
            .filter(|x| !self.dropped(*x, desc));
        let Some(x) = found else {
            let def = item_type.and_then(|t| schema::type_def(t).key_default(key));
            return Ok(match def {
                Some(KeyDefault::Str(s)) => KeyPart::Str(Cow::Borrowed(s)),
                Some(KeyDefault::Int(n)) => KeyPart::Int(n),
                None => KeyPart::Str(Cow::Borrowed("")),
            });
        };
        let quantity = matches!(desc, Some(Desc::Quantity));
        Ok(match self.input.shape(x) {
            Shape::Str if quantity => {
                let value = quantity::parse(self.input.text(x)).map(quantity::canonical_value);
                KeyPart::Str(Cow::Owned(value.unwrap_or_default()))
            }
            Shape::Str => KeyPart::Str(Cow::Borrowed(self.input.text(x))),
            Shape::Num if quantity => {
                let value = num_of(&self.input.number(x))
                    .and_then(|num| quantity::parse(&num.quantity_text()).ok())
                    .map(quantity::canonical_value);
                KeyPart::Str(Cow::Owned(value.unwrap_or_default()))
            }
            Shape::Num => match self.input.number(x) {
                Number::Int(n) => KeyPart::Int(n),
                Number::Literal(text) if text.parse::<i64>().is_ok() => {
                    // As `Num::from_literal`: an i64 literal is that integer exactly.
                    KeyPart::Int(text.parse().unwrap_or_default())
                }
                number => match num_of(&number) {
                    Some(num) => KeyPart::num(&num),
                    None => return Err(Fail::invalid("number out of range")),
                },
            },
            other => {
                return Err(Fail::invalid(format!(
                    "map-list key must be a string or a number, got {}",
                    other.name()
                )))
            }
        })
    }

    fn quantity<S: Sink>(&mut self, v: I::Node, mut out: S) -> WalkResult<S> {
        let spare = &mut self.scratch.spare;
        let parsed = match self.input.shape(v) {
            Shape::Str => {
                let text = self.input.text(v);
                if out.via_vec(spare, |b| quantity::write_canonical_json_fast(text, b)) {
                    return Ok(out);
                }
                quantity::parse(text)
            }
            Shape::Num => match self.input.number(v) {
                // An integer literal is its own quantity text (`Num::quantity_text` writes
                // the same integer; `-0` and `0` are both zero).
                Number::Literal(text)
                    if !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
                        && out
                            .via_vec(spare, |b| quantity::write_canonical_json_fast(&text, b)) =>
                {
                    return Ok(out);
                }
                number => match num_of(&number) {
                    Some(num) => quantity::parse(&num.quantity_text()),
                    None => Err(quantity::Invalid::Syntax),
                },
            },
            _ => Err(quantity::Invalid::Syntax),
        };
        match parsed {
            Ok(d) => {
                let value = quantity::canonical_value(d);
                out.via_vec(spare, |b| json::write_str(&value, b));
                Ok(out)
            }
            Err(why) => Err(self.invalid_quantity(v, why)),
        }
    }

    #[cold]
    fn invalid_quantity(&self, v: I::Node, why: quantity::Invalid) -> Fail {
        let shown = if self.input.shape(v) == Shape::Str {
            let mut shown = Vec::new();
            json::write_str(self.input.text(v), &mut shown);
            String::from_utf8_lossy(&shown).into_owned()
        } else {
            match self.input.json_text(v) {
                Some(text) => text,
                None => return Fail::GiveUp,
            }
        };
        Fail::invalid(match why {
            quantity::Invalid::Syntax => format!("invalid quantity {shown}"),
            quantity::Invalid::ExponentRange => {
                format!("invalid quantity {shown}: exponent out of range")
            }
        })
    }

    /// A number's canonical text (rule 8); plain integer literals are written as they are.
    fn write_number<S: Sink>(&mut self, v: I::Node, out: &mut S) -> WalkResult<()> {
        let number = self.input.number(v);
        if let Number::Literal(text) = &number {
            let digits = text.strip_prefix('-').unwrap_or(text);
            // JSON integer literals have no leading zeros; `-0` is written `0`.
            if digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()) && digits != "0" {
                out.bytes(text.as_bytes());
                return Ok(());
            }
        }
        if let Number::Int(n) = number {
            write_int(n, out);
            return Ok(());
        }
        let num = num_of(&number).ok_or_else(|| Fail::invalid("number out of range"))?;
        out.via_vec(&mut self.scratch.spare, |b| num.write(b));
        Ok(())
    }
}

/// Write an integer's decimal digits.
fn write_int<S: Sink>(n: i64, out: &mut S) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.byte(b'-');
    }
    out.bytes(&digits[at..]);
}

/// A number as the canonical form sees it (`None`: not finite).
fn num_of(number: &Number<'_>) -> Option<Num> {
    match number {
        Number::Literal(text) => Num::from_literal(text),
        Number::Int(n) => Some(Num::Int(Decimal::from_digits(
            *n < 0,
            &n.unsigned_abs().to_string(),
            "",
            0,
        ))),
        Number::Float(x) => x.is_finite().then_some(Num::Float(*x)),
    }
}

#[cold]
fn mismatch(expected: &str, got: Shape) -> Fail {
    Fail::invalid(format!("expected {expected}, got {}", got.name()))
}
