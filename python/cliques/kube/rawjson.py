"""JSON the typed decoders refuse, read without recursion: the informer's fallback.

msgspec decodes (and even skips) nested JSON recursively, so an object nested deeper than
the interpreter's recursion limit (~1,000 levels) raises `RecursionError`, while the API
server stores objects nested up to 10,000 levels in a free-form field (a pod template is
`x-kubernetes-preserve-unknown-fields`). One such object must not fail a list page or a
watch for every other object. Here, on the slow path only (after a typed decode failed):

- `split_items(page)`: a list page's `metadata` and its items as raw bytes, one by one;
- `split_event(line)`: a watch event's type and its object as raw bytes;
- `meta_of(obj)`: the identity of an object (name, namespace, uid, resourceVersion,
  generation) read from its `metadata` alone.

A scanner finds strings and brackets with one regular expression and tracks the depth in a
counter, so nothing here recurses.
"""

from __future__ import annotations

import re

import msgspec

#: A JSON string (with escapes) or one structural character.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class Meta(msgspec.Struct, kw_only=True, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _ListHead(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _EventHead(msgspec.Struct):
    type: str = ""


_LIST_HEAD = msgspec.json.Decoder(_ListHead)
_EVENT_HEAD = msgspec.json.Decoder(_EventHead)


def _top_level_member(doc: bytes, key: bytes) -> tuple[int, int] | None:
    """(start, end) of the value of `key` in the top-level object `doc`, else None."""
    depth = 0
    want = b'"' + key + b'"'
    pending_key = False
    start = -1
    for m in _TOKEN.finditer(doc):
        tok = m.group()
        if tok in (b"{", b"["):
            depth += 1
        elif tok in (b"}", b"]"):
            depth -= 1
            if start >= 0 and depth == 1:
                return start, m.end()
            if depth == 0:
                return (start, m.start()) if start >= 0 else None
        elif depth == 1 and start >= 0 and tok == b",":
            return start, m.start()  # a scalar value ended
        elif depth == 1 and tok == want:
            pending_key = True
        elif pending_key and tok == b":":
            pending_key = False
            start = m.end()
        elif depth == 1:
            pending_key = False
    return None


def _prefix_object(doc: bytes, before: bytes) -> bytes:
    """The top-level object cut just before member `before` (closed again), or `doc`."""
    span = _top_level_member(doc, before)
    if span is None:
        return doc
    cut = doc.rfind(b",", 0, span[0])
    return doc[:cut] + b"}" if cut > 0 else doc


def _without_member(doc: bytes, key: bytes) -> bytes:
    """The object `doc` without its top-level member `key`."""
    span = _top_level_member(doc, key)
    if span is None:
        return doc
    cut = doc.rfind(b",", 0, span[0])
    if cut > 0 and doc.rfind(b"{", 0, span[0]) < cut:
        return doc[:cut] + doc[span[1] :]
    opening = doc.find(b"{") + 1  # the first member: drop it and the comma after it
    rest = doc[span[1] :].lstrip()
    return doc[:opening] + (rest[1:] if rest.startswith(b",") else rest)


def meta_of(obj: bytes) -> Meta | None:
    """The identity of an object whose body does not decode (None when even that fails).

    `metadata.managedFields` is left out: its `fieldsV1` mirrors the object's own nesting."""
    span = _top_level_member(obj, b"metadata")
    if span is None:
        return None
    try:
        return msgspec.json.decode(
            _without_member(obj[span[0] : span[1]].strip(), b"managedFields"), type=Meta
        )
    except _DECODE_ERRORS:
        return None


def split_items(page: bytes) -> tuple[str, str, list[bytes]]:
    """(resourceVersion, continue, [raw item, ...]) of a list page, without recursion."""
    try:
        head = _LIST_HEAD.decode(_prefix_object(page, b"items")).metadata
    except _DECODE_ERRORS:
        head = _ListMeta()
    span = _top_level_member(page, b"items")
    items: list[bytes] = []
    if span is not None:
        body = page[span[0] : span[1]]
        depth = 0
        start = -1
        for m in _TOKEN.finditer(body):
            tok = m.group()
            if tok in (b"{", b"["):
                depth += 1
                if depth == 2 and tok == b"{":
                    start = m.start()
            elif tok in (b"}", b"]"):
                if depth == 2 and start >= 0:
                    items.append(body[start : m.end()])
                    start = -1
                depth -= 1
    return head.resource_version, head.continue_, items


def split_event(line: bytes) -> tuple[str, bytes]:
    """(type, raw object) of one watch event line, without recursion."""
    span = _top_level_member(line, b"object")
    try:
        kind = _EVENT_HEAD.decode(_prefix_object(line, b"object")).type
    except _DECODE_ERRORS:
        kind = ""
    if span is None:
        raise msgspec.DecodeError("watch event without an object")
    return kind, line[span[0] : span[1]].strip()
