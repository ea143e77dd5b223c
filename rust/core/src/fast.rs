//! The fast path of the canonical form: JSON text parsed into a flat, borrowed tape (strings
//! and number literals are slices of the input unless a string has escapes), walked by the
//! same rules as `canonical` straight into one output buffer.
//!
//! It only ever succeeds with the bytes the reference walker (`canonical`, over
//! `serde_json::Value`) would produce. Anything it does not handle the easy way (any error,
//! a duplicate member name, deep nesting, text `serde_json` might read differently) makes it
//! give up, and the caller runs the reference walker, which then reports the exact error.

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::canonical::MAX_DEPTH;
use crate::decimal::Decimal;
use crate::json::{self, Num};
use crate::quantity;
use crate::schema::{self, Desc, KeyDefault, Kind, ListDesc, ListKind, TypeDef, TypeId};

/// The fast path gave up: the reference walker decides.
#[derive(Debug)]
pub(crate) struct GiveUp;

type Result<T> = std::result::Result<T, GiveUp>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    Null,
    True,
    False,
    Num,
    Str,
    Arr,
    Obj,
}

/// One value of the tape. A container is followed by its contents: elements, or for an
/// object each member's name (a `Str` node) then its value. `end` is the index just past
/// the node's subtree.
#[derive(Debug)]
struct Node<'a> {
    tag: Tag,
    /// Number of elements or members (containers).
    len: u32,
    end: u32,
    /// String contents (unescaped) or the number literal.
    text: Cow<'a, str>,
}

/// Deeper than this, the parser gives up (serde_json's own limit is 128).
const PARSE_DEPTH: usize = MAX_DEPTH + 8;

struct Parser<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tape: Vec<Node<'a>>,
}

fn parse(src: &[u8]) -> Result<Vec<Node<'_>>> {
    let src = std::str::from_utf8(src).map_err(|_| GiveUp)?;
    let mut p = Parser {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        tape: Vec::with_capacity(src.len() / 8 + 16),
    };
    p.ws();
    p.value(0)?;
    p.ws();
    if p.pos != p.bytes.len() {
        return Err(GiveUp);
    }
    Ok(p.tape)
}

