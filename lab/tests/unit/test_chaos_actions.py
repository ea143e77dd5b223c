"""The steps of `cliques bench chaos`, drawn from a seed: reproducible, and every object
drawn as valid is one the CRD accepts, every invalid one says what must be named."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from cliques.api.cliqueset import MAX_GANG_PODS, CliqueSet, StartupType
from cliques.controllers.base.revision import Hasher
from cliques_lab.bench.chaos_actions import FAULTS, Draw, Shape, manifest
from cliques_lab.bench.chaos_monitor import desired_of

seeds = st.integers(min_value=0, max_value=2**32 - 1)


def steps(seed: int, n: int = 40) -> list[str]:
    draw = Draw(seed)
    live: dict[str, Shape] = {}
    out = []
    for _ in range(n):
        step = draw.step(live, [])
        if step.shape is not None:
            live[step.name] = step.shape
        if step.op == "delete":
            live.pop(step.name)
        out.append(repr(step))
    return out


@given(seed=seeds)
@settings(max_examples=25)
def test_the_same_seed_draws_the_same_steps(seed: int) -> None:
    assert steps(seed) == steps(seed)


def check_valid(shape: Shape, max_pods: int) -> None:
    import msgspec

    cqs = msgspec.convert(manifest(shape), CliqueSet)
    names = [c.name for c in cqs.spec.template.cliques]
    assert len(set(names)) == len(names)
    for c in cqs.spec.template.cliques:
        assert 0 <= c.effective_min_available <= c.replicas
        assert all(a in names and a != c.name for a in c.starts_after)
        if c.starts_after:
            assert cqs.spec.startup_type is StartupType.EXPLICIT
    per_gang = sum(c.replicas for c in cqs.spec.template.cliques)
    assert per_gang <= MAX_GANG_PODS
    assert per_gang * cqs.spec.replicas <= max_pods


@given(seed=seeds)
@settings(max_examples=50)
def test_valid_shapes_and_their_edits_stay_valid_and_small(seed: int) -> None:
    draw = Draw(seed, max_pods=8)
    shape = draw.shape()
    check_valid(shape, 8)
    for _ in range(10):
        _, shape = draw.edit(shape)
        check_valid(shape, 8)


@given(seed=seeds)
@settings(max_examples=30, deadline=None)
def test_a_reorder_keeps_every_hash_and_an_image_change_changes_them(seed: int) -> None:
    hasher = Hasher()
    shape = Draw(seed).shape()
    before = desired_of(shape, hasher).cliques
    reordered = desired_of(dataclasses.replace(shape, reordered=not shape.reordered), hasher)
    assert reordered.cliques == before
    other = "busybox:0.1" if shape.image != "busybox:0.1" else "busybox:0.2"
    rolled = desired_of(dataclasses.replace(shape, image=other), hasher).cliques
    assert all(rolled[c][2] != before[c][2] for c in before)


@given(seed=seeds)
@settings(max_examples=30)
def test_invalid_objects_say_where_and_what_is_named(seed: int) -> None:
    inv = Draw(seed).invalid()
    assert inv.where in ("api", "condition", "conflict") and inv.expect
    raw = inv.raw()
    assert inv.name.encode() in raw
    if inv.kind == "deep-template":
        assert raw.count(b'{"n":') == 1200
    if inv.where == "conflict":
        assert inv.shape is not None and inv.expect == inv.name  # its Shared Service


def test_faults_are_only_the_ones_allowed() -> None:
    draw = Draw(7, faults=("pod-loss",), max_sets=1)
    live = {"c0": draw.shape("c0")}
    kinds = {s.kind for s in (draw.step(live, []) for _ in range(200)) if s.op == "fault"}
    assert kinds == {"pod-loss"}
    assert set(FAULTS) >= {"kill-worker", "cut-watches", "throttle", "apiserver-restart"}
