"""`cliques._core.canonical_json` / `template_hash`: input forms, kinds, errors and their
types (ValueError with the JSON path for bad documents, TypeError for bad Python types)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from cliques import _core

DOC = {"spec": {"containers": [{"name": "b"}, {"name": "a", "resources": {"limits": {"cpu": 1}}}]}}
CANONICAL = (
    b'{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"1"}}},{"name":"b"}]}}'
)


class ReadOnlyMapping(Mapping[str, Any]):
    """A mapping that is not a dict."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_version() -> None:
    assert _core.HASH_ALGORITHM_VERSION == 1


@pytest.mark.parametrize(
    "doc",
    [
        DOC,
        OrderedDict(DOC),
        ReadOnlyMapping(DOC),
        b'{"spec": {"containers": [{"name": "b"}, {"name": "a", '
        b'"resources": {"limits": {"cpu": "1000m"}}}]}}',
        '{"spec":{"containers":[{"name":"b"},{"name":"a","resources":{"limits":{"cpu":1.0}}}]}}',
        {
            "spec": {
                "containers": ({"name": "b"}, {"name": "a", "resources": {"limits": {"cpu": 1}}})
            }
        },
    ],
)
def test_input_forms(doc: Any) -> None:
    assert _core.canonical_json(doc) == CANONICAL
    assert _core.canonical_json(doc, kind="PodTemplateSpec") == CANONICAL
    assert _core.template_hash(doc) == _core.template_hash(CANONICAL)


def test_podspec_kind() -> None:
    spec = DOC["spec"]
    assert _core.canonical_json(spec, "PodSpec") == CANONICAL[len(b'{"spec":') : -1]
    with pytest.raises(ValueError, match=r"^unknown kind 'Pod'|^unknown kind \"Pod\""):
        _core.canonical_json(spec, "Pod")
    with pytest.raises(ValueError):
        _core.template_hash(spec, "podspec")


def test_hash_shape() -> None:
    digest = _core.template_hash(DOC)
    assert 1 <= len(digest) <= 20
    assert set(digest) <= set("bcdfghjklmnpqrstvwxz2456789")
    digits = str(_core.fnv1a_64(CANONICAL))
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    assert digest == "".join(alphabet[ord(c) % 27] for c in digits)


def test_python_values() -> None:
    doc = {
        "x": [True, False, None, 0, -7, 2**70, -(2**64), 1.5, 30.0, 1e-7, 1e21, "é\n"],
        "spec": {"y": {"b": 1, "a": None}},
    }
    assert _core.canonical_json(doc) == (
        b'{"spec":{"y":{"b":1}},"x":[true,false,null,0,-7,1180591620717411303424,'
        b'-18446744073709551616,1.5,30,1e-07,1000000000000000000000,"\xc3\xa9\\n"]}'
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}},
            r'^spec\.containers\[1\]: duplicate key name="a"$',
        ),
        ({"spec": {"overhead": {"cpu": "abc"}}}, r'^spec\.overhead\.cpu: invalid quantity "abc"$'),
        (
            {"spec": {"containers": {"name": "a"}}},
            r"^spec\.containers: expected a list, got object$",
        ),
        ({"x": float("nan")}, r"^x: number out of range$"),
        ({"x": float("inf")}, r"^x: number out of range$"),
        (b"[1, 2]", r"^expected a JSON object at the top, got list$"),
        (b"{", r"^invalid JSON"),
        (b'{"a": NaN}', r"^invalid JSON"),
        (b"\xff", r"^invalid JSON"),
        ('{"a": "\\ud800"}', r"^invalid JSON"),
    ],
)
def test_value_errors(doc: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.canonical_json(doc)
    with pytest.raises(ValueError, match=message):
        _core.template_hash(doc)


def test_lone_surrogate_in_a_mapping_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        _core.canonical_json({"x": "\ud800"})


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (42, r"doc must be bytes, str or a mapping, got int"),
        ([{"spec": {}}], r"doc must be bytes, str or a mapping, got list"),
        (bytearray(b"{}"), r"doc must be bytes, str or a mapping, got bytearray"),
        ({"spec": {1: "a"}}, r"^spec: object keys must be str, got int$"),
        ({"spec": {"x": {1, 2}}}, r"^spec\.x: unsupported type set"),
        ({"spec": {"x": [b"raw"]}}, r"^spec\.x\[0\]: unsupported type bytes"),
    ],
)
def test_type_errors(doc: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        _core.canonical_json(doc)


def test_deep_and_self_referencing_mappings_are_refused() -> None:
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        _core.canonical_json({"x": deep})
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        _core.canonical_json(loop)


def test_threads_share_the_work() -> None:
    # The GIL is released while canonicalizing: threads run and agree.
    doc = {"spec": {"containers": [{"name": f"c{i}", "args": ["x"] * 50} for i in range(200)]}}
    raw = _core.canonical_json(doc)
    results: list[bytes] = []

    def work() -> None:
        for _ in range(20):
            results.append(_core.canonical_json(raw))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [raw] * 80
