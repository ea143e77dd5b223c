"""The CliqueSet plan's shortcuts for a set planned again after one of its Cliques changed
decide as the definitions they shortcut: the Cliques by gang from the last plan's
(`planner._members_again`) as `_members_by_gang` from scratch, the stale Cliques from the
last plan's as `_stale` over every Clique, the bounds of an unchanged spec as
`bounds.invalid`, and the Services of a lazily asked subdomain policy as of the policy
itself. Each is checked over random walks of changes: a Clique's new object, its gang,
clique, instance label, hash label or deletion changed, Cliques added, removed and
reordered, the replicas and the cliques of the spec changed."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.controllers.base import bounds
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import setup as setups
from cliques.controllers.cliqueset.controller import (
    CliqueSetController,
    SetState,
    _stale,
    moved_or_new,
)
from cliques.controllers.features import subdomains

from .planner_fixtures import HASHES, clique, cliqueset, gangs
from .planner_fixtures import set_snapshot as snap


def _relabel(c: Clique, **changes: str | None) -> Clique:
    lab = dict(c.metadata.labels)
    for k, v in changes.items():
        if v is None:
            lab.pop(k, None)
        else:
            lab[k] = v
    return msgspec.structs.replace(c, metadata=msgspec.structs.replace(c.metadata, labels=lab))


def _mutate(rng: random.Random, cl: list[Clique]) -> list[Clique]:
    """A new list: most steps give one Clique a new object (a status), some change what
    the members depend on."""
    cl = list(cl)
    i = rng.randrange(len(cl)) if cl else 0
    what = rng.random()
    if not cl or what < 0.05:
        cl.append(clique(rng.randrange(6), rng.choice(["leader", "worker", "gone"])))
    elif what < 0.55:
        cl[i] = msgspec.structs.replace(cl[i])  # same content, a new object
    elif what < 0.65:
        cl[i] = clique(rng.randrange(6), cl[i].spec.clique_name)  # another gang
    elif what < 0.7:
        cl[i] = clique(cl[i].spec.gang_index, rng.choice(["leader", "worker", "gone"]))
    elif what < 0.75:
        cl[i] = _relabel(cl[i], **{labels.LABEL_GROUP_INDEX: rng.choice(["0", "1", None])})
    elif what < 0.8:
        cl[i] = _relabel(cl[i], **{labels.LABEL_TEMPLATE_HASH: rng.choice(["h1", "h0"])})
    elif what < 0.85:
        meta = msgspec.structs.replace(cl[i].metadata, deletion_timestamp="2030-01-01T00:00:00Z")
        cl[i] = msgspec.structs.replace(cl[i], metadata=meta)
    elif what < 0.9:
        del cl[i]
    elif what < 0.95:
        j = rng.randrange(len(cl))
        cl[i], cl[j] = cl[j], cl[i]
    else:
        cl.insert(i, cl[i])  # the same object twice
    return cl


def _sorted(m: Any) -> tuple[Any, Any]:
    by_gang = [(g, list(members.items())) for g, members in m.by_gang.items()]
    return by_gang, [(d.name, d.reason) for d in m.removed]


@pytest.mark.parametrize("seed", range(12))
def test_the_members_from_the_last_plan_are_those_found_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    cl = gangs(5)
    replicas = 5
    roles: tuple[tuple[str, int], ...] = (("leader", 1), ("worker", 2))
    last = None
    reused = 0
    for _ in range(300):
        if rng.random() < 0.03:
            replicas = rng.randrange(3, 7)
        if rng.random() < 0.02:
            roles = rng.choice([(("leader", 1), ("worker", 2)), (("leader", 1),)])
        cl = _mutate(rng, cl)
        s = snap(cliqueset(replicas=replicas, roles=roles), cl, hashes=dict(HASHES))
        setup = setups.read(s)
        assert not isinstance(setup, str)
        want = cliqueset_planner._members_by_gang(s, setup)
        got = cliqueset_planner._members_by_gang(s, setup, last)
        assert _sorted(got) == _sorted(want)
        reused += got.by_gang is not want.by_gang and last is not None
        last = got
    assert reused > 0


def test_the_members_are_found_again_when_the_caller_changes_its_list() -> None:
    cl = gangs(3)
    s = snap(cliqueset(replicas=3), cl, hashes=dict(HASHES))
    setup = setups.read(s)
    assert not isinstance(setup, str)
    first = cliqueset_planner._members_by_gang(s, setup)
    cl[0] = clique(2, cl[0].spec.clique_name)  # the same list, changed in place
    s = snap(cliqueset(replicas=3), cl, hashes=dict(HASHES))
    want = cliqueset_planner._members_by_gang(s, setup)
    assert _sorted(cliqueset_planner._members_by_gang(s, setup, first)) == _sorted(want)


def test_moved_or_new_is_every_object_not_where_it_was() -> None:
    a, b, c, d = (object() for _ in range(4))
    assert moved_or_new([a, b, c], [a, b, c]) == []
    assert moved_or_new([a, d, c], [a, b, c]) == [d]
    assert moved_or_new([b, a], [a, b]) == [b, a]
    assert moved_or_new([a, b, c, d], [a, b]) == [c, d]
    assert moved_or_new([a], [a, b]) == []


@pytest.mark.parametrize("seed", range(8))
def test_the_stale_cliques_from_the_last_plan_are_those_of_every_clique(seed: int) -> None:
    rng = random.Random(seed)
    state = SetState()
    ctl = SimpleNamespace(_state=lambda cqs: state)
    hashes = dict(HASHES)
    cl = gangs(4)
    cqs = cliqueset(replicas=4)
    for _ in range(300):
        if rng.random() < 0.03:
            hashes = rng.choice([dict(HASHES), {"leader": "h0", "worker": "h1"}])
        cl = _mutate(rng, cl)
        got = CliqueSetController._stale(ctl, cqs, cl, hashes)  # type: ignore[arg-type]
        assert [id(c) for c in got] == [id(c) for c in _stale(cl, hashes)]


def test_the_bounds_of_an_unchanged_spec_are_judged_once() -> None:
    state = SetState()
    ctl = SimpleNamespace(_state=lambda cqs: state)
    for replicas in (2, 2, 20_000, 20_000, 3):
        cqs = cliqueset(replicas=replicas)
        got = CliqueSetController._out_of_bounds(ctl, cqs)  # type: ignore[arg-type]
        assert got == bounds.invalid(cqs)
    assert CliqueSetController._out_of_bounds(ctl, cliqueset(replicas=20_000))  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["Shared", "UniquePerGang"])
@pytest.mark.parametrize("live", [(True, True), (True, False), (False, False)])
def test_services_asked_with_a_lazy_policy_are_those_of_the_policy(
    policy: str, live: tuple[bool, ...]
) -> None:
    cqs = cliqueset(replicas=2)
    recorded = [(alive, ("llama",) if alive else ()) for alive in live]
    asked: list[str] = []

    def lazy() -> str:
        asked.append(policy)
        return policy

    want = subdomains.wanted_services(cqs, recorded, policy)
    assert subdomains.wanted_services(cqs, recorded, lazy) == want
    assert len(asked) == (0 if all(live) else 1)


def test_the_policy_of_a_setup_is_found_only_when_asked(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    found: list[int] = []
    policy = subdomains.policy

    def counting(cqs, cliques):  # type: ignore[no-untyped-def]
        found.append(1)
        return policy(cqs, cliques)

    monkeypatch.setattr(subdomains, "policy", counting)
    cl = gangs(2)
    s = snap(cliqueset(replicas=2), cl, hashes=dict(HASHES))
    setup = setups.read(s)
    assert not isinstance(setup, str) and found == []
    assert setup.policy == policy(s.cliqueset, cl) and setup.policy == policy(s.cliqueset, cl)
    assert found == [1]
