"""A CliqueSet whose last plan had nothing to do is not planned again until something the
planner reads changes, and a CliqueSet status that only reports a scale's progress is held
back; with no cluster (the plans under test send no request)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.cliqueset_status import CliqueSetStatus
from cliques.api.meta import Condition
from cliques.api.service import Service
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.failures import Failure
from cliques.controllers.base.revision import Hasher
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import status as cliqueset_status
from cliques.controllers.cliqueset.controller import CliqueSetController, SetInformers
from cliques.kube import store
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer
from cliques.kube.objects import key_of
from cliques.kube.resources import CLIQUES, CLIQUESETS, SERVICES

from .planner_fixtures import cliqueset, gangs, services

KEY = "ns/llama"


class Recording(Executor):
    """An executor that records the status writes it is asked for instead of sending them."""

    statuses: list[str]

    #: the cache the API server's answer goes to (write-through), if any
    through: Informer[CliqueSet] | None = None

    async def write_status(
        self, resource: Any, ns: str, name: str, rv: str, status: Any, **kw: Any
    ) -> None:
        self.statuses.append(name)
        if self.through is not None:
            now = self.through.store.get(f"{ns}/{name}")
            assert now is not None
            answer = msgspec.convert(msgspec.to_builtins(now), CliqueSet)
            answer.status = msgspec.convert(status, CliqueSetStatus)
            self.through.store.upsert(answer)


class Counted(CliqueSetController):
    """The controller, counting its plans."""

    plans = 0

    def _planned(
        self, snap: cliqueset_planner.CliqueSetSnapshot
    ) -> cliqueset_planner.CliqueSetPlan:
        self.plans += 1
        return super()._planned(snap)


def controller(replicas: int = 2, *, hold: float = 10.0) -> tuple[Counted, CliqueSet]:
    """A controller whose cache holds a CliqueSet of `replicas` Ready gangs and its
    Services, with the status its planner computes for them (nothing to do)."""
    client: Any = None
    by_controller = {"controller": store.by_controller}
    sets: Informer[CliqueSet] = Informer(client, CLIQUESETS, CliqueSet)
    cliques: Informer[Clique] = Informer(client, CLIQUES, Clique, indexers=by_controller)
    svcs: Informer[Service] = Informer(client, SERVICES, Service, indexers=by_controller)
    exp = Expectations("cliqueset")
    executor = Recording(client, exp, None)
    executor.statuses = []
    ctl = Counted(SetInformers(sets, cliques, svcs), executor, exp, Hasher(), status_hold=hold)
    cqs = cliqueset(replicas=replicas)
    want = ctl._hashes(cqs)[0]["leader"]
    for c in gangs(replicas, hash_=want):
        cliques.store.upsert(c)
    for s in services(replicas):
        svcs.store.upsert(s)
    plan = ctl._plan(cqs)
    assert plan.writes == 0, "the fixture must leave nothing to write"
    cqs.status = plan.status
    sets.store.upsert(cqs)
    ctl.plans = 0
    return ctl, cqs


def relabelled(cqs: CliqueSet) -> CliqueSet:
    """`cqs` with an annotation changed (a new object, as the informer decodes it)."""
    new = msgspec.convert(msgspec.to_builtins(cqs), CliqueSet)
    new.metadata.annotations["touched"] = "yes"
    new.metadata.resource_version = "11"
    return new


async def test_a_settled_set_is_not_planned_again_for_a_change_the_planner_never_reads() -> None:
    ctl, cqs = controller()
    await ctl.reconcile(KEY)
    assert ctl.plans == 1
    await ctl.reconcile(KEY)
    ctl.cliquesets.store.upsert(relabelled(cqs))
    await ctl.reconcile(KEY)
    assert ctl.plans == 1


async def test_a_set_whose_plan_only_wrote_its_status_is_settled_too() -> None:
    ctl, cqs = controller()
    executor: Recording = ctl.runner.executor  # type: ignore[assignment]
    executor.through = ctl.cliquesets
    stale = relabelled(cqs)
    assert stale.status is not None
    stale.status.ready_replicas = 0
    ctl.cliquesets.store.upsert(stale)
    await ctl.reconcile(KEY)
    assert executor.statuses == ["llama"] and ctl.plans == 1
    ctl.cliquesets.store.upsert(relabelled(ctl.cliquesets.store.get(KEY)))  # type: ignore[arg-type]
    await ctl.reconcile(KEY)
    assert ctl.plans == 1, "the status it wrote is the status it would write again"


async def test_a_child_change_plans_again() -> None:
    ctl, _ = controller()
    await ctl.reconcile(KEY)
    child = ctl.cliques.store.get("ns/llama-1-worker")
    assert child is not None
    ctl._on_child("MODIFIED", child, child)
    await ctl.reconcile(KEY)
    assert ctl.plans == 2


async def test_a_child_deleted_or_taken_over_plans_again() -> None:
    ctl, _ = controller()
    await ctl.reconcile(KEY)
    child = ctl.cliques.store.get("ns/llama-1-worker")
    assert child is not None
    orphan = msgspec.convert(msgspec.to_builtins(child), Clique)
    orphan.metadata.owner_references = []
    ctl._on_child("MODIFIED", child, orphan)  # the old owner counts the change too
    await ctl.reconcile(KEY)
    assert ctl.plans == 2


@pytest.mark.parametrize("what", ["generation", "status", "expectations", "failure"])
async def test_anything_else_the_planner_reads_plans_again(what: str) -> None:
    ctl, cqs = controller()
    await ctl.reconcile(KEY)
    new = relabelled(cqs)
    if what == "generation":
        new.metadata.generation += 1
    elif what == "status":
        assert new.status is not None
        new.status.ready_replicas = 0  # someone else's write of the status
    elif what == "expectations":
        ctl.expectations.expect_creates(cqs.metadata.uid, ["llama-9-leader"])
    else:
        ctl.failures._by_key[KEY] = (cqs.metadata.generation, Failure("Forbidden", "no"))
    ctl.cliquesets.store.upsert(new)
    await ctl.reconcile(KEY)
    assert ctl.plans == 2
    written = ctl.runner.executor.statuses  # type: ignore[attr-defined]
    assert written == ([] if what == "expectations" else ["llama"])


async def test_a_child_change_while_planning_is_not_lost() -> None:
    ctl, _ = controller()
    child = ctl.cliques.store.get("ns/llama-0-leader")
    assert child is not None
    plan_once = ctl._planned

    def racing(snap: cliqueset_planner.CliqueSetSnapshot) -> cliqueset_planner.CliqueSetPlan:
        ctl._on_child("MODIFIED", child, child)  # a watch event after the snapshot
        return plan_once(snap)

    ctl._planned = racing  # type: ignore[method-assign]
    await ctl.reconcile(KEY)
    ctl._planned = plan_once  # type: ignore[method-assign]
    await ctl.reconcile(KEY)
    assert ctl.plans == 2, "the event that came while planning must lead to a plan"


async def test_a_deleted_set_forgets_what_it_saw() -> None:
    ctl, cqs = controller()
    await ctl.reconcile(KEY)
    state = ctl.states[cqs.metadata.uid]
    assert state.settled is not None and state.hashes is not None
    assert state.judgement is not None
    ctl.cliquesets.store.remove(KEY)
    ctl._on_cliqueset("DELETED", cqs, cqs)
    await ctl.reconcile(KEY)
    assert cqs.metadata.uid not in ctl.states


async def test_a_deleted_set_leaves_no_state_behind() -> None:
    """Whatever a set left in the controller (its record, expectations, a held status, a
    refused write) is gone once a reconcile finds it gone (`forget`)."""
    ctl, cqs = controller()
    uid = cqs.metadata.uid
    stale = relabelled(cqs)
    assert stale.status is not None
    stale.status.ready_replicas = 0
    ctl.cliquesets.store.upsert(stale)
    await ctl.reconcile(KEY)
    ctl.expectations.expect_creates(uid, ["llama-9-leader"])
    ctl.failures._by_key[KEY] = (cqs.metadata.generation, Failure("Forbidden", "no"))
    ctl.held.arm(KEY)
    ctl._on_child("MODIFIED", None, ctl.cliques.store.get("ns/llama-0-leader"))
    assert ctl.states[uid].children == 1 and KEY in ctl.held
    assert not ctl.expectations.satisfied(uid)

    ctl.cliquesets.store.remove(KEY)
    ctl._on_cliqueset("DELETED", cqs, cqs)
    await ctl.reconcile(KEY)
    assert ctl.states == {} and ctl.uids == {}
    assert ctl.expectations.satisfied(uid)
    assert ctl.failures.current(KEY, cqs.metadata.generation) is None
    assert KEY not in ctl.held


# -- the status hold -----------------------------------------------------------------------


def _status(
    replicas: int = 3,
    ready: int = 1,
    available: int = 1,
    *,
    progressing: tuple[str, str] = ("True", "Scaling"),
    available_c: tuple[str, str] = ("False", "GangsUnavailable"),
    degraded: tuple[str, str, str] = ("False", "AsExpected", "no gang is below minAvailable"),
    generation: int = 1,
) -> CliqueSetStatus:
    def cond(type_: str, status: str, reason: str, message: str) -> Condition:
        return Condition(
            type=type_,
            status=status,  # type: ignore[arg-type]
            reason=reason,
            message=message,
            last_transition_time="2026-11-25T00:00:00Z",
            observed_generation=generation,
        )

    counted = f"{available}/4 gangs available"
    return CliqueSetStatus(
        observed_generation=generation,
        replicas=replicas,
        ready_replicas=ready,
        available_replicas=available,
        updated_replicas=replicas,
        template_hash="h",
        hash_algorithm=1,
        selector="cliques.dev/cliqueset=llama",
        conditions=[
            cond("Available", *available_c, counted),
            cond("Progressing", *progressing, counted),
            cond("Degraded", *degraded),
        ],
    )


def test_more_gangs_created_ready_or_available_is_progress() -> None:
    old = _status(replicas=2, ready=0, available=0)
    assert cliqueset_status.progress_only(old, _status(replicas=3, ready=1, available=1))
    assert cliqueset_status.progress_only(old, old)


@pytest.mark.parametrize(
    ("why", "new"),
    [
        ("fewer available", _status(available=0)),
        ("fewer ready", _status(ready=0)),
        ("fewer gangs", _status(replicas=2)),
        ("all available", _status(available_c=("True", "AllGangsAvailable"))),
        ("a rollout", _status(progressing=("True", "RollingUpdate"))),
        ("complete", _status(progressing=("False", "Complete"))),
        ("degraded", _status(degraded=("True", "BelowMinAvailable", "below: x"))),
        ("a new generation", _status(generation=2)),
    ],
)
def test_news_is_not_progress(why: str, new: CliqueSetStatus) -> None:
    assert not cliqueset_status.progress_only(_status(), new), why


def test_a_first_status_and_other_messages_are_news() -> None:
    assert not cliqueset_status.progress_only(None, _status())
    new = _status()
    new.conditions[2] = msgspec.structs.replace(new.conditions[2], message="changed")
    assert not cliqueset_status.progress_only(_status(), new)
    more = _status()
    more.conditions.append(more.conditions[2])
    assert not cliqueset_status.progress_only(_status(), more)


async def test_a_progress_status_is_held_then_written_when_the_hold_is_up() -> None:
    ctl, _ = controller(hold=0.05)
    old = _status(replicas=2, ready=0, available=0)
    new = _status(replicas=2, ready=1, available=1)
    assert ctl.held.hold(KEY, old, new)
    assert KEY in ctl.held
    for _ in range(100):  # the timer enqueues the set when the hold is up
        if len(ctl.queue) > 0:
            break
        await asyncio.sleep(0.01)
    assert len(ctl.queue) > 0
    assert not ctl.held.hold(KEY, old, new), "a status past its hold is written"
    assert KEY not in ctl.held


async def test_news_releases_the_hold() -> None:
    ctl, _ = controller()
    old = _status(replicas=2, ready=0, available=0)
    assert ctl.held.hold(KEY, old, _status(replicas=2, ready=1, available=1))
    assert not ctl.held.hold(KEY, old, _status(available=0, ready=0, replicas=1))
    assert KEY not in ctl.held


def test_without_a_hold_nothing_is_held() -> None:
    ctl, _ = controller(hold=0.0)
    old = _status(replicas=2, ready=0, available=0)
    assert not ctl.held.hold(KEY, old, _status())
    assert key_of(ctl.cliquesets.store.get(KEY)) == KEY
