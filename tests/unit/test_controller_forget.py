"""Each controller drops everything it keeps of an object in one `forget(key)`, called when
a reconcile finds the object gone: after that, none of its per-object containers holds the
object's key or UID. The containers are found by walking the controller's attributes (and
those of the objects of `cliques` it holds), so a dict or set added later without a
cleanup in `forget` fails here; with no cluster (the executor sends nothing)."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

import msgspec

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.pod import Pod
from cliques.api.service import Service
from cliques.controllers.base.actions import Plan
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.failures import Failure
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique.controller import CliqueController, gang_key
from cliques.controllers.cliqueset.controller import CliqueSetController, SetInformers
from cliques.kube import store
from cliques.kube.events import EventRecorder, ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, CLIQUESETS, PODS, SERVICES
from cliques.kube.workqueue import WorkQueue

from .planner_fixtures import clique, cliqueset

SET_KEY = "ns/llama"
CLIQUE_KEY = "ns/llama-0-worker"
#: What a controller holds but does not keep per object of its own: the caches, the work
#: queue (whose keys are work to do, not state) and the process's event recorder.
SHARED = (Informer, WorkQueue, EventRecorder)


class Quiet(Executor):
    """An executor that sends nothing."""

    async def execute(self, plan: Plan, ref: ObjectRef) -> None:
        pass

    async def write_status(self, *args: Any, **kw: Any) -> None:
        pass


def containers(controller: object) -> dict[str, Collection[Any]]:
    """Every dict and set reachable from `controller` through its attributes and those of
    the `cliques` objects it holds (not `SHARED` ones), by path."""
    found: dict[str, Collection[Any]] = {}
    seen: set[int] = set()

    def fields(obj: object) -> Iterator[tuple[str, Any]]:
        yield from getattr(obj, "__dict__", {}).items()
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if hasattr(obj, slot):
                    yield slot, getattr(obj, slot)

    def walk(obj: object, path: str) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for name, value in fields(obj):
            where = f"{path}.{name}"
            if isinstance(value, dict | set | frozenset):
                found[where] = value
            elif (
                type(value).__module__.startswith("cliques.")
                and not isinstance(value, (type, *SHARED))
                and not callable(value)
            ):
                walk(value, where)

    walk(controller, type(controller).__name__)
    return found


def holding(controller: object, *needles: str) -> list[str]:
    """The containers of `controller` that hold any of `needles` (as a member or dict key,
    or an element of a tuple key)."""

    def has(item: Any) -> bool:
        if isinstance(item, tuple):
            return any(has(x) for x in item)
        return isinstance(item, str) and item in needles

    return [path for path, c in containers(controller).items() if any(has(i) for i in c)]


def reached(attribute: str, paths: list[str]) -> bool:
    """Whether one of `paths` ends in `attribute` (the walk reaches an object by the first
    path it meets: `failures` may be `runner.failures`)."""
    return any(p.endswith("." + attribute) for p in paths)


# -- the CliqueSet controller ---------------------------------------------------------------


def set_controller() -> CliqueSetController:
    client: Any = None
    by_controller = {"controller": store.by_controller}
    sets: Informer[CliqueSet] = Informer(client, CLIQUESETS, CliqueSet)
    cliques: Informer[Clique] = Informer(client, CLIQUES, Clique, indexers=by_controller)
    svcs: Informer[Service] = Informer(client, SERVICES, Service, indexers=by_controller)
    exp = Expectations("cliqueset")
    informers = SetInformers(sets, cliques, svcs)
    return CliqueSetController(informers, Quiet(client, exp, None), exp, Hasher(), status_hold=10.0)


async def _kept(ctl: CliqueSetController, cqs: CliqueSet) -> None:
    """Reconcile `cqs` and leave something of it in every container the controller has for
    a set: its record, expectations, a held status, a refused write."""
    ctl.cliquesets.store.upsert(cqs)
    await ctl.reconcile(SET_KEY)
    uid = cqs.metadata.uid
    ctl.expectations.expect_creates(uid, ["llama-9-leader"])
    ctl.failures.record(SET_KEY, cqs.metadata.generation, Failure("Forbidden", "no"))
    ctl.held.arm(SET_KEY)


async def test_the_walk_finds_the_set_controllers_containers() -> None:
    ctl = set_controller()
    await _kept(ctl, cliqueset())
    found = holding(ctl, SET_KEY, "cqs-uid")
    want = ["states", "uids", "held._timers", "held._since", "failures._by_key"]
    assert all(reached(w, found) for w in [*want, "expectations._owners"]), found


async def test_a_deleted_set_is_forgotten_by_its_reconcile() -> None:
    ctl = set_controller()
    cqs = cliqueset()
    await _kept(ctl, cqs)
    ctl.cliquesets.store.remove(SET_KEY)
    ctl._on_cliqueset("DELETED", cqs, cqs)
    await ctl.reconcile(SET_KEY)
    assert holding(ctl, SET_KEY, cqs.metadata.uid) == []


async def test_a_set_made_again_under_its_name_forgets_the_one_before() -> None:
    ctl = set_controller()
    old = cliqueset()
    await _kept(ctl, old)
    new = msgspec.convert(msgspec.to_builtins(old), CliqueSet)
    new.metadata.uid = "cqs-uid-2"
    ctl.cliquesets.store.upsert(new)
    await ctl.reconcile(SET_KEY)
    assert holding(ctl, old.metadata.uid) == []
    assert ctl.failures.current(SET_KEY, new.metadata.generation) is None


async def test_a_set_being_deleted_is_forgotten() -> None:
    ctl = set_controller()
    cqs = cliqueset()
    await _kept(ctl, cqs)
    going = msgspec.convert(msgspec.to_builtins(cqs), CliqueSet)
    going.metadata.deletion_timestamp = "2026-11-25T00:00:00Z"
    ctl.cliquesets.store.upsert(going)
    await ctl.reconcile(SET_KEY)
    assert holding(ctl, SET_KEY, cqs.metadata.uid) == []


# -- the Clique controller ------------------------------------------------------------------


def clique_controller(c: Clique) -> CliqueController:
    client: Any = None
    cliques: Informer[Clique] = Informer(
        client, CLIQUES, Clique, indexers={"controller": store.by_controller, "gang": gang_key}
    )
    pods: Informer[Pod] = Informer(client, PODS, Pod, indexers={"controller": store.by_controller})
    cliques.store.upsert(c)
    exp = Expectations("clique")
    return CliqueController(
        cliques, pods, Quiet(client, exp, None), exp, Hasher(), status_hold=10.0
    )


async def _clique_kept(ctl: CliqueController, c: Clique) -> None:
    await ctl.reconcile(CLIQUE_KEY)
    ctl.expectations.expect_creates(c.metadata.uid, ["llama-0-worker-0"])
    ctl.failures.record(CLIQUE_KEY, c.metadata.generation, Failure("Forbidden", "no"))
    ctl.held.arm(CLIQUE_KEY)
    ctl._blocked.add(CLIQUE_KEY)


async def test_the_walk_finds_the_clique_controllers_containers() -> None:
    c = clique(0, "worker", ready=False)
    ctl = clique_controller(c)
    await _clique_kept(ctl, c)
    found = holding(ctl, CLIQUE_KEY, c.metadata.uid)
    want = ["uids", "_blocked", "held._timers", "held._since", "failures._by_key"]
    assert all(reached(w, found) for w in [*want, "expectations._owners"]), found


async def test_a_deleted_clique_is_forgotten_by_its_reconcile() -> None:
    c = clique(0, "worker", ready=False)
    ctl = clique_controller(c)
    await _clique_kept(ctl, c)
    ctl.cliques.store.remove(CLIQUE_KEY)
    ctl._on_clique("DELETED", c, c)
    await ctl.reconcile(CLIQUE_KEY)
    assert holding(ctl, CLIQUE_KEY, c.metadata.uid) == []


async def test_a_clique_made_again_under_its_name_forgets_the_one_before() -> None:
    c = clique(0, "worker", ready=False)
    ctl = clique_controller(c)
    await _clique_kept(ctl, c)
    new = msgspec.convert(msgspec.to_builtins(c), Clique)
    new.metadata.uid = "uid-2"
    ctl.cliques.store.upsert(new)
    await ctl.reconcile(CLIQUE_KEY)
    assert holding(ctl, c.metadata.uid) == []
