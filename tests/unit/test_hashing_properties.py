"""Properties of the canonical hash (cliques.hashing, i.e. the Rust core), by hypothesis.

- re-ordering any `map` or `set` list (containers, volumes, ports, volumeMounts, …) or any
  object's keys keeps the hash;
- re-ordering an order-sensitive list (initContainers, env, args, command, tolerations, …)
  changes it;
- every spelling of a quantity gives the same hash;
- the canonical form is idempotent, and dict, bytes and str inputs agree.
"""

from __future__ import annotations

import copy
import json
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

from cliques import hashing
from tests import reference_canonical as ref
from tests.unit.hashing_strategies import (
    LIGHT,
    containers,
    label_keys,
    names,
    object_of,
    pod_specs,
    root_desc,
    shuffle_unordered,
    strings,
    templates,
    walk_lists,
)

ROOT = Path(__file__).resolve().parents[2]


def main_container(**fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "main", "image": "app:1", **fields}]}}


# --- unordered lists ------------------------------------------------------------------------


@LIGHT
@given(templates(), st.randoms(use_true_random=False))
def test_reordering_map_and_set_lists_keeps_the_hash(
    doc: dict[str, Any], rnd: random.Random
) -> None:
    shuffled = copy.deepcopy(doc)
    note(f"shuffled: {list(shuffle_unordered(shuffled, rnd))}")
    assert hashing.canonical_json(shuffled) == hashing.canonical_json(doc)
    assert hashing.template_hash(shuffled) == hashing.template_hash(doc)


def test_reversing_every_map_list_of_a_real_template_keeps_the_hash() -> None:
    doc = json.loads((ROOT / "bench" / "hash" / "inference.json").read_text())
    before = hashing.template_hash(doc)
    reversed_paths: list[str] = []

    def visit(path: str, desc: Any, items: list[Any]) -> None:
        if desc["list"] in ("map", "set") and len(items) > 1:
            items.reverse()
            reversed_paths.append(path)

    walk_lists(doc, root_desc(), visit)
    # (children are visited before their list, so the paths are the fixture's own)
    assert {
        "spec.containers",
        "spec.volumes",
        "spec.containers[0].ports",
        "spec.containers[0].volumeMounts",
    } <= set(reversed_paths)
    assert hashing.template_hash(doc) == before


# --- ordered lists --------------------------------------------------------------------------

_toleration = st.fixed_dictionaries(
    {"key": names},
    optional={"operator": st.sampled_from(["Exists", "Equal"]), "effect": st.just("NoSchedule")},
)
_env = st.fixed_dictionaries({"name": names}, optional={"value": strings})


def _distinct(elements: st.SearchStrategy[Any], key: Any = None) -> st.SearchStrategy[list[Any]]:
    return st.lists(elements, min_size=2, max_size=5, unique_by=key or json.dumps)


# Where an order-sensitive list goes, and what it holds. Elements are distinct by their key
# (or whole value), so their canonical forms differ.
ORDERED_CASES: dict[str, tuple[tuple[str, ...], st.SearchStrategy[list[Any]]]] = {
    "initContainers": (("spec", "initContainers"), containers(2)),
    "env": (("spec", "containers", 0, "env"), _distinct(_env, key=lambda e: e["name"])),
    "args": (("spec", "containers", 0, "args"), _distinct(strings)),
    "command": (("spec", "containers", 0, "command"), _distinct(strings)),
    "tolerations": (("spec", "tolerations"), _distinct(_toleration)),
    "envFrom": (
        ("spec", "containers", 0, "envFrom"),
        _distinct(st.fixed_dictionaries({"prefix": names})),
    ),
    "readinessGates": (
        ("spec", "readinessGates"),
        _distinct(st.fixed_dictionaries({"conditionType": names})),
    ),
}


def _place(doc: dict[str, Any], where: tuple[Any, ...], value: Any) -> None:
    target: Any = doc
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = value


