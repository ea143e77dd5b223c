"""Go's `json.Marshal` form (`cliques.kube.gojson`): the byte vectors Go 1.22+ writes for the
same values (sorted keys, HTML escapes, short escapes, shortest floats)."""

from __future__ import annotations

from typing import Any

import pytest

from cliques.kube import gojson


@pytest.mark.parametrize(
    ("value", "go"),
    [
        ({"b": 1, "a": {"d": [], "c": {}}}, b'{"a":{"c":{},"d":[]},"b":1}'),
        ("a && b < c > d", b'"a \\u0026\\u0026 b \\u003c c \\u003e d"'),
        ('q"\\', b'"q\\"\\\\"'),
        ("\n\r\t\b\f\x01\x1f\x7f", b'"\\n\\r\\t\\b\\f\\u0001\\u001f\x7f"'),
        ("\u2028\u2029é😀", '"\\u2028\\u2029é😀"'.encode()),
        ([None, True, False, 0, -7, 2**63], b"[null,true,false,0,-7,9223372036854775808]"),
        (1.0, b"1"),
        (0.5, b"0.5"),
        (1e20, b"100000000000000000000"),
        (1e21, b"1e+21"),
        (1e-6, b"0.000001"),
        (1e-7, b"1e-7"),
        (-2.5e-10, b"-2.5e-10"),
        (1.5e300, b"1.5e+300"),
        ({"é": 1, "z": 2, "A": 3}, '{"A":3,"z":2,"é":1}'.encode()),
    ],
)
def test_the_bytes_are_gos(value: Any, go: bytes) -> None:
    assert gojson.encode(value) == go


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, object()])
def test_values_json_cannot_hold_are_refused(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        gojson.encode(bad)
