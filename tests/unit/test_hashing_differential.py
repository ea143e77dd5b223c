"""Differential tests: the Rust core (through cliques.hashing) against the pure-Python
reference (tests/reference_canonical.py), on hypothesis-generated templates and on a table
of edge cases.

Both must give byte-identical canonical forms and equal hashes, or both refuse the input
with a ValueError naming the same JSON path.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cliques import hashing
from tests import reference_canonical as ref
from tests.unit.hashing_strategies import (
    LIGHT,
    SETTINGS,
    names,
    pod_specs,
    quantity_strings,
    root_desc,
    templates,
    walk_lists,
)

# "spec.containers[1].resources.limits.cpu: invalid quantity …" -> the path part.
_PATH = re.compile(r"^((?:[A-Za-z0-9_./-]+|\[\d+\])+): ")


def error_path(exc: ValueError) -> str | None:
    m = _PATH.match(str(exc))
    return m.group(1) if m else None


def outcome(fn: Any, doc: Any, kind: str) -> tuple[str, Any]:
    try:
        return ("ok", fn(doc, kind))
    except ValueError as exc:
        return ("error", error_path(exc))
    except TypeError:
        return ("type-error", None)


def assert_same(doc: Any, kind: str = "PodTemplateSpec") -> None:
    core = outcome(hashing.canonical_json, doc, kind)
    reference = outcome(ref.canonical_json, doc, kind)
    assert core == reference, f"core: {core}\nreference: {reference}"
    if core[0] == "ok":
        assert hashing.template_hash(doc, kind) == ref.template_hash(doc, kind)


@SETTINGS
@given(templates())
def test_templates(doc: dict[str, Any]) -> None:
    assert_same(doc)
    assert_same(json.dumps(doc).encode())


@LIGHT
@given(pod_specs())
def test_pod_specs(spec: dict[str, Any]) -> None:
    assert_same(spec, "PodSpec")


# Mutations that make a template invalid (or nearly so) in one place.


@st.composite
def damaged_templates(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(draw(templates()))
    lists: list[tuple[str, Any, list[Any]]] = []
    walk_lists(doc, root_desc(), lambda path, desc, items: lists.append((path, desc, items)))
    damage = draw(st.sampled_from(["duplicate", "quantity", "type", "key-type", "none"]))
    main = doc["spec"]["containers"][0]
    if damage == "duplicate":
        map_lists = [items for _, desc, items in lists if desc["list"] == "map" and items]
        if map_lists:
            items = draw(st.sampled_from(map_lists))
            items.insert(
                draw(st.integers(0, len(items))), copy.deepcopy(draw(st.sampled_from(items)))
            )
    elif damage == "quantity":
        bad = draw(
            st.sampled_from(["abc", "", "1.2.3", "1e101", "1KB", "--1", "1 ", "-", "."])
            | st.text(max_size=6)
            | quantity_strings()
            | st.booleans()
            | st.lists(names, max_size=1)
        )
        main["resources"] = {"limits": {"cpu": bad}}
    elif damage == "type":
        field = draw(st.sampled_from(["securityContext", "env", "resources", "ports", "name"]))
        main[field] = draw(st.sampled_from(["x", 1, True, [], {}, [1], {"a": 1}]))
    elif damage == "key-type":
        main["ports"] = [{"containerPort": draw(st.sampled_from([True, {}, [1], "80", 80.0, 1e3]))}]
    return doc


@SETTINGS
@given(damaged_templates())
def test_damaged_templates(doc: dict[str, Any]) -> None:
    assert_same(doc)


# Edge cases, most of them where docs/hashing.md is silent and the reference documents the
# choice it shares with the core.
EDGE_CASES: dict[str, Any] = {
    "float-integral": b'{"spec": {"terminationGracePeriodSeconds": 30.0}}',
    "float-1e23": b'{"spec": {"x": 1e23}}',
    "float-small": b'{"spec": {"x": [1e-05, 0.0001, 1.5e-07, 0.1, -2.5, 5e-324]}}',
    "float-huge": b'{"spec": {"x": 1.7976931348623157e308}}',
    "float-overflow": b'{"spec": {"x": 1e400}}',
    "int-huge": b'{"spec": {"x": -123456789012345678901234567890}}',
    "int-u64": b'{"spec": {"x": [18446744073709551615, 18446744073709551616]}}',
    "negative-zero": b'{"spec": {"x": [-0, -0.0]}}',
    "quantity-long-literal": b'{"spec": {"overhead": {"cpu": 0.10000000000000000001}}}',
    "quantity-float": {"spec": {"overhead": {"cpu": 0.1, "memory": 1e-7, "x": 1e20}}},
    "quantity-int-huge": {"spec": {"overhead": {"cpu": 10**30}}},
    "quantity-dot": {"spec": {"overhead": {"a": "1.", "b": ".5", "c": "-.5m"}}},
    "quantity-sign-only": {"spec": {"overhead": {"a": "-"}}},
    "quantity-point-only": {"spec": {"overhead": {"a": "."}}},
    "quantity-exponent-100": {"spec": {"overhead": {"a": "1e100", "b": "1e-100", "c": "1e0100"}}},
    "quantity-exponent-101": {"spec": {"overhead": {"a": "1e101"}}},
    "quantity-overflow-number": b'{"spec": {"overhead": {"a": 1e400}}}',
    "quantity-bool": {"spec": {"overhead": {"a": True}}},
    "quantity-null": {"spec": {"overhead": {"a": None}}},
    "quantity-empty-map": {"spec": {"overhead": {}}},
    "scalar-holds-object": {"spec": {"hostname": {"b": [], "a": [1, None, [], {}]}}},
    "scalar-holds-list": {"spec": {"hostname": [3, 1]}},
    "map-holds-empty-list": {"metadata": {"labels": {"a": [], "b": None}}},
    "map-of-non-scalar": {"metadata": {"labels": {"a": {"x": None}}}},
    "object-mismatch": {"spec": {"securityContext": []}},
    "map-mismatch": {"metadata": {"labels": ["a"]}},
    "list-mismatch": {"spec": {"containers": {"name": "a"}}},
    "list-null-element": {"spec": {"containers": [None]}},
    "atomic-null-element": {"spec": {"containers": [{"name": "a", "args": [None, "x"]}]}},
    "nested-empty-lists": {"spec": {"x": [[], [[]], {}], "containers": [{"name": "a"}]}},
    "empty-struct-kept": {"metadata": {}, "spec": {"securityContext": {"runAsUser": None}}},
    "map-list-bool-key": {"spec": {"containers": [{"name": True}]}},
    "map-list-object-key": {"spec": {"containers": [{"name": {}}]}},
    "map-list-numeric-string": {
        "spec": {
            "containers": [{"name": "m", "ports": [{"containerPort": "80"}, {"containerPort": 80}]}]
        }
    },
    "map-list-float-key-duplicate": {
        "spec": {
            "containers": [{"name": "m", "ports": [{"containerPort": 80}, {"containerPort": 80.0}]}]
        }
    },
    "map-list-default-duplicate": {
        "spec": {
            "containers": [
                {
                    "name": "m",
                    "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}],
                }
            ]
        }
    },
    "map-list-missing-key": {"spec": {"containers": [{"image": "x"}, {"name": ""}]}},
    "map-list-duplicate-third": {
        "spec": {"containers": [{"name": "b"}, {"name": "a"}, {"name": "b"}, {"name": "a"}]}
    },
    "ordered-duplicate": {
        "spec": {"initContainers": [{"name": "a"}, {"name": "a"}], "containers": [{"name": "m"}]}
    },
    "env-duplicate": {
        "spec": {"containers": [{"name": "m", "env": [{"name": "A"}, {"name": "A"}]}]}
    },
    "owner-references-map-list": {"metadata": {"ownerReferences": [{"uid": "b"}, {"uid": "a"}]}},
    "set-duplicates": {"metadata": {"finalizers": ["b", "a", "b"]}},
    "strings": {"metadata": {"labels": {"a": 'q"\\\n\r\t\b\f\x00\x1f\x7f\u2028é😀/'}}},
    "key-order-utf8": {"metadata": {"labels": {"é": "1", "z": "2", "\uffff": "3", "😀": "4"}}},
    "unknown-kind-fields": {"apiVersion": "v1", "kind": "PodTemplateSpec", "spec": {}},
    "duplicate-json-keys": b'{"spec": {"hostname": "a", "hostname": "b"}}',
    "json-bom": b'\xef\xbb\xbf{"spec": {}}',
    "json-nan": b'{"spec": {"x": NaN}}',
    "json-lone-surrogate": b'{"spec": {"x": "\\ud800"}}',
    "json-surrogate-pair": b'{"spec": {"x": "\\ud83d\\ude00"}}',
    "json-invalid-utf8": b'{"spec": {"x": "\xff"}}',
    "json-raw-control": b'{"spec": {"x": "a\x01b"}}',
    "json-trailing": b'{"spec": {}} x',
    "json-top-list": b"[]",
    "json-empty": b"",
    "depth-100": {"spec": {"x": json.loads("[" * 98 + "1" + "]" * 98)}},
    "depth-101": {"spec": {"x": json.loads("[" * 99 + "1" + "]" * 99)}},
    "depth-101-empty-list": {"spec": {"x": json.loads("[" * 98 + '{"y": []}' + "]" * 98)}},
    # Of several errors, the first met: members in sorted key order, elements in input
    # order, a map list's key checks after all its elements (key type before duplicates).
    "error-order-members": {"spec": {"securityContext": 1, "containers": "x"}},
    "error-order-metadata-first": {"spec": {"containers": "x"}, "metadata": {"labels": []}},
    "error-order-elements-before-keys": {
        "spec": {
            "containers": [{"name": "a"}, {"name": "a", "resources": {"limits": {"cpu": "?"}}}]
        }
    },
    "error-order-key-type-before-duplicate": {
        "spec": {"containers": [{"name": "a"}, {"name": "a"}, {"name": False}]}
    },
    # Python values that are not JSON are a TypeError, before any ValueError.
    "python-set": {"spec": {"containers": "x", "x": {1, 2}}},
    "python-bytes-quantity": {"spec": {"overhead": {"cpu": b"1"}}},
    "python-int-key": {"spec": {1: "a"}},
    "python-tuple": {"spec": {"containers": ({"name": "a"},)}},
    "depth-deep-json": b'{"spec": {"x": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
}


# Known disagreements with the core, each with its minimal input, as strict xfails (a fix
# shows up as XPASS). None at present; the last one (a dict nested past 100 levels refused
# although its deep member was a dropped empty list) was fixed in the core in e3b928c.
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[n])) if n in KNOWN else n
        for n in sorted(EDGE_CASES)
    ],
)
def test_edge_case(name: str) -> None:
    doc = EDGE_CASES[name]
    assert_same(doc)
    if isinstance(doc, dict) and not name.startswith("python-"):  # the same as JSON text
        assert_same(json.dumps(doc).encode())


@pytest.mark.parametrize("kind", ["PodSpec", "PodTemplateSpec"])
def test_unknown_kind_is_refused_by_both(kind: str) -> None:
    with pytest.raises(ValueError):
        hashing.canonical_json({}, kind + "x")
    with pytest.raises(ValueError):
        ref.canonical_json({}, kind + "x")
