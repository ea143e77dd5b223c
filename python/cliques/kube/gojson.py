"""JSON as Go's `encoding/json` writes it, for fields the API server compares byte for byte.

A ControllerRevision's `data` is a `runtime.RawExtension`: the API server keeps its bytes as
sent and checks on every update that they did not change (`data` is immutable). But a
strategic merge patch of the object (the garbage collector orphaning it, `kubectl label`)
rebuilds those bytes from a decoded map with Go's `json.Marshal`: keys sorted, no spaces,
`<`, `>` and `&` escaped. Bytes sent in any other form then differ from the rebuilt ones,
and every such patch is refused with "data: field is immutable" (a set deleted with
`--cascade=orphan` would wait forever). `encode` writes that form from the start.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

#: Characters Go escapes beyond JSON's own (HTML-safe output), and its short escapes.
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_ESCAPES.update({chr(c): f"\\u{c:04x}" for c in range(0x20) if chr(c) not in _ESCAPES})
_TABLE = str.maketrans(_ESCAPES)


def _string(s: str) -> str:
    return '"' + s.translate(_TABLE) + '"'


def _float(x: float) -> str:
    """strconv.FormatFloat(x, 'f' or 'e', -1, 64) as encoding/json picks between them."""
    if not math.isfinite(x):
        raise ValueError(f"JSON has no {x}")
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    if 1e-6 <= abs(x) < 1e21:
        text = format(Decimal(repr(x)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, exp = repr(x).split("e")
    if mantissa.endswith(".0"):
        mantissa = mantissa[:-2]
    sign, digits = exp[0], exp[1:].lstrip("0") or "0"
    if len(digits) == 1 and sign == "+":
        digits = "0" + digits  # Go keeps two exponent digits for e+NN, drops them for e-0N
    return f"{mantissa}e{sign}{digits}"


def _value(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, float):
        out.append(_float(v))
    elif isinstance(v, dict):
        out.append("{")
        for i, key in enumerate(sorted(v)):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys are strings, got {type(key).__name__}")
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _value(v[key], out)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _value(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(v).__name__} as JSON")


def encode(doc: Any) -> bytes:
    """`doc` (dicts, lists, str, int, float, bool, None) in Go's `json.Marshal` form."""
    out: list[str] = []
    _value(doc, out)
    return "".join(out).encode()
