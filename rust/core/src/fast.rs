//! The fast path of the canonical form: JSON text parsed into a flat tape of small `Copy`
//! nodes (strings and number literals are offsets into the input, or into one side buffer
//! for strings that had escapes), walked by the same rules as `canonical` straight into a
//! sink, in final order (map lists are sorted by key before their elements are written): one
//! output buffer, or for the template hash FNV-1a 64 itself, fed token by token so that its
//! byte-serial multiply chain overlaps the walk and no bytes are stored. The tape and the
//! other work buffers are kept per thread and reused.
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
    /// Reused for text written by helpers that take a `Vec<u8>`, when hashing.
    spare: Vec<u8>,
    out: Vec<u8>,
}

impl Buffers {
    /// Emptied, and released if a huge document made them large.
    fn reset(&mut self) {
        const KEEP: usize = 1 << 20;
        if self.out.capacity() > KEEP
            || self.spare.capacity() > KEEP
            || self.tape.capacity() > KEEP / 16
        {
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
    let first = p.next().ok_or(GiveUp)?;
    p.value(first, 0)?;
    if p.next().is_some() {
        return Err(GiveUp);
    }
    Ok(src)
}

impl Parser<'_, '_> {
    /// Skip whitespace; the byte after it (`None` at the end).
    #[inline]
    fn next(&mut self) -> Option<u8> {
        loop {
            let b = *self.bytes.get(self.pos)?;
            if b > b' ' {
                return Some(b);
            }
            match b {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' => {
                    self.pos += 1;
                    self.indent();
                }
                _ => return Some(b),
            }
        }
    }

    /// Skip the spaces of an indentation, eight at a time.
    #[inline]
    fn indent(&mut self) {
        while let Some(chunk) = self.bytes.get(self.pos..self.pos + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let x = u64::from_le_bytes(word) ^ 0x2020_2020_2020_2020;
            if x != 0 {
                self.pos += (x.trailing_zeros() / 8) as usize;
                return;
            }
            self.pos += 8;
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

    /// The value at `pos`, whose first byte is `first`.
    fn value(&mut self, first: u8, depth: usize) -> Result<()> {
        match first {
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
    #[inline(always)]
    fn string(&mut self) -> Result<()> {
        self.pos += 1;
        let start = self.pos;
        self.pos = json::find_special(self.bytes, self.pos);
        if self.bytes.get(self.pos) == Some(&b'"') {
            self.pos += 1;
            self.leaf(Tag::Str, false, start, self.pos - 1 - start);
            Ok(())
        } else {
            self.escaped_string(start)
        }
    }

    /// The rest of a string at `start` that stopped at `pos` on something other than its
    /// closing quote: an escape (else give up).
    #[inline(never)]
    fn escaped_string(&mut self, start: usize) -> Result<()> {
        if self.bytes.get(self.pos) != Some(&b'\\') {
            return Err(GiveUp);
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
        let mut len = 0;
        let mut b = self.next().ok_or(GiveUp)?;
        if b != b']' {
            loop {
                self.value(b, depth)?;
                len += 1;
                match self.next() {
                    Some(b',') => {
                        self.pos += 1;
                        b = self.next().ok_or(GiveUp)?;
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
        let mut len = 0;
        let mut b = self.next();
        if b != Some(b'}') {
            loop {
                if b != Some(b'"') {
                    return Err(GiveUp);
                }
                self.string()?;
                if self.next() != Some(b':') {
                    return Err(GiveUp);
                }
                self.pos += 1;
                let first = self.next().ok_or(GiveUp)?;
                self.value(first, depth)?;
                len += 1;
                match self.next() {
                    Some(b',') => {
                        self.pos += 1;
                        b = self.next();
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

/// With `hash`, the FNV-1a 64 of the canonical bytes (hashed as they are produced, never
/// stored); else the canonical bytes written into `buffers.out`, and 0.
fn canonical_in(doc: &[u8], kind: Kind, buffers: &mut Buffers, hash: bool) -> Result<u64> {
    buffers.reset();
    let Buffers {
        tape,
        unescaped,
        members,
        order,
        scratch,
        spare,
        out,
    } = buffers;
    let src = parse(doc, tape, unescaped)?;
    if tape[0].tag != Tag::Obj {
        return Err(GiveUp);
    }
    let mut w = Walker {
        src,
        tape,
        unescaped,
        depth: 0,
        members,
        order,
        parts: Vec::new(),
        scratch,
        spare,
    };
    if hash {
        Ok(w.object(0, Some(kind.root()), Fnv(FNV_OFFSET))?.0)
    } else {
        out.reserve(doc.len());
        w.object(0, Some(kind.root()), out)?;
        Ok(0)
    }
}

/// Where the canonical bytes go: a buffer, or straight into FNV-1a 64 ([`Fnv`]). The walker
/// passes its sink by value and gets it back, so the hash state stays in a register: the
/// hash's byte-serial multiply chain then runs alongside the walk, fed in small pieces (no
/// buffer, no store and reload of the state between pieces).
trait Sink {
    fn byte(&mut self, b: u8);
    fn bytes(&mut self, s: &[u8]);
    /// Run `f`, which writes to a `Vec<u8>`, and take what it wrote (`buf` is a spare).
    fn via_vec<R>(&mut self, buf: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> R) -> R;
}

impl Sink for &mut Vec<u8> {
    #[inline]
    fn byte(&mut self, b: u8) {
        self.push(b);
    }

    #[inline]
    fn bytes(&mut self, s: &[u8]) {
        self.extend_from_slice(s);
    }

    #[inline]
    fn via_vec<R>(&mut self, _: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        f(self)
    }
}

/// FNV-1a 64 of the bytes written so far.
struct Fnv(u64);

impl Sink for Fnv {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }

    #[inline(always)]
    fn bytes(&mut self, s: &[u8]) {
        self.0 = fnv1a_64_from(self.0, s);
    }

    #[inline]
    fn via_vec<R>(&mut self, buf: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        buf.clear();
        let r = f(buf);
        self.bytes(buf);
        r
    }
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
    /// Spare buffer for `Sink::via_vec`.
    spare: &'t mut Vec<u8>,
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
    #[inline(always)]
    fn write_string<S: Sink>(&mut self, n: Node, out: &mut S) {
        if n.esc {
            self.write_escaped(n, out);
        } else {
            // It stood in the input between quotes without an escape, so it holds no `"`,
            // `\` or control character: `write_str` would write exactly the input's bytes,
            // quotes included.
            let (start, end) = (n.start as usize, n.start as usize + n.len as usize);
            out.bytes(&self.src.as_bytes()[start - 1..end + 1]);
        }
    }

    /// A string that had escapes: written escaped again, the canonical way.
    #[inline(never)]
    fn write_escaped<S: Sink>(&mut self, n: Node, out: &mut S) {
        let text = self.text(n);
        out.via_vec(self.spare, |v| json::write_str(text, v));
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

    #[inline(always)]
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
    #[inline(never)]
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

    /// `value` one level down; a plain string is written here, without the call.
    #[inline(always)]
    fn child<S: Sink>(&mut self, v: usize, desc: Option<&'static Desc>, mut out: S) -> Result<S> {
        self.enter()?;
        let node = self.node(v);
        if node.tag == Tag::Str && matches!(desc, None | Some(Desc::Scalar)) {
            self.write_string(node, &mut out);
        } else {
            out = self.value(v, desc, out)?;
        }
        self.depth -= 1;
        Ok(out)
    }

    fn value<S: Sink>(&mut self, v: usize, desc: Option<&'static Desc>, out: S) -> Result<S> {
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

    fn generic<S: Sink>(&mut self, v: usize, mut out: S) -> Result<S> {
        let node = self.node(v);
        match node.tag {
            Tag::Null => out.bytes(b"null"),
            Tag::True => out.bytes(b"true"),
            Tag::False => out.bytes(b"false"),
            Tag::Num => self.write_number(self.text(node), &mut out)?,
            Tag::Str => self.write_string(node, &mut out),
            Tag::Arr => return self.elements(v, None, out),
            Tag::Obj => return self.object(v, None, out),
        }
        Ok(out)
    }

    /// A struct (`ty` from the table) or an unknown object.
    fn object<S: Sink>(&mut self, v: usize, ty: Option<TypeId>, out: S) -> Result<S> {
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
    fn map<S: Sink>(&mut self, v: usize, value: &'static Desc, out: S) -> Result<S> {
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
    fn members_out<S: Sink>(&mut self, base: usize, mut out: S) -> Result<S> {
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
        out.byte(b'{');
        let mut first = true;
        for i in base..end {
            let m = self.members[i];
            let x = m.value as usize;
            if self.dropped(x, m.desc) {
                continue;
            }
            if !first {
                out.byte(b',');
            }
            first = false;
            self.write_string(self.node(m.key as usize), &mut out);
            out.byte(b':');
            out = self.child(x, m.desc, out)?;
        }
        out.byte(b'}');
        self.members.truncate(base);
        Ok(out)
    }

    fn list<S: Sink>(&mut self, v: usize, l: &'static ListDesc, out: S) -> Result<S> {
        match l.kind {
            ListKind::Atomic | ListKind::Ordered => self.elements(v, Some(&l.item), out),
            ListKind::Set => self.set(v, &l.item, out),
            ListKind::Map => self.map_list(v, l, out),
        }
    }

    fn elements<S: Sink>(
        &mut self,
        v: usize,
        item: Option<&'static Desc>,
        mut out: S,
    ) -> Result<S> {
        out.byte(b'[');
        for (i, x) in self.element_iter(v).enumerate() {
            if i > 0 {
                out.byte(b',');
            }
            out = self.child(x, item, out)?;
        }
        out.byte(b']');
        Ok(out)
    }

    /// A set: each element canonicalized on its own, sorted by those bytes.
    fn set<S: Sink>(&mut self, v: usize, item: &'static Desc, mut out: S) -> Result<S> {
        let mut buf = self.scratch.pop().unwrap_or_default();
        buf.clear();
        let mut ranges = Vec::with_capacity(self.node(v).len as usize);
        for x in self.element_iter(v) {
            let start = buf.len();
            self.enter()?;
            self.value(x, Some(item), &mut buf)?;
            self.depth -= 1;
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
        self.scratch.push(buf);
        Ok(out)
    }

    /// A map list: the elements' key tuples first, then the elements written in key order
    /// (a duplicate key gives up).
    fn map_list<S: Sink>(&mut self, v: usize, l: &'static ListDesc, mut out: S) -> Result<S> {
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
        out.byte(b'[');
        for i in order_base..end {
            if i > order_base {
                out.byte(b',');
            }
            let x = self.order[i].1 as usize;
            out = self.child(x, Some(&l.item), out)?;
        }
        out.byte(b']');
        self.order.truncate(order_base);
        self.parts.truncate(parts_base);
        Ok(out)
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

    fn quantity<S: Sink>(&mut self, v: usize, mut out: S) -> Result<S> {
        let node = self.node(v);
        let text = self.text(node);
        let parsed = match node.tag {
            Tag::Str => {
                if out.via_vec(self.spare, |v| quantity::write_canonical_json_fast(text, v)) {
                    return Ok(out);
                }
                quantity::parse(text)
            }
            Tag::Num => {
                // An integer literal is its own quantity text (`Num::quantity_text` writes
                // the same integer; `-0` and `0` are both zero).
                let integer = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
                if integer
                    && out.via_vec(self.spare, |v| quantity::write_canonical_json_fast(text, v))
                {
                    return Ok(out);
                }
                let num = Num::from_literal(text).ok_or(GiveUp)?;
                quantity::parse(&num.quantity_text())
            }
            _ => return Err(GiveUp),
        };
        let d = parsed.map_err(|_| GiveUp)?;
        let value = quantity::canonical_value(d);
        out.via_vec(self.spare, |v| json::write_str(&value, v));
        Ok(out)
    }

    /// A number's canonical text (rule 8); plain integer literals are written as they are.
    fn write_number<S: Sink>(&mut self, text: &str, out: &mut S) -> Result<()> {
        let digits = text.strip_prefix('-').unwrap_or(text);
        // JSON integer literals have no leading zeros; `-0` is written `0`.
        if digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()) && digits != "0" {
            out.bytes(text.as_bytes());
            return Ok(());
        }
        let num = Num::from_literal(text).ok_or(GiveUp)?;
        out.via_vec(self.spare, |v| num.write(v));
        Ok(())
    }
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
            r#"{"metadata":{"finalizers":["b\"","a\u0001","\u00e9"]},"x":["\t",-0.5,1e-7]}"#,
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
