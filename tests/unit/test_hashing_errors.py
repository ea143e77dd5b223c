"""`TemplateError` across the boundary, and the dict walk: Python objects walked directly
give the same bytes as their JSON text, and anything the walk leaves to the conversion
path raises exactly what that path raises."""

from __future__ import annotations

import json
from collections import OrderedDict, UserDict
from typing import Any

import pytest

from cliques import _core, hashing
from tests import reference_canonical as ref


def test_template_error_is_a_value_error_with_parts() -> None:
    doc = {"spec": {"containers": [{"name": "main"}, {"name": "main"}]}}
    for form in (doc, json.dumps(doc), json.dumps(doc).encode()):
        with pytest.raises(hashing.TemplateError) as info:
            hashing.template_hash(form)
        err = info.value
        assert isinstance(err, ValueError)
        assert err.path == "spec.containers[1]"
        assert err.message == 'duplicate key name="main"'
        assert str(err) == f"{err.path}: {err.message}"
    assert hashing.TemplateError is _core.TemplateError


def test_template_error_for_the_whole_document() -> None:
    with pytest.raises(hashing.TemplateError) as info:
        hashing.canonical_json(b"[1]")
    assert info.value.path == ""
    assert str(info.value) == info.value.message
    assert info.value.message.startswith("expected a JSON object at the top")


def test_conversion_errors_are_template_errors() -> None:
    with pytest.raises(hashing.TemplateError) as info:
        hashing.template_hash({"spec": {"x": [1.0, float("nan")]}})
    assert (info.value.path, info.value.message) == ("spec.x[1]", "number out of range")


class Text(str):
    pass


class Integer(int):
    pass


class Real(float):
    pass


@pytest.mark.parametrize(
    "doc",
    [
        {"spec": {"containers": ({"name": "a", "args": ("x", "y")},)}},
        {"spec": {"priority": Integer(5), "x": Real(0.5), Text("y"): Text("z")}},
        {"metadata": {"labels": OrderedDict(b="1", a="2")}},
        {"spec": {"overhead": {"cpu": 2**63, "memory": 2**64 - 1}, "x": -(2**63)}},
        {"spec": {"x": [2**70, -(2**70), 1e300, -0.0, 3.0, True, None, []]}},
        {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 2.0}]}]}},
    ],
)
def test_dict_walk_agrees_with_json_text(doc: dict[str, Any]) -> None:
    text = json.dumps(doc).encode()
    assert hashing.canonical_json(doc) == hashing.canonical_json(text)
    assert hashing.template_hash(doc) == hashing.template_hash(text)


def test_other_mappings_are_read_through_items() -> None:
    doc = UserDict({"spec": UserDict({"containers": [{"name": "a"}]})})
    assert hashing.template_hash(doc) == hashing.template_hash(
        {"spec": {"containers": [{"name": "a"}]}}
    )


@pytest.mark.parametrize(
    ("doc", "error", "match"),
    [
        # A non-str key is refused even in a map whose members are all left out.
        ({"metadata": {"labels": {1: None}}}, TypeError, "object keys must be str"),
        ({"spec": {"x": {1, 2}}}, TypeError, "spec.x: unsupported type set"),
        # The conversion's errors come first, wherever they are.
        (
            {"spec": {"overhead": {"cpu": "abc"}}, "z": b"x"},
            TypeError,
            "z: unsupported type bytes",
        ),
        ({"spec": {"x": "\ud800"}}, UnicodeEncodeError, "surrogate"),
    ],
)
def test_dict_errors_are_the_conversion_s(
    doc: dict[Any, Any], error: type[Exception], match: str
) -> None:
    for fn in (hashing.template_hash, hashing.canonical_json):
        with pytest.raises(error, match=match):
            fn(doc)


def test_self_containing_dict_is_refused() -> None:
    doc: dict[str, Any] = {"spec": {}}
    doc["spec"]["x"] = doc["spec"]
    with pytest.raises(hashing.TemplateError, match="nested deeper than 100 levels"):
        hashing.template_hash(doc)


@pytest.mark.parametrize("value", [0, 123, 2**32, 2**64 - 1])
def test_safe_encode_is_the_reference_s(value: int) -> None:
    assert _core.safe_encode(value) == ref.safe_encode(str(value))
