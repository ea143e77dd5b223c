"""A small pure-Python reference implementation of docs/hashing.md (algorithm version 1).

Used only by the tests (differential tests against the Rust core) and by the benchmark
(`cliques bench hash`, line "pure-Python canonical"). It favours being easy to check against
the specification over speed: every rule of the spec is one small function below, named
after it, and quantities use exact arithmetic (`fractions.Fraction`).

    ref = Reference.default()           # reads testdata/pod-schema.json
    ref.canonical_json(b'{"spec": {"containers": [{"name": "a"}]}}')
    ref.template_hash({"spec": {...}})

Choices where the spec is silent (each is noted where it is made, and the differential
tests report any disagreement with the core):

- a value whose JSON type does not fit its table descriptor (an object where a list is
  declared, a list for a scalar, a string for an object) raises `ValueError` with its path;
- `null` elements of lists are kept (written `null`), except in `map` lists, where every
  element must be an object;
- `ordered` lists are not checked for duplicate keys (only `map` lists are, rule 4);
- non-quantity numbers: JSON integers are kept exactly; other numbers go through an IEEE
  double: an integral double is written as an integer (its shortest round-trip digits,
  padded with zeros), any other in the shortest round-trip form laid out like `ryu` (and
  so serde_json) does: plain decimal for 1e-5 <= |x| < 1e16, otherwise `d.ddde±x`;
- NaN / Infinity (JSON extensions Python accepts) and lone surrogates are refused.
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

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]+))?"
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
    value = Fraction(int(m["int"] + frac), 10 ** len(frac))
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
    """Rule 8 for a non-quantity number that went through an IEEE double."""
    if not math.isfinite(x):
        raise ValueError(f"number out of range: {x!r}")
    if x == 0:
        return "0"
    sign, digit_tuple, exp = Decimal(repr(x)).as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exp += len("".join(map(str, digit_tuple))) - len(digits)  # value = digits * 10**exp
    point = len(digits) + exp  # position of the decimal point from the left of `digits`
    neg = "-" if sign else ""
    if x.is_integer():
        return neg + digits + "0" * exp
    if 0 < point <= 16:
        return neg + digits[:point] + "." + digits[point:]
    if -5 < point <= 0:
        return neg + "0." + "0" * (-point) + digits
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{neg}{mantissa}e{point - 1}"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}
_ESCAPES["\f"] = "\\f"


def dump_string(s: str) -> str:
    """Rule 9."""
    out = ['"']
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


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
        keys = sorted(value, key=utf8)  # rule 1
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


class FloatLiteral(str):
    """A JSON number literal with a fraction or exponent, kept as written (for quantities)."""

    __slots__ = ()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON number {name}")


def parse_document(doc: bytes | str | Mapping[str, Any]) -> Any:
    if isinstance(doc, Mapping):
        return doc
    if isinstance(doc, bytes | bytearray | memoryview):
        try:
            doc = bytes(doc).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"input is not valid UTF-8: {exc}") from exc
    if not isinstance(doc, str):
        raise ValueError(f"expected a mapping, JSON bytes or str, got {type(doc).__name__}")
    try:
        return json.loads(doc, parse_float=FloatLiteral, parse_constant=_reject_constant)
    except RecursionError as exc:
        raise ValueError("input nested too deeply") from exc


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_DROP = object()  # a value that is left out of its parent


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
            out = self._object(value, self.types[root], "")
        except RecursionError as exc:
            raise ValueError("input nested too deeply") from exc
        return utf8(dump(out))

    def template_hash(
        self, doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec"
    ) -> str:
        return hash_of_canonical(self.canonical_json(doc, kind))

    # -- the walk ------------------------------------------------------------------

    def _value(self, v: Any, desc: Mapping[str, Any] | None, path: str) -> Any:
        kind = None if desc is None else desc["kind"]
        if kind == "quantity":
            return self._quantity(v, path)
        if kind == "object":
            if not isinstance(v, Mapping):
                raise ValueError(f"{path}: expected an object, got {_type(v)}")
            return self._object(v, self.types.get(desc["ref"], {}), path)  # type: ignore[index]
        if kind == "map":
            if not isinstance(v, Mapping):
                raise ValueError(f"{path}: expected a map, got {_type(v)}")
            out = self._object(v, None, path, value_desc=desc["value"])  # type: ignore[index]
            return out if out else _DROP  # rule 3
        if kind == "list":
            if not _is_list(v):
                raise ValueError(f"{path}: expected a list, got {_type(v)}")
            return self._list(v, desc, path)  # type: ignore[arg-type]
        if kind == "scalar" and (isinstance(v, Mapping) or _is_list(v)):
            raise ValueError(f"{path}: expected a scalar, got {_type(v)}")
        # Generic rules (no descriptor) or a scalar.
        if isinstance(v, Mapping):
            return self._object(v, None, path)
        if _is_list(v):
            out = [self._value(item, None, f"{path}[{i}]") for i, item in enumerate(v)]
            return out if out else _DROP
        return self._scalar(v, path)

    def _object(
        self,
        v: Mapping[Any, Any],
        fields: Mapping[str, Any] | None,
        path: str,
        value_desc: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Rule 1 (keys are sorted when written). `value_desc` is set for a `map`."""
        out: dict[str, Any] = {}
        for key, item in v.items():
            if not isinstance(key, str):
                raise ValueError(f"{path}: object key {key!r} is not a string")
            utf8(key)
            if item is None:
                continue
            desc = value_desc if fields is None else fields.get(key)
            canon = self._value(item, desc, _join(path, key))
            if canon is not _DROP:
                out[key] = canon
        return out

    def _list(self, v: Sequence[Any], desc: Mapping[str, Any], path: str) -> Any:
        item_desc = desc["item"]
        items = [self._value(x, item_desc, f"{path}[{i}]") for i, x in enumerate(v)]
        # An element that is itself dropped (an empty list or map inside a list) stays as
        # its empty value: list positions are not removed.
        items = [_empty_like(x, v[i]) if x is _DROP else x for i, x in enumerate(items)]
        if not items:
            return _DROP  # rule 2
        list_type = desc["list"]
        if list_type == "map":
            return self._sort_map_list(items, desc, path)  # rule 4
        if list_type == "set":
            return sorted(items, key=lambda x: utf8(dump(x)))  # rule 5
        return items  # rule 6: ordered, atomic

    def _sort_map_list(self, items: list[Any], desc: Mapping[str, Any], path: str) -> list[Any]:
        keys: list[str] = desc.get("keys") or []
        ref = desc["item"].get("ref", "")
        defaults = self.key_defaults.get(ref, {})
        seen: dict[tuple[Any, ...], int] = {}
        keyed = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"{path}[{i}]: expected an object, got {_type(item)}")
            values = [item.get(k, defaults.get(k, "")) for k in keys]
            sort_key = tuple(_key_part(x) for x in values)
            if sort_key in seen:
                shown = ", ".join(
                    f"{k}={dump(_as_canonical(x))}" for k, x in zip(keys, values, strict=True)
                )
                raise ValueError(f"{path}[{i}]: duplicate key {shown}")
            seen[sort_key] = i
            keyed.append((sort_key, item))
        keyed.sort(key=lambda pair: pair[0])
        return [item for _, item in keyed]

    def _quantity(self, v: Any, path: str) -> str:
        """Rule 7; returns the canonical quantity as a JSON string value."""
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise ValueError(f"{path}: invalid quantity {_short(v)}")
        text = repr(v) if isinstance(v, float) else str.__str__(v) if isinstance(v, str) else str(v)
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{path}: invalid quantity {text}")
        try:
            return format_quantity(parse_quantity(text))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def _scalar(self, v: Any, path: str) -> Any:
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, FloatLiteral):
            return Number(format_double(float(v)))
        if isinstance(v, str):
            utf8(v)
            return v
        if isinstance(v, int):
            return Number(str(v))
        if isinstance(v, float):
            return Number(format_double(v))
        raise ValueError(f"{path}: unsupported value of type {type(v).__name__}")


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
    if isinstance(v, int | float | FloatLiteral):
        return "number"
    return "string" if isinstance(v, str) else type(v).__name__


def _short(v: Any) -> str:
    try:
        text = json.dumps(v, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _empty_like(canon: Any, original: Any) -> Any:
    return {} if isinstance(original, Mapping) else []


def _as_canonical(x: Any) -> Any:
    if isinstance(x, int) and not isinstance(x, bool):
        return Number(str(x))
    return x


def _key_part(x: Any) -> tuple[int, Any]:
    """Rule 4's order of one key value: numbers (by value) before strings (by bytes)."""
    if isinstance(x, Number):
        return (0, Fraction(Decimal(str.__str__(x))))
    if isinstance(x, int) and not isinstance(x, bool):
        return (0, Fraction(x))
    if isinstance(x, str):
        return (1, utf8(x))
    return (2, utf8(dump(x)))


def canonical_json(doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec") -> bytes:
    return Reference.default().canonical_json(doc, kind)


def template_hash(doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec") -> str:
    return Reference.default().template_hash(doc, kind)