impl<'a> Parser<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn leaf(&mut self, tag: Tag, text: Cow<'a, str>) {
        let end = self.tape.len() as u32 + 1;
        self.tape.push(Node {
            tag,
            len: 0,
            end,
            text,
        });
    }

    fn literal(&mut self, word: &[u8], tag: Tag) -> Result<()> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            self.leaf(tag, Cow::Borrowed(""));
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    fn value(&mut self, depth: usize) -> Result<()> {
        match self.peek().ok_or(GiveUp)? {
            b'"' => {
                let s = self.string()?;
                self.leaf(Tag::Str, s);
                Ok(())
            }
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b't' => self.literal(b"true", Tag::True),
            b'f' => self.literal(b"false", Tag::False),
            b'n' => self.literal(b"null", Tag::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(GiveUp),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Result<()> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(GiveUp);
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(GiveUp),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        let text = &self.src[start..self.pos];
        self.leaf(Tag::Num, Cow::Borrowed(text));
        Ok(())
    }

    /// A string at `"`: borrowed when it has no escape, else unescaped into a new `String`.
    fn string(&mut self) -> Result<Cow<'a, str>> {
        self.pos += 1;
        let start = self.pos;
        self.pos = json::find_special(self.bytes, self.pos);
        match self.bytes.get(self.pos) {
            Some(b'"') => {
                let s = &self.src[start..self.pos];
                self.pos += 1;
                return Ok(Cow::Borrowed(s));
            }
            Some(b'\\') => {}
            _ => return Err(GiveUp),
        }
        let mut out = String::from(&self.src[start..self.pos]);
        loop {
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = match self.bytes.get(self.pos).ok_or(GiveUp)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            self.pos += 1;
                            let hi = self.hex4()?;
                            let c = match hi {
                                0xd800..=0xdbff => {
                                    if !self.bytes[self.pos..].starts_with(b"\\u") {
                                        return Err(GiveUp);
                                    }
                                    self.pos += 2;
                                    let lo = self.hex4()?;
                                    if !(0xdc00..=0xdfff).contains(&lo) {
                                        return Err(GiveUp);
                                    }
                                    0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                                }
                                0xdc00..=0xdfff => return Err(GiveUp),
                                _ => hi,
                            };
                            out.push(char::from_u32(c).ok_or(GiveUp)?);
                            continue;
                        }
                        _ => return Err(GiveUp),
                    };
                    out.push(c);
                    self.pos += 1;
                }
                Some(0x00..=0x1f) | None => return Err(GiveUp),
                Some(_) => {
                    let run = self.pos;
                    self.pos = json::find_special(self.bytes, self.pos);
                    out.push_str(&self.src[run..self.pos]);
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or(GiveUp)?;
        let mut v = 0u32;
        for &d in digits {
            v = v * 16 + char::from(d).to_digit(16).ok_or(GiveUp)?;
        }
        self.pos += 4;
        Ok(v)
    }

    fn open(&mut self, tag: Tag, depth: usize) -> Result<usize> {
        if depth > PARSE_DEPTH {
            return Err(GiveUp);
        }
        self.pos += 1;
        let at = self.tape.len();
        self.tape.push(Node {
            tag,
            len: 0,
            end: 0,
            text: Cow::Borrowed(""),
        });
        Ok(at)
    }

    fn close(&mut self, at: usize, len: u32) {
        self.pos += 1;
        let end = self.tape.len() as u32;
        let node = &mut self.tape[at];
        node.len = len;
        node.end = end;
    }

    fn array(&mut self, depth: usize) -> Result<()> {
        let at = self.open(Tag::Arr, depth)?;
        self.ws();
        let mut len = 0;
        if self.peek() != Some(b']') {
            loop {
                self.value(depth)?;
                len += 1;
                self.ws();
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        self.ws();
                    }
                    Some(b']') => break,
                    _ => return Err(GiveUp),
                }
            }
        }
        self.close(at, len);
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<()> {
        let at = self.open(Tag::Obj, depth)?;
        self.ws();
        let mut len = 0;
        if self.peek() != Some(b'}') {
            loop {
                if self.peek() != Some(b'"') {
                    return Err(GiveUp);
                }
                let key = self.string()?;
                self.leaf(Tag::Str, key);
                self.ws();
                if self.peek() != Some(b':') {
                    return Err(GiveUp);
                }
                self.pos += 1;
                self.ws();
                self.value(depth)?;
                len += 1;
                self.ws();
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        self.ws();
                    }
                    Some(b'}') => break,
                    _ => return Err(GiveUp),
                }
            }
        }
        self.close(at, len);
        Ok(())
    }
}

/// The canonical bytes of JSON text, or `GiveUp`.
pub(crate) fn canonical_json_bytes(doc: &[u8], kind: Kind) -> Result<Vec<u8>> {
    let tape = parse(doc)?;
    if tape[0].tag != Tag::Obj {
        return Err(GiveUp);
    }
    let mut w = Walker {
        tape: &tape,
        depth: 0,
        members: Vec::new(),
        scratch: Vec::new(),
    };
    let mut out = Vec::with_capacity(doc.len());
    w.object(0, Some(kind.root()), &mut out)?;
    Ok(out)
}

/// A member to write: name, value node, descriptor.
type Member<'t> = (&'t str, usize, Option<&'static Desc>);

struct Walker<'t, 'a> {
    tape: &'t [Node<'a>],
    depth: usize,
    /// Reused member lists (a stack of them, one per object being written).
    members: Vec<Vec<Member<'t>>>,
    /// Reused buffers for list elements that are sorted.
    scratch: Vec<Vec<u8>>,
}

/// One component of a map-list key tuple, as in `canonical` (numbers before strings).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum KeyPart<'a> {
    Num(Decimal),
    Str(Cow<'a, str>),
}

impl<'t, 'a> Walker<'t, 'a> {
    #[inline]
    fn node(&self, i: usize) -> &'t Node<'a> {
        &self.tape[i]
    }