@LIGHT
@given(
    templates(),
    st.sampled_from(sorted(ORDERED_CASES)),
    st.data(),
)
def test_reordering_an_ordered_list_changes_the_hash(
    doc: dict[str, Any], case: str, data: st.DataObject
) -> None:
    where, elements = ORDERED_CASES[case]
    items = data.draw(elements, label=case)
    if case == "initContainers":  # names must not clash with the containers'
        names_in_use = {c["name"] for c in doc["spec"]["containers"]}
        assume(not names_in_use & {c["name"] for c in items})
    permuted = data.draw(st.permutations(items), label="permuted")
    assume(permuted != items)
    a, b = copy.deepcopy(doc), copy.deepcopy(doc)
    _place(a, where, items)
    _place(b, where, permuted)
    # The reference agrees the canonical forms differ (distinct elements, another order) ...
    assume(ref.canonical_json(a) != ref.canonical_json(b))
    # ... and so must the core.
    assert hashing.template_hash(a) != hashing.template_hash(b)


@pytest.mark.parametrize(
    ("where", "items"),
    [
        (("spec", "initContainers"), [{"name": "a"}, {"name": "b"}]),
        (("spec", "containers", 0, "env"), [{"name": "A", "value": "1"}, {"name": "B"}]),
        (("spec", "containers", 0, "args"), ["--x", "--y"]),
        (("spec", "containers", 0, "command"), ["sh", "-c"]),
        (("spec", "tolerations"), [{"key": "a"}, {"key": "b"}]),
    ],
)
def test_named_ordered_lists_are_order_sensitive(where: tuple[Any, ...], items: list[Any]) -> None:
    a, b = main_container(), main_container()
    _place(a, where, items)
    _place(b, where, items[::-1])
    assert hashing.template_hash(a) != hashing.template_hash(b)


@pytest.mark.parametrize(
    ("where", "items"),
    [
        (("spec", "containers"), [{"name": "a"}, {"name": "b"}]),
        (("spec", "volumes"), [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}]),
        (("spec", "containers", 0, "ports"), [{"containerPort": 80}, {"containerPort": 81}]),
        (
            ("spec", "containers", 0, "volumeMounts"),
            [{"name": "a", "mountPath": "/a"}, {"name": "a", "mountPath": "/b"}],
        ),
        (("spec", "imagePullSecrets"), [{"name": "a"}, {"name": "b"}]),
        (("metadata", "finalizers"), ["a", "b"]),
    ],
)
def test_named_map_and_set_lists_are_order_free(where: tuple[Any, ...], items: list[Any]) -> None:
    a, b = {"metadata": {}, **main_container()}, {"metadata": {}, **main_container()}
    _place(a, where, items)
    _place(b, where, items[::-1])
    assert hashing.template_hash(a) == hashing.template_hash(b)


# --- quantities -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spellings",
    [
        ["1", "1000m", 1, 1.0, "1e0", "+1", "01"],
        ["1Gi", "1024Mi", "1073741824", 1073741824, "1048576Ki"],
        ["0.5", "500m", 0.5, "5e-1", ".5"],
        ["0", "-0", "0m", 0, 0.0],
    ],
)
def test_quantity_spellings_from_the_spec(spellings: list[Any]) -> None:
    hashes = {
        hashing.template_hash(main_container(resources={"limits": {"cpu": s}})) for s in spellings
    }
    assert len(hashes) == 1, spellings


def _plain(value: Fraction) -> str:
    sign = "-" if value < 0 else ""
    nanos = abs(value) * 10**9
    assert nanos.denominator == 1
    whole, frac = divmod(int(nanos), 10**9)
    return sign + str(whole) + (f".{frac:09d}".rstrip("0") if frac else "")


