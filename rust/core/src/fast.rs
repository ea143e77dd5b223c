//! The fast path of the canonical form: JSON text parsed into a flat tape of small `Copy`
//! nodes (strings and number literals are offsets into the input, or into one side buffer
//! for strings that had escapes), walked by the same rules as `canonical` straight into one
//! output buffer, in final order (map lists are sorted by key before their elements are
//! written). The tape and the other work buffers are kept per thread and reused.
//!
//! It only ever succeeds with the bytes the reference walker (`canonical`, over
//! `serde_json::Value`) would produce. Anything it does not handle the easy way (any error,
//! a duplicate member name, deep nesting, text `serde_json` might read differently) makes it
//! give up, and the caller runs the reference walker, which then reports the exact error.

use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;

use crate::canonical::MAX_DEPTH;
use crate::decimal::Decimal;
use crate::hash::{fnv1a_64_from, FNV_OFFSET};
use crate::json::{self, Num};
use crate::quantity;
use crate::schema::{self, Desc, KeyDefault, Kind, ListDesc, ListKind, TypeId};

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
/// object each member's name (a `Str` node) then its value.
#[derive(Clone, Copy, Debug)]
struct Node {
    tag: Tag,
    /// A string that had escapes: its text is in the unescaped buffer, not the input.
    esc: bool,
    /// Where the text starts (strings: after the quote; number literals).
    start: u32,
    /// Text length (strings, numbers); number of elements or members (containers).
    len: u32,
    /// The index just past the node's subtree.
    end: u32,
}

/// Deeper than this, the parser gives up (serde_json's own limit is 128).
const PARSE_DEPTH: usize = MAX_DEPTH + 8;

/// Work buffers reused from call to call (per thread).
#[derive(Default)]
struct Buffers {
    tape: Vec<Node>,
    unescaped: String,
    members: Vec<Member>,
    order: Vec<(u32, u32)>,
    scratch: Vec<Vec<u8>>,
    out: Vec<u8>,
}

impl Buffers {
    /// Emptied, and released if a huge document made them large.
    fn reset(&mut self) {
        const KEEP: usize = 1 << 20;
        if self.out.capacity() > KEEP || self.tape.capacity() > KEEP / 16 {
            *self = Buffers::default();
        }
        self.tape.clear();
        self.unescaped.clear();
        self.members.clear();
        self.order.clear();
        self.out.clear();
    }
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::default();
}

struct Parser<'a, 'b> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tape: &'b mut Vec<Node>,
    unescaped: &'b mut String,
}

fn parse<'a>(src: &'a [u8], tape: &mut Vec<Node>, unescaped: &mut String) -> Result<&'a str> {
    let src = std::str::from_utf8(src).map_err(|_| GiveUp)?;
    // Offsets and tape indices are u32.
    if src.len() >= u32::MAX as usize {
        return Err(GiveUp);
    }
    tape.reserve(src.len() / 8 + 16);
    let mut p = Parser {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        tape,
        unescaped,
    };
    p.ws();
    p.value(0)?;
    p.ws();
    if p.pos != p.bytes.len() {
        return Err(GiveUp);
    }
    Ok(src)
}

impl Parser<'_, '_> {
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

    #[inline]
    fn leaf(&mut self, tag: Tag, esc: bool, start: usize, len: usize) {
        let end = self.tape.len() as u32 + 1;
        self.tape.push(Node {
            tag,
            esc,
            start: start as u32,
            len: len as u32,
            end,
        });
    }

    fn literal(&mut self, word: &[u8], tag: Tag) -> Result<()> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            self.leaf(tag, false, 0, 0);
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    fn value(&mut self, depth: usize) -> Result<()> {
        match self.peek().ok_or(GiveUp)? {
            b'"' => self.string(),
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b't' => self.literal(b"true", Tag::True),
            b'f' => self.literal(b"false", Tag::False),
            b'n' => self.literal(b"null", Tag::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(GiveUp),
        }
    }

    #[inline]
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
        self.leaf(Tag::Num, false, start, self.pos - start);
        Ok(())
    }