    /// The members of object node `i`: (name, value index).
    fn member_iter(&self, i: usize) -> impl Iterator<Item = (&'t str, usize)> + 't {
        let tape = self.tape;
        let mut at = i + 1;
        (0..tape[i].len).map(move |_| {
            let name: &'t str = &tape[at].text;
            let value = at + 1;
            at = tape[value].end as usize;
            (name, value)
        })
    }

    /// The elements of array node `i`.
    fn element_iter(&self, i: usize) -> impl Iterator<Item = usize> + 't {
        let tape = self.tape;
        let mut at = i + 1;
        (0..tape[i].len).map(move |_| {
            let v = at;
            at = tape[v].end as usize;
            v
        })
    }

    fn dropped(&self, v: usize, desc: Option<&Desc>) -> bool {
        let node = self.node(v);
        match (node.tag, desc) {
            (Tag::Null, _) => true,
            (Tag::Arr, _) => node.len == 0,
            (Tag::Obj, Some(Desc::Map(value))) => self
                .member_iter(v)
                .all(|(_, x)| self.dropped(x, Some(value))),
            _ => false,
        }
    }

    #[inline]
    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(GiveUp);
        }
        Ok(())
    }

    fn value(&mut self, v: usize, desc: Option<&'static Desc>, out: &mut Vec<u8>) -> Result<()> {
        let tag = self.node(v).tag;
        match desc {
            None | Some(Desc::Scalar) => self.generic(v, out),
            Some(Desc::Quantity) => self.quantity(v, out),
            Some(Desc::Object(t)) if tag == Tag::Obj => self.object(v, Some(*t), out),
            Some(Desc::Map(value)) if tag == Tag::Obj => self.map(v, value, out),
            Some(Desc::List(l)) if tag == Tag::Arr => self.list(v, l, out),
            _ => Err(GiveUp),
        }
    }

    fn generic(&mut self, v: usize, out: &mut Vec<u8>) -> Result<()> {
        let node = self.node(v);
        match node.tag {
            Tag::Null => out.extend_from_slice(b"null"),
            Tag::True => out.extend_from_slice(b"true"),
            Tag::False => out.extend_from_slice(b"false"),
            Tag::Num => write_number(&node.text, out)?,
            Tag::Str => json::write_str(&node.text, out),
            Tag::Arr => self.elements(v, None, out)?,
            Tag::Obj => self.object(v, None, out)?,
        }
        Ok(())
    }

    /// Collect the members of object `v` (with their descriptors), sorted by name; a
    /// duplicate name gives up (serde_json keeps the last value at the first position).
    fn sorted_members(
        &mut self,
        v: usize,
        desc_of: impl Fn(&str) -> Option<&'static Desc>,
    ) -> Result<Vec<Member<'t>>> {
        let mut members = self.members.pop().unwrap_or_default();
        members.clear();
        members.extend(self.member_iter(v).map(|(k, x)| (k, x, desc_of(k))));
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        if members.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(GiveUp);
        }
        members.retain(|(_, x, desc)| !self.dropped(*x, *desc));
        Ok(members)
    }

    fn object(&mut self, v: usize, ty: Option<TypeId>, out: &mut Vec<u8>) -> Result<()> {
        let def = ty.map(schema::type_def);
        let members = self.sorted_members(v, |k| def.and_then(|d| d.field(k)))?;
        self.members_out(members, out)
    }

    fn map(&mut self, v: usize, value: &'static Desc, out: &mut Vec<u8>) -> Result<()> {
        let members = self.sorted_members(v, |_| Some(value))?;
        self.members_out(members, out)
    }

    fn members_out(&mut self, members: Vec<Member<'t>>, out: &mut Vec<u8>) -> Result<()> {
        out.push(b'{');
        for (i, (k, x, desc)) in members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json::write_str(k, out);
            out.push(b':');
            self.enter()?;
            self.value(*x, *desc, out)?;
            self.depth -= 1;
        }
        out.push(b'}');
        self.members.push(members);
        Ok(())
    }

    fn list(&mut self, v: usize, l: &'static ListDesc, out: &mut Vec<u8>) -> Result<()> {
        match l.kind {
            ListKind::Atomic | ListKind::Ordered => self.elements(v, Some(&l.item), out),
            ListKind::Set => self.set(v, &l.item, out),
            ListKind::Map => self.map_list(v, l, out),
        }
    }

    fn elements(&mut self, v: usize, item: Option<&'static Desc>, out: &mut Vec<u8>) -> Result<()> {
        out.push(b'[');
        for (i, x) in self.element_iter(v).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.enter()?;
            self.value(x, item, out)?;
            self.depth -= 1;
        }
        out.push(b']');
        Ok(())
    }

    /// Each element canonicalized on its own into one buffer; their ranges in input order.
    fn each_element(
        &mut self,
        v: usize,
        item: &'static Desc,
        buf: &mut Vec<u8>,
    ) -> Result<Vec<(usize, usize)>> {
        let mut ranges = Vec::with_capacity(self.node(v).len as usize);
        for x in self.element_iter(v) {
            let start = buf.len();
            self.enter()?;
            self.value(x, Some(item), buf)?;
            self.depth -= 1;
            ranges.push((start, buf.len()));
        }
        Ok(ranges)
    }

    fn set(&mut self, v: usize, item: &'static Desc, out: &mut Vec<u8>) -> Result<()> {
        let mut buf = self.scratch.pop().unwrap_or_default();
        buf.clear();
        let mut ranges = self.each_element(v, item, &mut buf)?;
        ranges.sort_by(|a, b| buf[a.0..a.1].cmp(&buf[b.0..b.1]));
        join(&buf, &ranges, out);
        self.scratch.push(buf);
        Ok(())
    }

    fn map_list(&mut self, v: usize, l: &'static ListDesc, out: &mut Vec<u8>) -> Result<()> {
        let mut buf = self.scratch.pop().unwrap_or_default();
        buf.clear();
        let ranges = self.each_element(v, &l.item, &mut buf)?;
        let item_type = match l.item {
            Desc::Object(t) => Some(schema::type_def(t)),
            _ => None,
        };
        let mut keyed = Vec::with_capacity(ranges.len());
        for (i, x) in self.element_iter(v).enumerate() {
            let tuple = l
                .keys
                .iter()
                .map(|key| self.key_part(x, key, item_type))
                .collect::<Result<Vec<_>>>()?;
            keyed.push((tuple, i));
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        if keyed
            .windows(2)
            .any(|w| w[0].0.cmp(&w[1].0) == Ordering::Equal)
        {
            return Err(GiveUp);
        }
        let ordered: Vec<(usize, usize)> = keyed.iter().map(|(_, i)| ranges[*i]).collect();
        join(&buf, &ordered, out);
        self.scratch.push(buf);
        Ok(())
    }

    fn key_part(
        &self,
        element: usize,
        key: &'static str,
        item_type: Option<&'static TypeDef>,
    ) -> Result<KeyPart<'t>> {
        let desc = item_type.and_then(|t| t.field(key));
        let found = if self.node(element).tag == Tag::Obj {
            self.member_iter(element)
                .find(|(k, _)| *k == key)
                .map(|(_, x)| x)
                .filter(|x| !self.dropped(*x, desc))
        } else {
            None
        };
        let Some(x) = found else {
            return Ok(match item_type.and_then(|t| t.key_default(key)) {
                Some(KeyDefault::Str(s)) => KeyPart::Str(Cow::Borrowed(s)),
                Some(KeyDefault::Int(n)) => KeyPart::Num(Decimal::from_digits(
                    n < 0,
                    &n.unsigned_abs().to_string(),
                    "",
                    0,
                )),
                None => KeyPart::Str(Cow::Borrowed("")),
            });
        };
        let node = self.node(x);
        let text: &'t str = &node.text;
        Ok(match (node.tag, desc) {
            (Tag::Str, Some(Desc::Quantity)) => {
                let value = quantity::parse(text).map(quantity::canonical_value);
                KeyPart::Str(Cow::Owned(value.unwrap_or_default()))
            }
            (Tag::Str, _) => KeyPart::Str(Cow::Borrowed(text)),
            (Tag::Num, Some(Desc::Quantity)) => {
                let value = Num::from_literal(text)
                    .and_then(|num| quantity::parse(&num.quantity_text()).ok())
                    .map(quantity::canonical_value);
                KeyPart::Str(Cow::Owned(value.unwrap_or_default()))
            }
            (Tag::Num, _) => {
                let num = Num::from_literal(text).ok_or(GiveUp)?;
                let canonical = num.canonical();
                KeyPart::Num(Decimal::parse_json_number(&canonical).unwrap_or_else(Decimal::zero))
            }
            _ => return Err(GiveUp),
        })
    }

    fn quantity(&mut self, v: usize, out: &mut Vec<u8>) -> Result<()> {
        let node = self.node(v);
        let parsed = match node.tag {
            Tag::Str => quantity::parse(&node.text),
            Tag::Num => {
                let num = Num::from_literal(&node.text).ok_or(GiveUp)?;
                quantity::parse(&num.quantity_text())
            }
            _ => return Err(GiveUp),
        };
        let d = parsed.map_err(|_| GiveUp)?;
        json::write_str(&quantity::canonical_value(d), out);
        Ok(())
    }
}

