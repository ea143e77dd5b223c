"""The CliqueSet plan's shortcuts for a set planned again after one of its Cliques changed
decide as the definitions they shortcut: the Cliques by gang from the last plan's
(`planner._members_again`) as `_members_by_gang` from scratch (and the gangs that lack a
member as those `_new_cliques` does not skip), the verdicts gathered from the last plan's
(`rollout._judged_again`) as `judge_gangs` from scratch, whole plans handed on as plans
from scratch, the stale Cliques from the last plan's as `_stale` over every Clique, the
gang metrics' views from the last plan's as `gang_views`, the bounds of a spec object
judged once as `bounds.invalid`, and the Services of a lazily asked subdomain policy as of
the policy itself. Each is checked over random walks of changes: a Clique's new object,
status, size or hash, its gang, clique, instance label or deletion changed, Cliques added,
removed and reordered, the replicas and the cliques of the spec changed."""

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
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset import setup as setups
from cliques.controllers.cliqueset.controller import (
    CliqueSetController,
    SetState,
    _stale,
    gang_views,
    moved_or_new,
)
from cliques.controllers.features import subdomains

from .planner_fixtures import HASHES, clique, cliqueset, gangs, services
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


def _counting(monkeypatch: Any, module: Any, name: str) -> list[int]:
    """Counts the answers (not None) of `module.name`: the shortcut was taken."""
    hits: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any) -> Any:
        got = real(*args)
        hits.extend([1] if got is not None else [])
        return got

    monkeypatch.setattr(module, name, counted)
    return hits


@pytest.mark.parametrize("seed", range(12))
def test_the_members_from_the_last_plan_are_those_found_from_scratch(
    seed: int, monkeypatch: Any
) -> None:
    hits = _counting(monkeypatch, cliqueset_planner, "_members_again")
    rng = random.Random(seed)
    cl = gangs(5)
    replicas = 5
    roles: tuple[tuple[str, int], ...] = (("leader", 1), ("worker", 2))
    last = None
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
        # the gangs `_new_cliques` looks at: those it does not skip as whole
        wanted = setup.wanted_of(0).keys()
        whole = [g in got.by_gang and wanted <= got.by_gang[g].keys() for g in range(replicas)]
        assert got.lacking == [g for g in range(replicas) if not whole[g]]
        last = got
    assert len(hits) > 20


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


def _status_step(rng: random.Random, cl: list[Clique]) -> list[Clique]:
    """A new list with one Clique remade with another status, hash or size (the set's
    usual change while it waits), or `_mutate`'s change."""
    if not cl or rng.random() < 0.3:
        return _mutate(rng, cl)
    cl = list(cl)
    i = rng.randrange(len(cl))
    old = cl[i]
    cl[i] = clique(
        old.spec.gang_index,
        old.spec.clique_name,
        ready=rng.random() < 0.7,
        hash_=rng.choice(["h1", "h1", "h0"]),
        replicas=rng.choice([1, 1, 2]) if old.spec.clique_name == "leader" else 2,
    )
    return cl


def _gathered(g: Any) -> tuple[Any, ...]:
    return (g.facts, g.changes, g.outdated, list(g.judgement.gangs.items()))


@pytest.mark.parametrize("seed", range(12))
def test_the_verdicts_gathered_from_the_last_plan_are_those_gathered_from_scratch(
    seed: int, monkeypatch: Any
) -> None:
    hits = _counting(monkeypatch, cliqueset_rollout, "_judged_again")
    rng = random.Random(seed)
    cl = gangs(5)
    replicas = 5
    hashes = dict(HASHES)
    last_members = None
    previous = None
    for _ in range(300):
        if rng.random() < 0.03:
            replicas = rng.randrange(3, 7)
        if rng.random() < 0.03:
            hashes = rng.choice([dict(HASHES), {"leader": "h0", "worker": "h1"}])
        cl = _status_step(rng, cl)
        s = snap(cliqueset(replicas=replicas), cl, hashes=hashes)
        setup = setups.read(s)
        assert not isinstance(setup, str)
        members = cliqueset_planner._members_by_gang(s, setup, last_members)
        ctx = cliqueset_rollout.context(s.cliqueset, hashes, setup.deps, s.algorithm)
        rehashes: dict[str, str] = {}
        want = cliqueset_rollout.judge_gangs(members.by_gang, replicas, ctx, rehashes, None)
        got = cliqueset_rollout.judge_gangs(members.by_gang, replicas, ctx, rehashes, previous)
        assert _gathered(got) == _gathered(want)
        last_members, previous = members, got.judgement
    assert len(hits) > 20


@pytest.mark.parametrize("seed", range(6))
def test_plans_handed_on_from_the_last_are_the_plans_from_scratch(
    seed: int, monkeypatch: Any
) -> None:
    judged = _counting(monkeypatch, cliqueset_rollout, "_judged_again")
    sorted_ = _counting(monkeypatch, cliqueset_planner, "_members_again")
    state = SetState()
    ctl = SimpleNamespace(_state=lambda cqs: state)
    rng = random.Random(seed)
    cl = gangs(6)
    replicas = 6
    previous = None
    for _ in range(150):
        if rng.random() < 0.03:
            replicas = rng.randrange(4, 8)
        cl = _status_step(rng, cl)
        cqs = cliqueset(replicas=replicas, max_unavailable=2)
        hashes = dict(HASHES)
        fresh = cliqueset_planner.plan(snap(cqs, cl, services=services(8), hashes=hashes))
        handed_on = cliqueset_planner.plan(
            snap(cqs, cl, services=services(8), hashes=hashes, previous=previous)
        )
        assert _same_plan(fresh, handed_on)
        previous = handed_on.judgement
        # the gang metrics' views, from the last plan's where the verdicts are the same
        assert previous is not None
        views = CliqueSetController._gang_views(ctl, cqs, previous.gangs)  # type: ignore[arg-type]
        assert list(views.items()) == list(gang_views(previous.gangs, replicas).items())
    assert len(judged) > 20 and len(sorted_) > 20


def _same_plan(a: Any, b: Any) -> bool:
    return bool(
        a.status == b.status
        and [(p.name, p.patch) for p in a.patches] == [(p.name, p.patch) for p in b.patches]
        and [(c.name, c.body) for c in a.creates] == [(c.name, c.body) for c in b.creates]
        and [(d.name, d.reason) for d in a.deletes] == [(d.name, d.reason) for d in b.deletes]
        and a.events == b.events
        and a.requeue_after == b.requeue_after
        and (a.restarting, a.failed, a.deferred, a.moving)
        == (b.restarting, b.failed, b.deferred, b.moving)
    )


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
        got = CliqueSetController._stale_of(ctl, cqs, cl, hashes)  # type: ignore[arg-type]
        assert [id(c) for c in got] == [id(c) for c in _stale(cl, hashes)]


def test_the_bounds_of_a_spec_are_judged_once(monkeypatch: Any) -> None:
    state = SetState()
    ctl = SimpleNamespace(_state=lambda cqs: state)
    real = bounds.invalid
    judged = _counting(monkeypatch, bounds, "invalid")
    # (the same generation throughout: a spec changed under it is judged again too)
    sets = [cliqueset(replicas=r) for r in (2, 20_000, 3)]
    for cqs in [sets[0], sets[0], sets[1], sets[1], sets[2], sets[0]]:
        got = CliqueSetController._out_of_bounds(ctl, cqs)  # type: ignore[arg-type]
        assert got == real(cqs)
    assert len(judged) == 4


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