    /// A string at `"`, as a `Str` leaf: a slice of the input when it has no escape, else
    /// unescaped into the side buffer.
    fn string(&mut self) -> Result<()> {
        self.pos += 1;
        let start = self.pos;
        self.pos = json::find_special(self.bytes, self.pos);
        match self.bytes.get(self.pos) {
            Some(b'"') => {
                self.pos += 1;
                self.leaf(Tag::Str, false, start, self.pos - 1 - start);
                return Ok(());
            }
            Some(b'\\') => {}
            _ => return Err(GiveUp),
        }
        let at = self.unescaped.len();
        self.unescaped.push_str(&self.src[start..self.pos]);
        loop {
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    let len = self.unescaped.len() - at;
                    self.leaf(Tag::Str, true, at, len);
                    return Ok(());
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
                            self.unescaped.push(char::from_u32(c).ok_or(GiveUp)?);
                            continue;
                        }
                        _ => return Err(GiveUp),
                    };
                    self.unescaped.push(c);
                    self.pos += 1;
                }
                Some(0x00..=0x1f) | None => return Err(GiveUp),
                Some(_) => {
                    let run = self.pos;
                    self.pos = json::find_special(self.bytes, self.pos);
                    self.unescaped.push_str(&self.src[run..self.pos]);
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
            esc: false,
            start: 0,
            len: 0,
            end: 0,
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
                self.string()?;
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

/// Run `f` over the per-thread buffers (fresh ones for a nested call, of which there is none
/// today).
fn with_buffers<R>(f: impl FnOnce(&mut Buffers) -> R) -> R {
    BUFFERS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffers) => f(&mut buffers),
        Err(_) => f(&mut Buffers::default()),
    })
}

/// The canonical bytes of JSON text, or `GiveUp`.
pub(crate) fn canonical_json_bytes(doc: &[u8], kind: Kind) -> Result<Vec<u8>> {
    with_buffers(|buffers| {
        canonical_in(doc, kind, buffers, false)?;
        Ok(buffers.out.clone())
    })
}

/// FNV-1a 64 of the canonical bytes of JSON text (`hash::fnv1a_64` of
/// `canonical_json_bytes`), or `GiveUp`.
pub(crate) fn canonical_fnv1a_64(doc: &[u8], kind: Kind) -> Result<u64> {
    with_buffers(|buffers| canonical_in(doc, kind, buffers, true))
}

/// Write the canonical bytes into `buffers.out`; with `hash`, return their FNV-1a 64 (fed
/// while writing), else 0.
fn canonical_in(doc: &[u8], kind: Kind, buffers: &mut Buffers, hash: bool) -> Result<u64> {
    buffers.reset();
    let Buffers {
        tape,
        unescaped,
        members,
        order,
        scratch,
        out,
    } = buffers;
    let src = parse(doc, tape, unescaped)?;
    if tape[0].tag != Tag::Obj {
        return Err(GiveUp);
    }
    out.reserve(doc.len());
    let mut w = Walker {
        src,
        tape,
        unescaped,
        depth: 0,
        members,
        order,
        parts: Vec::new(),
        scratch,
        fnv: hash.then_some(FNV_OFFSET),
        hashed: 0,
        in_set: 0,
    };
    w.object(0, Some(kind.root()), out)?;
    w.feed(out);
    Ok(w.fnv.unwrap_or(0))
}

/// A member to write: its name's first 8 bytes (big-endian, zero-padded: a quick sort key),
/// name node, value node and descriptor.
#[derive(Clone, Copy, Debug)]
struct Member {
    prefix: u64,
    key: u32,
    value: u32,
    desc: Option<&'static Desc>,
}