/// A number's canonical text (rule 8); plain integer literals are written as they are.
fn write_number(text: &str, out: &mut Vec<u8>) -> Result<()> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    // JSON integer literals have no leading zeros; `-0` is written `0`.
    if digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()) && digits != "0" {
        out.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    Num::from_literal(text).ok_or(GiveUp)?.write(out);
    Ok(())
}

/// Write `[p0,p1,…]` from ranges of `buf`.
fn join(buf: &[u8], ranges: &[(usize, usize)], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, (s, e)) in ranges.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&buf[*s..*e]);
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::canonical_json_reference_bytes;

    /// The fast path agrees with the reference walker whenever it does not give up.
    fn agrees(doc: &[u8]) -> bool {
        let want = canonical_json_reference_bytes(doc, Kind::PodTemplateSpec);
        match canonical_json_bytes(doc, Kind::PodTemplateSpec) {
            Ok(got) => {
                assert_eq!(
                    Ok(String::from_utf8_lossy(&got).into_owned()),
                    want.map(|w| String::from_utf8_lossy(&w).into_owned()),
                    "{}",
                    String::from_utf8_lossy(doc)
                );
                true
            }
            Err(GiveUp) => false,
        }
    }

    #[test]
    fn golden_inputs_and_fixtures() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut fast = 0;
        for dir in ["testdata/hash-golden", "bench/hash"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "json") {
                    fast += usize::from(agrees(&std::fs::read(&path).unwrap()));
                }
            }
        }
        assert!(fast > 10, "{fast}");
    }

    #[test]
    fn tricky_documents() {
        let taken = [
            r#"{"spec":{"containers":[{"name":"a\u00e9\ud83d\ude42\n\"\\\/","image":"x"}]}}"#,
            r#" { "x" : [ 1 , -0 , -0.0 , 1e2 , 1E-7 , 12345678901234567890123 , 0.1 ] } "#,
            r#"{"x":{"b":null,"a":[],"c":{}},"metadata":{"labels":{"a":null}}}"#,
            r#"{"spec":{"containers":[{"name":"b","ports":[{"containerPort":80},{"containerPort":80.5},{"containerPort":8,"protocol":"UDP"}]},{"name":"a"}]}}"#,
            r#"{"spec":{"overhead":{"cpu":"100m","memory":1024,"x":0.5}}}"#,
            r#"{"metadata":{"finalizers":["b","a","b"]}}"#,
            r#"{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":1e3}}}]}}"#,
        ];
        for doc in taken {
            assert!(agrees(doc.as_bytes()), "{doc}");
        }
        let given_up = [
            "[]",
            "{",
            r#"{"a":1,"a":null}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":01}"#,
            r#"{"a":NaN}"#,
            r#"{"a":1e400}"#,
            r#"{"spec":{"containers":{}}}"#,
            r#"{"spec":{"containers":[{"name":"a"},{"name":"a"}]}}"#,
            r#"{"spec":{"overhead":{"cpu":"abc"}}}"#,
            "{\"a\":\"\t\"}",
            "{} x",
        ];
        for doc in given_up {
            assert!(!agrees(doc.as_bytes()), "{doc}");
        }
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(120), "]".repeat(120));
        assert!(!agrees(deep.as_bytes()));
        let ok = format!("{{\"a\":{}1{}}}", "[".repeat(90), "]".repeat(90));
        assert!(agrees(ok.as_bytes()));
    }
}
