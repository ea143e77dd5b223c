"""Hypothesis strategies for pod templates, driven by testdata/pod-schema.json.

`templates()` builds realistic PodTemplateSpecs: every field is one the schema table knows,
with a value of its kind (quantities in all their spellings, map lists with unique keys,
label-like map keys), plus the odd unknown field, `null` and empty list or map that the
canonical form must drop. The test_hashing_* modules import these; test_hashing_strategies
checks the strategies themselves against the reference.

`walk_lists(doc, ...)` visits every list of a template with its schema descriptor, which
the property tests use to shuffle map lists or swap entries of ordered ones.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests import reference_canonical as ref

TABLE: dict[str, Any] = json.loads(ref.SCHEMA_PATH.read_text())
TYPES: dict[str, dict[str, Any]] = TABLE["types"]
KEY_DEFAULTS: dict[str, dict[str, Any]] = TABLE["key_defaults"]
ROOTS: dict[str, str] = TABLE["roots"]

# Bounded so that the unit tier stays fast: SETTINGS for the differential tests, LIGHT
# (fewer examples) for the many property tests over whole templates.
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIGHT = settings(SETTINGS, max_examples=100)

MAX_DEPTH = 6

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10)
label_keys = st.one_of(
    names,
    st.builds(
        "{}/{}".format,
        st.sampled_from(["app.kubernetes.io", "example.com", "nvidia.com", "cliques.dev"]),
        names,
    ),
)
# Any text (hypothesis leaves out lone surrogates): control characters, quotes, non-ASCII.
strings = st.one_of(names, st.text(max_size=12))
numbers = st.one_of(
    st.integers(-(2**53), 2**53),
    st.integers(-(10**6), 10**6).map(lambda n: n / 8),  # exact binary fractions: 0.125, 2.5
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False),
)
scalars = st.one_of(strings, numbers, st.booleans())
json_values = st.recursive(
    st.none() | scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)

SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


@st.composite
def quantity_strings(draw: st.DrawFn) -> str:
    """Any spelling the Kubernetes quantity grammar allows (as docs/hashing.md states it)."""
    sign = draw(st.sampled_from(["", "", "", "-", "+"]))
    whole = draw(
        st.sampled_from(["0", "00", "1", "2", "8", "10", "64", "100", "1024", "4096"])
        | st.integers(0, 10**12).map(str)
    )
    frac = draw(st.none() | st.text(alphabet="0123456789", min_size=1, max_size=12))
    suffix = draw(
        st.sampled_from(SUFFIXES)
        | st.builds(
            "{}{}{}".format,
            st.sampled_from("eE"),
            st.sampled_from(["", "+", "-"]),
            st.integers(0, 30),
        )
    )
    return sign + whole + ("." + frac if frac is not None else "") + suffix


quantities = st.one_of(
    quantity_strings(),
    st.integers(0, 10**12),
    st.integers(0, 10**6).map(lambda n: n / 4),
)


def _maybe_null(draw: st.DrawFn, strategy: st.SearchStrategy[Any]) -> Any:
    return None if draw(st.integers(0, 15)) == 0 else draw(strategy)


# Strategies are built once per (descriptor, depth) and reused: building them on every draw
# costs more than drawing from them.
_CACHE: dict[tuple[Any, ...], st.SearchStrategy[Any]] = {}


def value_for(desc: Mapping[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    key = ("value", id(desc), depth)
    if key not in _CACHE:
        _CACHE[key] = _value_for(desc, depth)
    return _CACHE[key]


def object_of(ref_name: str, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    key = ("object", ref_name, depth)
    if key not in _CACHE:
        _CACHE[key] = _object_of(ref_name, depth)
    return _CACHE[key]


def _value_for(desc: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
    kind = desc["kind"]
    if kind == "scalar":
        return scalars
    if kind == "quantity":
        return quantities
    if kind == "object":
        return object_of(desc["ref"], depth + 1)
    if kind == "map":
        size = 3 if depth < MAX_DEPTH else 0
        return st.dictionaries(label_keys, value_for(desc["value"], depth + 1), max_size=size)
    assert kind == "list"
    return _list_for(desc, depth)


def _list_for(desc: Mapping[str, Any], depth: int) -> st.SearchStrategy[list[Any]]:
    size = 3 if depth < MAX_DEPTH else 0
    item = desc["item"]
    keys = desc.get("keys") or []
    if desc["list"] not in ("map", "ordered") or not keys:
        return st.lists(value_for(item, depth + 1), max_size=size)
    defaults = KEY_DEFAULTS.get(item.get("ref", ""), {})
    key_values = {}
    for key in keys:
        if isinstance(defaults.get(key), int):
            key_values[key] = st.none() | st.integers(1, 65535) | st.sampled_from([80, 443, 8080])
        elif key == "protocol":
            key_values[key] = st.none() | st.sampled_from(["TCP", "UDP", "SCTP"])
        else:
            key_values[key] = st.sampled_from(["main", "sidecar", "init", "a", "b"]) | names

    @st.composite
    def element(draw: st.DrawFn) -> dict[str, Any]:
        obj = dict(draw(value_for(item, depth + 1)))
        for key in keys:
            value = draw(key_values[key])
            if value is None:
                obj.pop(key, None)
            else:
                obj[key] = value
        return obj

    def identity(obj: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(obj.get(k, defaults.get(k, "")) for k in keys)

    unique = desc["list"] == "map"  # duplicates in a map list are an error, tested apart
    return st.lists(element(), max_size=size, unique_by=identity if unique else None)


def _object_of(ref_name: str, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    fields = TYPES.get(ref_name, {})
    budget = {0: 8, 1: 6, 2: 4}.get(depth, 2) if depth < MAX_DEPTH else 0
    chosen = (
        st.sets(st.sampled_from(sorted(fields)), max_size=budget)
        if fields and budget
        else st.just(set())
    )
    values = {name: value_for(desc, depth) for name, desc in fields.items()}
    unknown = st.tuples(names, json_values)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in sorted(draw(chosen)):
            out[name] = _maybe_null(draw, values[name])
        if draw(st.integers(0, 9)) == 0:  # a field the table does not know
            name, value = draw(unknown)
            out["x-unknown-" + name] = value
        keys = list(out)
        draw(st.randoms(use_true_random=False)).shuffle(keys)  # input order must not matter
        return {k: out[k] for k in keys}

    return build()


@st.composite
def containers(draw: st.DrawFn, count: int = 1) -> list[dict[str, Any]]:
    ref_name = "io.k8s.api.core.v1.Container"
    pool = st.sampled_from(["main", "sidecar", "proxy", "exporter"]) | names
    chosen = draw(st.lists(pool, min_size=count, max_size=max(count, 3), unique=True))
    out = []
    for name in chosen:
        c = dict(draw(object_of(ref_name, 2)))
        c["name"] = name
        c.setdefault("image", draw(st.sampled_from(["nginx:1.27", "vllm/vllm-openai:v0.11.0"])))
        out.append(c)
    return out


@st.composite
def pod_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = dict(draw(object_of(ROOTS["PodSpec"], 1)))
    spec["containers"] = draw(containers())
    return spec


@st.composite
def templates(draw: st.DrawFn) -> dict[str, Any]:
    """A realistic PodTemplateSpec (as a dict with str keys and JSON values)."""
    meta = dict(draw(object_of("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", 2)))
    meta["labels"] = draw(st.dictionaries(label_keys, names, max_size=4))
    doc: dict[str, Any] = {"spec": draw(pod_specs())}
    if draw(st.booleans()) or meta:
        doc["metadata"] = meta
    return doc


# --- walking a template with the table ---------------------------------------------------

ListVisitor = Callable[[str, Mapping[str, Any], list[Any]], None]


def walk_lists(
    value: Any, desc: Mapping[str, Any] | None, visit: ListVisitor, path: str = ""
) -> None:
    """Call visit(path, list_desc, the_list) for every typed list, children first."""
    if desc is None:
        return
    kind = desc["kind"]
    if kind == "object" and isinstance(value, dict):
        fields = TYPES.get(desc["ref"], {})
        for key, item in value.items():
            walk_lists(item, fields.get(key), visit, f"{path}.{key}" if path else key)
    elif kind == "map" and isinstance(value, dict):
        for key, item in value.items():
            walk_lists(item, desc["value"], visit, f"{path}.{key}")
    elif kind == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            walk_lists(item, desc["item"], visit, f"{path}[{i}]")
        visit(path, desc, value)


def root_desc(kind: str = "PodTemplateSpec") -> dict[str, Any]:
    return {"kind": "object", "ref": ROOTS[kind]}


def shuffle_unordered(doc: Any, rnd: random.Random, kind: str = "PodTemplateSpec") -> Iterator[str]:
    """Shuffle, in place, every `map` and `set` list and every object's key order.

    Yields the paths of the lists it shuffled (for `note`)."""
    shuffled: list[str] = []

    def visit(path: str, desc: Mapping[str, Any], items: list[Any]) -> None:
        if desc["list"] in ("map", "set") and len(items) > 1:
            rnd.shuffle(items)
            shuffled.append(path)

    walk_lists(doc, root_desc(kind), visit)
    _shuffle_keys(doc, rnd)
    yield from shuffled


def _shuffle_keys(value: Any, rnd: random.Random) -> None:
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        value.clear()
        value.update(items)
        for item in value.values():
            _shuffle_keys(item, rnd)
    elif isinstance(value, list):
        for item in value:
            _shuffle_keys(item, rnd)
