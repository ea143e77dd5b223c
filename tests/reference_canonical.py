"""A small pure-Python reference implementation of docs/hashing.md (algorithm version 1).

Used only by the tests (differential tests against the Rust core) and by the benchmark
(`cliques bench hash`, line "pure-Python canonical"). It favours being easy to check against
the specification over speed: every rule of the spec is one small function below, named
after it, and quantities use exact arithmetic (`fractions.Fraction`).

    ref = Reference.default()           # reads testdata/pod-schema.json
    ref.canonical_json(b'{"spec": {"containers": [{"name": "a"}]}}')
    ref.template_hash({"spec": {...}})

docs/hashing.md first left the points below open; the reference and the core made the
same choices, which the spec now states (tests/unit/test_hashing_differential.py checks
each one):

- numbers follow Python's `json` data model: a JSON literal without `.`/`e`/`E` is an
  exact integer of any size, any other literal an IEEE double (so JSON bytes and the dict
  `json.loads` makes of them always agree). Rule 8 then writes an integral double as the
  exact integer it is (`1e23` -> `99999999999999991611392`) and any other double as
  Python's `repr` does (`0.1`, `1e-05`); a quantity given as a double is parsed from its
  `repr` (`0.1` -> `"0.1"`);
- the quantity grammar is Kubernetes' (`1.` and `.5` are quantities; `-`, `+`, `.` not);
- a value whose JSON type does not fit an `object`, `map` or `list` descriptor raises
  `ValueError` with its path; a `scalar` field takes any JSON value (generic rules);
- list positions are never removed: `null` elements are kept (written `null`; an element
  of an object list must be an object) and an empty list or map element is written as
  `[]` / `{}`;
- a `map`-list key value must be a string or a number; `ordered` lists are not checked
  for duplicate keys (only `map` lists are, rule 4);
- values nested deeper than 100 levels (path segments) are refused;
- NaN / Infinity (JSON extensions Python accepts) and lone surrogates are refused;
- of several errors, the first met is reported: members in sorted key order, list elements
  in input order, a map list's key checks after all of its elements; a Python value that
  is not JSON (a set, bytes, a non-str key) raises `TypeError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT / "testdata" / "pod-schema.json"

# Kubernetes' SafeEncodeString alphabet (k8s.io/apimachinery/pkg/util/rand).
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
FNV32_OFFSET = 0x811C9DC5
FNV32_PRIME = 0x01000193


def fnv1a_64(data: bytes) -> int:
    h = FNV64_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV64_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def fnv1a_32(data: bytes) -> int:
    h = FNV32_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """`rand.SafeEncodeString`: each byte mapped to alphabet[byte % 27]."""
    return "".join(SAFE_ALPHABET[b % len(SAFE_ALPHABET)] for b in text.encode())


def hash_of_canonical(canonical: bytes) -> str:
    """The hash section of the spec: FNV-1a 64, decimal, SafeEncodeString."""
    return safe_encode(str(fnv1a_64(canonical)))


# ---------------------------------------------------------------------------------------
# Rule 7: quantities.

# Kubernetes' number: digits, digits ".", digits "." digits, or "." digits.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?=\.?[0-9])(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE](?P<exp>[+-]?[0-9]+))?"
)
_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
NANO = 10**9


def parse_quantity(text: str) -> Fraction:
    """The exact value of a quantity string, or ValueError (the caller adds the path)."""
    m = _QUANTITY.fullmatch(text)
    if m is None:
        raise ValueError(f"invalid quantity {json.dumps(text, ensure_ascii=False)}")
    frac = m["frac"] or ""
    value = Fraction(int((m["int"] or "0") + frac), 10 ** len(frac))
    if m["exp"] is not None:
        exp = int(m["exp"])
        if abs(exp) > 100:
            raise ValueError(f"invalid quantity {json.dumps(text)}: exponent out of range")
        value *= Fraction(10) ** exp
    else:
        value *= _SUFFIX[m["suffix"] or ""]
    return -value if m["sign"] == "-" else value


def format_quantity(value: Fraction) -> str:
    """Round away from zero to 9 fractional digits; plain decimal, no trailing zeros."""
    scaled = value * NANO
    units = math.ceil(abs(scaled))  # away from zero for either sign
    if units == 0:
        return "0"
    whole, nanos = divmod(units, NANO)
    text = str(whole)
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return "-" + text if value < 0 else text


# ---------------------------------------------------------------------------------------
# Rules 8-10: writing scalars.


class Number(str):
    """A canonical JSON number, kept as the text to be written."""

    __slots__ = ()


def format_double(x: float) -> str:
    """Rule 8 for a non-quantity number that is an IEEE double."""
    if not math.isfinite(x):
        raise ValueError(f"number out of range: {x!r}")
    if x.is_integer():
        return str(int(x))  # the exact integer; -0.0 -> "0"
    return repr(x)  # shortest round-trip digits


def dump_string(s: str) -> str:
    """Rule 9. Python's json escapes exactly `"`, `\\` and U+0000-U+001F, as `\\n \\r \\t \\b
    \\f` or lower-case `\\u00xx`, and (with ensure_ascii=False) writes the rest as it is."""
    return json.dumps(s, ensure_ascii=False)


def dump(value: Any) -> str:
    """Rule 10: compact JSON of an already canonical value (object keys sorted here)."""
    if isinstance(value, Number):
        return str.__str__(value)
    if isinstance(value, str):
        return dump_string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        keys = sorted(value)  # rule 1: code point order is UTF-8 byte order
        return "{" + ",".join(dump_string(k) + ":" + dump(value[k]) for k in keys) + "}"
    assert isinstance(value, list)
    return "[" + ",".join(dump(v) for v in value) + "]"


def utf8(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"string is not valid UTF-8 (lone surrogate): {s!r}") from exc


# ---------------------------------------------------------------------------------------
# Input.


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON number {name}")


def check_python_types(v: Any, path: str = "") -> None:
    """A mapping from Python must hold JSON values only (else TypeError), checked first."""
    if isinstance(v, Mapping):
        for key, item in v.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"{path or '(top)'}: object keys must be str, got {type(key).__name__}"
                )
            check_python_types(item, _join(path, key))
    elif _is_list(v):
        for i, item in enumerate(v):
            check_python_types(item, f"{path}[{i}]")
    elif not (v is None or isinstance(v, str | int | float)):  # bool is an int
        raise TypeError(f"{path}: unsupported type {type(v).__name__}")


def parse_document(doc: bytes | str | Mapping[str, Any]) -> Any:
    if isinstance(doc, Mapping):
        try:
            check_python_types(doc)
        except RecursionError as exc:
            raise ValueError("input nested too deeply") from exc
        return doc
    if isinstance(doc, bytes | bytearray | memoryview):
        try:
            doc = bytes(doc).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"input is not valid UTF-8: {exc}") from exc
    if not isinstance(doc, str):
        raise TypeError(f"expected a mapping, JSON bytes or str, got {type(doc).__name__}")
    try:
        return json.loads(doc, parse_constant=_reject_constant)
    except RecursionError as exc:
        raise ValueError("input nested too deeply") from exc


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_DROP = object()  # a value that is left out of its parent

# Not in docs/hashing.md: the core refuses values nested deeper than this (path segments).
MAX_DEPTH = 100


class Reference:
    """The canonicalizer for one schema table (the layout of testdata/pod-schema.json)."""

    def __init__(self, table: Mapping[str, Any]) -> None:
        self.table = table
        self.roots: Mapping[str, str] = table["roots"]
        self.types: Mapping[str, Mapping[str, Any]] = table["types"]
        self.key_defaults: Mapping[str, Mapping[str, Any]] = table.get("key_defaults", {})

    @classmethod
    def load(cls, path: Path = SCHEMA_PATH) -> Reference:
        return cls(json.loads(path.read_text()))

    _default: Reference | None = None

    @classmethod
    def default(cls) -> Reference:
        if cls._default is None:
            cls._default = cls.load()
        return cls._default

    # -- public API (same shape as cliques.hashing) --------------------------------

    def canonical_json(
        self, doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec"
    ) -> bytes:
        root = self.roots.get(kind)
        if root is None:
            raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(self.roots)}")
        value = parse_document(doc)
        if not isinstance(value, Mapping):
            raise ValueError("the document must be a JSON object at the top")
        try:
            out = self._object(value, self.types[root], "", 0)
        except RecursionError as exc:
            raise ValueError("input nested too deeply") from exc
        return utf8(dump(out))

    def template_hash(
        self, doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec"
    ) -> str:
        return hash_of_canonical(self.canonical_json(doc, kind))

    # -- the walk ------------------------------------------------------------------
    # `depth` is the number of path segments (members and indices) down to the value.

    def _value(self, v: Any, desc: Mapping[str, Any] | None, path: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"{path}: nested deeper than {MAX_DEPTH} levels")
        kind = None if desc is None else desc["kind"]
        if kind == "quantity":
            return self._quantity(v, path)
        if kind == "object":
            if not isinstance(v, Mapping):
                raise ValueError(f"{path}: expected an object, got {_type(v)}")
            return self._object(v, self.types.get(desc["ref"], {}), path, depth)  # type: ignore[index]
        if kind == "map":
            if not isinstance(v, Mapping):
                raise ValueError(f"{path}: expected an object, got {_type(v)}")
            out = self._object(v, None, path, depth, value_desc=desc["value"])  # type: ignore[index]
            return out if out else _DROP  # rule 3
        if kind == "list":
            if not _is_list(v):
                raise ValueError(f"{path}: expected a list, got {_type(v)}")
            return self._list(v, desc, path, depth)  # type: ignore[arg-type]
        # Generic rules: no descriptor, or a scalar (which may hold any JSON value).
        if isinstance(v, Mapping):
            return self._object(v, None, path, depth)
        if _is_list(v):
            return self._list(v, {"list": "atomic", "item": None}, path, depth)
        return self._scalar(v, path)

    def _object(
        self,
        v: Mapping[Any, Any],
        fields: Mapping[str, Any] | None,
        path: str,
        depth: int,
        value_desc: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Rule 1 (keys are sorted when written). `value_desc` is set for a `map`."""
        out: dict[str, Any] = {}
        # Members are visited in sorted key order, so the first error met is the spec's.
        for key in sorted(v, key=utf8):
            item = v[key]
            desc = value_desc if fields is None else fields.get(key)
            if self._dropped(item, desc):
                continue
            canon = self._value(item, desc, _join(path, key), depth + 1)
            if canon is not _DROP:
                out[key] = canon
        return out

    def _dropped(self, v: Any, desc: Mapping[str, Any] | None) -> bool:
        """Rules 1-3 on the input: null, an empty list, a map with nothing left in it."""
        if v is None or (_is_list(v) and not v):
            return True
        if desc is not None and desc["kind"] == "map" and isinstance(v, Mapping):
            return all(self._dropped(x, desc["value"]) for x in v.values())
        return False

    def _list(self, v: Sequence[Any], desc: Mapping[str, Any], path: str, depth: int) -> Any:
        """Rules 2, 4, 5, 6 (a generic list is treated as `atomic`)."""
        item_desc = desc["item"]
        items = [self._value(x, item_desc, f"{path}[{i}]", depth + 1) for i, x in enumerate(v)]
        # Choice: list positions are never removed; an element that would be dropped as a
        # member (an empty list or map) is written as its empty value.
        items = [_empty_like(v[i]) if x is _DROP else x for i, x in enumerate(items)]
        if not items:
            return _DROP  # rule 2
        list_type = desc["list"]
        if list_type == "map":
            return self._sort_map_list(items, desc, path)  # rule 4
        if list_type == "set":
            return sorted(items, key=lambda x: utf8(dump(x)))  # rule 5
        return items  # rule 6: ordered, atomic

    def _sort_map_list(self, items: list[Any], desc: Mapping[str, Any], path: str) -> list[Any]:
        """Rule 4: sort by key tuple; the first element repeating a key is an error."""
        keys: list[str] = desc.get("keys") or []
        defaults = self.key_defaults.get(desc["item"].get("ref", ""), {})
        tuples: list[tuple[Any, ...]] = []
        for i, item in enumerate(items):  # every element is an object (checked by _value)
            values = []
            for k in keys:
                x = item.get(k, defaults.get(k, ""))
                if isinstance(x, int) and not isinstance(x, bool):  # an integer default
                    x = Number(str(x))
                if not isinstance(x, str):  # canonical numbers are `Number`, a str
                    raise ValueError(
                        f"{path}[{i}].{k}: map-list key must be a string or a number, "
                        f"got {_type(x)}"
                    )
                values.append(x)
            tuples.append(tuple(values))
        seen: set[tuple[Any, ...]] = set()
        for i, values in enumerate(tuples):
            sort_key = tuple(_key_part(x) for x in values)
            if sort_key in seen:
                shown = ", ".join(f"{k}={dump(x)}" for k, x in zip(keys, values, strict=True))
                raise ValueError(f"{path}[{i}]: duplicate key {shown}")
            seen.add(sort_key)
        order = sorted(range(len(items)), key=lambda i: tuple(_key_part(x) for x in tuples[i]))
        return [items[i] for i in order]

    def _quantity(self, v: Any, path: str) -> str:
        """Rule 7; returns the canonical quantity as a JSON string value."""
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise ValueError(f"{path}: invalid quantity {_short(v)}")
        text = repr(v) if isinstance(v, float) else v if isinstance(v, str) else str(v)
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{path}: invalid quantity {text}")
        try:
            return format_quantity(parse_quantity(text))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def _scalar(self, v: Any, path: str) -> Any:
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, str):
            utf8(v)
            return v
        if isinstance(v, int):
            return Number(str(v))
        if isinstance(v, float):
            if not math.isfinite(v):
                raise ValueError(f"{path}: number out of range")
            return Number(format_double(v))
        raise TypeError(f"{path}: unsupported value of type {type(v).__name__}")


def _is_list(v: Any) -> bool:
    return isinstance(v, list | tuple)


def _type(v: Any) -> str:
    if isinstance(v, Mapping):
        return "object"
    if _is_list(v):
        return "list"
    if isinstance(v, bool):
        return "boolean"
    if v is None:
        return "null"
    if isinstance(v, int | float):
        return "number"
    return "string" if isinstance(v, str) else type(v).__name__


def _short(v: Any) -> str:
    try:
        text = json.dumps(v, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _empty_like(original: Any) -> Any:
    return {} if isinstance(original, Mapping) else []


def _key_part(x: str) -> tuple[int, Any]:
    """Rule 4's order of one key value: numbers (by value) before strings (by bytes)."""
    if isinstance(x, Number):
        return (0, Fraction(Decimal(str.__str__(x))))
    if isinstance(x, int):  # a default from key_defaults
        return (0, Fraction(x))
    return (1, utf8(x))


def canonical_json(doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec") -> bytes:
    return Reference.default().canonical_json(doc, kind)


def template_hash(doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec") -> str:
    return Reference.default().template_hash(doc, kind)