struct Walker<'t> {
    src: &'t str,
    tape: &'t [Node],
    unescaped: &'t str,
    depth: usize,
    /// Members of the objects being written, a stack of runs (one per object).
    members: &'t mut Vec<Member>,
    /// (position, element node) of the map lists being written, a stack of runs.
    order: &'t mut Vec<(u32, u32)>,
    /// Key tuples of the map lists being written, a stack of runs.
    parts: Vec<KeyPart<'t>>,
    /// Reused buffers for set elements, which are sorted by their bytes.
    scratch: &'t mut Vec<Vec<u8>>,
    /// FNV-1a 64 of `out[..hashed]`, if wanted. The output is written in its final order
    /// (but for set elements, inside `set`: `in_set` > 0), so it is hashed as it grows: the
    /// hash's byte-serial multiply chain then runs alongside the walk, not after it.
    fnv: Option<u64>,
    hashed: usize,
    in_set: usize,
}

/// One component of a map-list key tuple, ordered as in `canonical`: numbers (by value)
/// before strings (by UTF-8 bytes).
#[derive(Debug)]
enum KeyPart<'a> {
    /// A number that is an `i64` (the common case, no heap decimal).
    Int(i64),
    Num(Decimal),
    Str(Cow<'a, str>),
}

impl KeyPart<'_> {
    fn decimal(&self) -> Cow<'_, Decimal> {
        match self {
            KeyPart::Int(n) => Cow::Owned(int_decimal(*n)),
            KeyPart::Num(d) => Cow::Borrowed(d),
            KeyPart::Str(_) => Cow::Owned(Decimal::zero()),
        }
    }
}

impl Ord for KeyPart<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (KeyPart::Int(a), KeyPart::Int(b)) => a.cmp(b),
            (KeyPart::Str(a), KeyPart::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
            (KeyPart::Str(_), _) => Ordering::Greater,
            (_, KeyPart::Str(_)) => Ordering::Less,
            _ => self.decimal().cmp(&other.decimal()),
        }
    }
}

impl PartialOrd for KeyPart<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for KeyPart<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for KeyPart<'_> {}

fn int_decimal(n: i64) -> Decimal {
    Decimal::from_digits(n < 0, &n.unsigned_abs().to_string(), "", 0)
}

impl<'t> Walker<'t> {
    /// Hash what was written to `out` since the last time.
    #[inline]
    fn feed(&mut self, out: &[u8]) {
        if let Some(h) = self.fnv {
            if self.in_set == 0 {
                self.fnv = Some(fnv1a_64_from(h, &out[self.hashed..]));
                self.hashed = out.len();
            }
        }
    }

    #[inline]
    fn node(&self, i: usize) -> Node {
        self.tape[i]
    }