def spellings_of(nanos: int) -> list[Any]:
    """Many spellings of the quantity nanos * 10**-9 (all exactly that value, or rounding to it)."""
    value = Fraction(nanos, 10**9)
    plain = _plain(value)
    sign = "-" if nanos < 0 else ""
    magnitude = abs(nanos)
    out: list[Any] = [plain, f"{nanos}n", f"{nanos}e-9", f"{nanos}E-9"]
    if nanos >= 0:
        out += [f"+{plain}", f"00{plain}"]
    if "." in plain:
        out.append(plain + "000")
    else:
        out.append(plain + ".0")
    for suffix, nanos_per_unit in (
        ("u", 10**3),
        ("m", 10**6),
        ("", 10**9),
        ("k", 10**12),
        ("M", 10**15),
    ):
        if magnitude % nanos_per_unit == 0:
            out.append(f"{sign}{magnitude // nanos_per_unit}{suffix}")
    if value.denominator == 1:
        out.append(int(value))
        for i, suffix in enumerate(("Ki", "Mi", "Gi"), start=1):
            if int(value) % 1024**i == 0:
                out.append(f"{int(value) // 1024**i}{suffix}")
    as_float = float(value)
    if Fraction(as_float) == value or Fraction(repr(as_float)) == value:
        out.append(as_float)
    if magnitude > 1:  # a sub-nano tail rounds away from zero to this value
        out.append(f"{sign}{magnitude - 1}.25n")
    return out


@LIGHT
@given(
    st.one_of(
        st.integers(-(10**13), 10**13),
        st.integers(-(10**6), 10**6).map(lambda n: n * 10**6),  # whole milli
        st.integers(0, 2**20).map(lambda n: n * 1024 * 10**9),  # whole Ki
        st.integers(0, 64).map(lambda n: n * 2**30 * 10**9),  # whole Gi
    )
)
def test_every_spelling_of_a_quantity_has_one_hash(nanos: int) -> None:
    spellings = spellings_of(nanos)
    note(repr(spellings))
    canon = {
        s if isinstance(s, str) else repr(s): hashing.canonical_json(
            main_container(resources={"requests": {"memory": s}})
        )
        for s in spellings
    }
    assert len(set(canon.values())) == 1, canon
    assert f'"memory":"{_plain(Fraction(nanos, 10**9))}"'.encode() in next(iter(canon.values()))


# --- idempotence and input forms -----------------------------------------------------------


@LIGHT
@given(templates())
def test_canonical_form_is_idempotent(doc: dict[str, Any]) -> None:
    once = hashing.canonical_json(doc)
    assert hashing.canonical_json(once) == once
    assert hashing.canonical_json(once.decode()) == once
    assert hashing.canonical_json(json.loads(once)) == once


@LIGHT
@given(templates())
def test_dict_bytes_and_str_inputs_agree(doc: dict[str, Any]) -> None:
    expected = hashing.canonical_json(doc)
    text = json.dumps(doc)
    assert hashing.canonical_json(text) == expected
    assert hashing.canonical_json(text.encode()) == expected
    assert (
        hashing.canonical_json(json.dumps(doc, ensure_ascii=False, indent=1).encode()) == expected
    )
    assert hashing.template_hash(text) == hashing.template_hash(doc)


@LIGHT
@given(pod_specs(), st.dictionaries(label_keys, names, max_size=3))
def test_pod_spec_root_is_the_template_spec(spec: dict[str, Any], labels: dict[str, str]) -> None:
    as_spec = hashing.canonical_json(spec, "PodSpec")
    assert hashing.canonical_json({"spec": spec}) == b'{"spec":' + as_spec + b"}"
    template = {"metadata": {"labels": labels}, "spec": spec}
    assert hashing.canonical_json(template).endswith(b'"spec":' + as_spec + b"}")


@LIGHT
@given(object_of("io.k8s.api.core.v1.Container", 2), st.randoms(use_true_random=False))
def test_json_formatting_does_not_matter(container: dict[str, Any], rnd: random.Random) -> None:
    doc = {"spec": {"containers": [{**container, "name": "main"}]}}
    compact = json.dumps(doc, separators=(",", ":"))
    spaced = json.dumps(
        doc, indent=rnd.choice([None, 1, 4]), ensure_ascii=rnd.choice([True, False])
    )
    assert hashing.template_hash(compact.encode()) == hashing.template_hash(spaced.encode())


def test_hash_shape() -> None:
    digest = hashing.template_hash(main_container())
    assert 1 <= len(digest) <= 20
    assert set(digest) <= set(ref.SAFE_ALPHABET)
    assert hashing.HASH_ALGORITHM_VERSION == 1
