//! JSON text as a tape, and the tape as an [`Input`] of the walker.
//!
//! The text is parsed into a flat tape of small `Copy` nodes (strings and number literals
//! are offsets into the input, or into one side buffer for strings that had escapes); the
//! walker then reads values by tape index. The tape and the walker's buffers are kept per
//! thread and reused.
//!
//! The parser gives up (`GiveUp`) on anything it does not read the easy way (invalid JSON,
//! deep nesting, a lone surrogate escape, …): `serde_json` then reads the text, and the
//! reference walk over its `Value` decides, with its exact error.

use std::borrow::Cow;
use std::cell::RefCell;

use super::fail::Fail;
use super::input::{Input, Number, Shape};
use super::sink::Sink;
use super::walk::Scratch;
use super::MAX_DEPTH;
use crate::json;

/// The parser gave up.
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

/// The tape of a document and the text its nodes point into.
#[derive(Clone, Copy)]
pub(crate) struct Tape<'t> {
    src: &'t str,
    tape: &'t [Node],
    unescaped: &'t str,
}

impl<'t> Tape<'t> {
    #[inline(always)]
    fn node(&self, i: u32) -> Node {
        self.tape[i as usize]
    }

    /// The text of a string or number node.
    #[inline]
    fn slice(&self, n: Node) -> &'t str {
        let (start, end) = (n.start as usize, n.start as usize + n.len as usize);
        if n.esc {
            &self.unescaped[start..end]
        } else {
            &self.src[start..end]
        }
    }
}

impl<'t> Input<'t> for Tape<'t> {
    type Node = u32;

    #[inline(always)]
    fn shape(&self, n: u32) -> Shape {
        let node = self.node(n);
        match node.tag {
            Tag::Null => Shape::Null,
            Tag::True => Shape::Bool(true),
            Tag::False => Shape::Bool(false),
            Tag::Num => Shape::Num,
            Tag::Str => Shape::Str,
            Tag::Arr => Shape::List(node.len as usize),
            Tag::Obj => Shape::Object(node.len as usize),
        }
    }

    #[inline(always)]
    fn text(&self, n: u32) -> &'t str {
        self.slice(self.node(n))
    }

    #[inline]
    fn number(&self, n: u32) -> Number<'t> {
        Number::Literal(Cow::Borrowed(self.text(n)))
    }

    fn members(&self, n: u32) -> impl Iterator<Item = (u32, u32)> + 't {
        let tape = self.tape;
        let mut at = n + 1;
        (0..tape[n as usize].len).map(move |_| {
            let (name, value) = (at, at + 1);
            at = tape[value as usize].end;
            (name, value)
        })
    }

    fn elements(&self, n: u32) -> impl Iterator<Item = u32> + 't {
        let tape = self.tape;
        let mut at = n + 1;
        (0..tape[n as usize].len).map(move |_| {
            let v = at;
            at = tape[v as usize].end;
            v
        })
    }

    #[inline(always)]
    fn write_str<S: Sink>(&self, n: u32, spare: &mut Vec<u8>, out: &mut S) {
        let node = self.node(n);
        if node.esc {
            let text = self.slice(node);
            out.via_vec(spare, |v| json::write_str(text, v));
        } else {
            // It stood in the input between quotes without an escape, so it holds no `"`,
            // `\` or control character: `write_str` would write exactly the input's bytes,
            // quotes included.
            let (start, end) = (node.start as usize, node.start as usize + node.len as usize);
            out.bytes(&self.src.as_bytes()[start - 1..end + 1]);
        }
    }
}

/// Buffers reused from call to call (per thread).
#[derive(Default)]
struct Buffers {
    tape: Vec<Node>,
    unescaped: String,
    scratch: Scratch<u32>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::default();
}

/// Walk JSON text into `out`: `Fail::GiveUp` when the parser or the walk gives up.
pub(crate) fn walk_text<S: Sink>(
    doc: &[u8],
    kind: crate::schema::Kind,
    out: S,
) -> std::result::Result<S, Fail> {
    let run = |buffers: &mut Buffers| {
        const KEEP: usize = 1 << 16;
        if buffers.tape.capacity() > KEEP {
            buffers.tape = Vec::new();
        }
        buffers.tape.clear();
        buffers.unescaped.clear();
        let src =
            parse(doc, &mut buffers.tape, &mut buffers.unescaped).map_err(|_| Fail::GiveUp)?;
        let tape = Tape {
            src,
            tape: &buffers.tape,
            unescaped: &buffers.unescaped,
        };
        super::walk::walk(tape, 0, kind, &mut buffers.scratch, out)
    };
    // A nested call (there is none today) gets fresh buffers.
    BUFFERS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffers) => run(&mut buffers),
        Err(_) => run(&mut Buffers::default()),
    })
}