    /// The text of a string or number node.
    #[inline]
    fn text(&self, n: Node) -> &'t str {
        let (start, end) = (n.start as usize, n.start as usize + n.len as usize);
        if n.esc {
            &self.unescaped[start..end]
        } else {
            &self.src[start..end]
        }
    }

    /// Write a string node as a JSON string literal.
    #[inline]
    fn write_string(&self, n: Node, out: &mut Vec<u8>) {
        if n.esc {
            json::write_str(self.text(n), out);
        } else {
            // It stood in the input between quotes without an escape, so it holds no `"`,
            // `\` or control character: `write_str` would write exactly the input's bytes,
            // quotes included.
            let (start, end) = (n.start as usize, n.start as usize + n.len as usize);
            out.extend_from_slice(&self.src.as_bytes()[start - 1..end + 1]);
        }
    }

    /// The members of object node `i`: (name node, value node).
    fn member_iter(&self, i: usize) -> impl Iterator<Item = (usize, usize)> + 't {
        let tape = self.tape;
        let mut at = i + 1;
        (0..tape[i].len).map(move |_| {
            let (name, value) = (at, at + 1);
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

    #[inline]
    fn dropped(&self, v: usize, desc: Option<&Desc>) -> bool {
        let node = self.node(v);
        match node.tag {
            Tag::Null => true,
            Tag::Arr => node.len == 0,
            Tag::Obj => match desc {
                Some(Desc::Map(value)) => self.map_dropped(v, value),
                _ => false,
            },
            _ => false,
        }
    }

    /// A map whose members are all dropped.
    fn map_dropped(&self, v: usize, value: &Desc) -> bool {
        self.member_iter(v)
            .all(|(_, x)| self.dropped(x, Some(value)))
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
            Tag::Num => write_number(self.text(node), out)?,
            Tag::Str => self.write_string(node, out),
            Tag::Arr => self.elements(v, None, out)?,
            Tag::Obj => self.object(v, None, out)?,
        }
        Ok(())
    }

    /// A struct (`ty` from the table) or an unknown object.
    fn object(&mut self, v: usize, ty: Option<TypeId>, out: &mut Vec<u8>) -> Result<()> {
        let base = self.members.len();
        for (k, x) in self.member_iter(v) {
            let name = self.text(self.node(k)).as_bytes();
            let prefix = schema::name_prefix(name);
            self.members.push(Member {
                prefix,
                key: k as u32,
                value: x as u32,
                desc: ty.and_then(|t| schema::field_of(t, name, prefix)),
            });
        }
        self.members_out(base, out)
    }

    /// A map field: like an object, every value described by `value`.
    fn map(&mut self, v: usize, value: &'static Desc, out: &mut Vec<u8>) -> Result<()> {
        let base = self.members.len();
        for (k, x) in self.member_iter(v) {
            let name = self.text(self.node(k)).as_bytes();
            self.members.push(Member {
                prefix: schema::name_prefix(name),
                key: k as u32,
                value: x as u32,
                desc: Some(value),
            });
        }
        self.members_out(base, out)
    }

    /// Write the members pushed from `base` on, sorted by name, leaving out dropped ones; a
    /// duplicate name gives up (serde_json keeps the last value at the first position).
    fn members_out(&mut self, base: usize, out: &mut Vec<u8>) -> Result<()> {
        let (src, tape, unescaped) = (self.src, self.tape, self.unescaped);
        let name = |m: &Member| {
            let n = tape[m.key as usize];
            let (start, end) = (n.start as usize, n.start as usize + n.len as usize);
            if n.esc {
                &unescaped.as_bytes()[start..end]
            } else {
                &src.as_bytes()[start..end]
            }
        };
        let cmp =
            |a: &Member, b: &Member| a.prefix.cmp(&b.prefix).then_with(|| name(a).cmp(name(b)));
        let run = &mut self.members[base..];
        run.sort_unstable_by(cmp);
        if run.windows(2).any(|w| cmp(&w[0], &w[1]) == Ordering::Equal) {
            return Err(GiveUp);
        }
        let end = self.members.len();
        out.push(b'{');
        let mut first = true;
        for i in base..end {
            let m = self.members[i];
            let x = m.value as usize;
            if self.dropped(x, m.desc) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            self.write_string(self.node(m.key as usize), out);
            out.push(b':');
            self.enter()?;
            self.value(x, m.desc, out)?;
            self.depth -= 1;
            self.feed(out);
        }
        out.push(b'}');
        self.members.truncate(base);
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
            self.feed(out);
        }
        out.push(b']');
        Ok(())
    }

    /// A set: each element canonicalized on its own, sorted by those bytes.
    fn set(&mut self, v: usize, item: &'static Desc, out: &mut Vec<u8>) -> Result<()> {
        let mut buf = self.scratch.pop().unwrap_or_default();
        buf.clear();
        let mut ranges = Vec::with_capacity(self.node(v).len as usize);
        self.in_set += 1;
        for x in self.element_iter(v) {
            let start = buf.len();
            self.enter()?;
            self.value(x, Some(item), &mut buf)?;
            self.depth -= 1;
            ranges.push((start, buf.len()));
        }
        self.in_set -= 1;
        ranges.sort_by(|a, b| buf[a.0..a.1].cmp(&buf[b.0..b.1]));
        out.push(b'[');
        for (i, (s, e)) in ranges.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&buf[*s..*e]);
        }
        out.push(b']');
        self.scratch.push(buf);
        Ok(())
    }

    /// A map list: the elements' key tuples first, then the elements written in key order
    /// (a duplicate key gives up).
    fn map_list(&mut self, v: usize, l: &'static ListDesc, out: &mut Vec<u8>) -> Result<()> {
        let item_type = match l.item {
            Desc::Object(t) => Some(t),
            _ => None,
        };
        let k = l.keys.len();
        let (parts_base, order_base) = (self.parts.len(), self.order.len());
        for (i, x) in self.element_iter(v).enumerate() {
            for key in l.keys {
                let part = self.key_part(x, key, item_type)?;
                self.parts.push(part);
            }
            self.order.push((i as u32, x as u32));
        }
        let parts = &self.parts[parts_base..];
        let tuple = |i: u32| &parts[i as usize * k..i as usize * k + k];
        let run = &mut self.order[order_base..];
        run.sort_unstable_by(|a, b| tuple(a.0).cmp(tuple(b.0)));
        if run.windows(2).any(|w| tuple(w[0].0) == tuple(w[1].0)) {
            return Err(GiveUp);
        }
        let end = self.order.len();
        out.push(b'[');
        for i in order_base..end {
            if i > order_base {
                out.push(b',');
            }
            let x = self.order[i].1 as usize;
            self.enter()?;
            self.value(x, Some(&l.item), out)?;
            self.depth -= 1;
            self.feed(out);
        }
        out.push(b']');
        self.order.truncate(order_base);
        self.parts.truncate(parts_base);
        Ok(())
    }

    fn key_part(
        &self,
        element: usize,
        key: &'static str,
        item_type: Option<TypeId>,
    ) -> Result<KeyPart<'t>> {
        let name = key.as_bytes();
        let desc = item_type.and_then(|t| schema::field_of(t, name, schema::name_prefix(name)));
        let found = if self.node(element).tag == Tag::Obj {
            self.member_iter(element)
                .find(|(k, _)| self.text(self.node(*k)) == key)
                .map(|(_, x)| x)
                .filter(|x| !self.dropped(*x, desc))
        } else {
            None
        };
        let Some(x) = found else {
            let def = item_type.and_then(|t| schema::type_def(t).key_default(key));
            return Ok(match def {
                Some(KeyDefault::Str(s)) => KeyPart::Str(Cow::Borrowed(s)),
                Some(KeyDefault::Int(n)) => KeyPart::Int(n),
                None => KeyPart::Str(Cow::Borrowed("")),
            });
        };
        let node = self.node(x);
        let text = self.text(node);
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
            (Tag::Num, _) => match text.parse::<i64>() {
                // As `Num::from_literal`: an i64 literal is that integer exactly.
                Ok(n) => KeyPart::Int(n),
                Err(_) => {
                    let num = Num::from_literal(text).ok_or(GiveUp)?;
                    let canonical = num.canonical();
                    KeyPart::Num(
                        Decimal::parse_json_number(&canonical).unwrap_or_else(Decimal::zero),
                    )
                }
            },
            _ => return Err(GiveUp),
        })
    }

    fn quantity(&mut self, v: usize, out: &mut Vec<u8>) -> Result<()> {
        let node = self.node(v);
        let text = self.text(node);
        let parsed = match node.tag {
            Tag::Str => {
                if quantity::write_canonical_json_fast(text, out) {
                    return Ok(());
                }
                quantity::parse(text)
            }
            Tag::Num => {
                // An integer literal is its own quantity text (`Num::quantity_text` writes
                // the same integer; `-0` and `0` are both zero).
                let integer = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
                if integer && quantity::write_canonical_json_fast(text, out) {
                    return Ok(());
                }
                let num = Num::from_literal(text).ok_or(GiveUp)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::canonical_json_reference_bytes;

    /// The fast path agrees with the reference walker whenever it does not give up.
    fn agrees(doc: &[u8]) -> bool {
        let want = canonical_json_reference_bytes(doc, Kind::PodTemplateSpec);
        match canonical_json_bytes(doc, Kind::PodTemplateSpec) {
            Ok(got) => {
                let fnv = canonical_fnv1a_64(doc, Kind::PodTemplateSpec).unwrap();
                assert_eq!(fnv, crate::hash::fnv1a_64(&got));
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
