"""An owner deleted with propagation Orphan: the operator's own orphaning of its objects
(`orphaning`), planned purely, and each controller carrying it out before it forgets the
owner (the CliqueSet's objects, the Clique's pods)."""

from __future__ import annotations

from typing import Any

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import OwnerReference
from cliques.api.pod import Pod
from cliques.api.service import Service
from cliques.controllers.base import orphaning
from cliques.controllers.base.actions import Plan
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique.controller import CliqueController
from cliques.controllers.cliqueset.controller import CliqueSetController, SetInformers
from cliques.kube import store
from cliques.kube.events import ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, CLIQUESETS, PODS, SERVICES

from .planner_fixtures import clique, cliqueset, pod

GONE = "2026-11-29T00:00:00Z"
BY_CONTROLLER = {"controller": store.by_controller}
OTHER = OwnerReference(api_version="v1", kind="ConfigMap", name="keep", uid="cm-uid")


def deleting(finalizers: list[str]) -> CliqueSet:
    cqs = cliqueset()
    cqs.metadata.deletion_timestamp = GONE
    cqs.metadata.finalizers = finalizers
    return cqs


def test_only_a_delete_with_the_orphan_finalizer_orphans() -> None:
    assert orphaning.orphaning(deleting(["orphan"]))
    assert not orphaning.orphaning(deleting(["foregroundDeletion"]))
    assert not orphaning.orphaning(deleting([]))
    live = cliqueset()
    live.metadata.finalizers = ["orphan"]
    assert not orphaning.orphaning(live)


def test_each_object_loses_the_set_and_keeps_its_other_owners() -> None:
    cqs = deleting(["orphan"])
    lead, work = clique(0, "leader"), clique(0, "worker")
    work.metadata.owner_references.insert(0, OTHER)
    plan = orphaning.plan(cqs, [(CLIQUES, lead), (CLIQUES, work)])
    assert [p.name for p in plan.patches] == [lead.metadata.name, work.metadata.name]
    # Guarded by a test of the reference, not the resourceVersion (status writes move it).
    assert plan.patches[0].patch == [
        {"op": "test", "path": "/metadata/ownerReferences/0/uid", "value": "cqs-uid"},
        {"op": "remove", "path": "/metadata/ownerReferences/0"},
    ]
    assert plan.patches[1].patch == [
        {"op": "test", "path": "/metadata/ownerReferences/1/uid", "value": "cqs-uid"},
        {"op": "remove", "path": "/metadata/ownerReferences/1"},
    ]
    assert all(p.resource == CLIQUES and p.patch_type == "json" for p in plan.patches)
    # An object moved on (a failed test answers 422) or gone is done, not a failure.
    assert all(p.moot_if_stale for p in plan.patches)
    assert not plan.creates and not plan.deletes


def test_a_reference_given_twice_goes_last_first() -> None:
    cqs = deleting(["orphan"])
    twice = clique(0, "leader")
    twice.metadata.owner_references = [*twice.metadata.owner_references, OTHER]
    twice.metadata.owner_references.append(twice.metadata.owner_references[0])
    (patch,) = orphaning.plan(cqs, [(CLIQUES, twice)]).patches
    assert [op["path"] for op in patch.patch] == [
        "/metadata/ownerReferences/2/uid",
        "/metadata/ownerReferences/2",
        "/metadata/ownerReferences/0/uid",
        "/metadata/ownerReferences/0",
    ]


def test_objects_already_free_or_being_deleted_are_left_alone() -> None:
    cqs = deleting(["orphan"])
    free = clique(0, "leader")
    free.metadata.owner_references = [OTHER]
    dying = clique(0, "worker")
    dying.metadata.deletion_timestamp = GONE
    assert orphaning.plan(cqs, [(CLIQUES, free), (CLIQUES, dying)]).patches == []


class Recording(Executor):
    """An executor that keeps the plans it is handed and sends nothing."""

    def __init__(self) -> None:
        self.plans: list[Plan] = []

    async def execute(self, plan: Plan, ref: ObjectRef) -> None:
        self.plans.append(plan)

    async def write_status(self, *args: Any, **kw: Any) -> None:
        pass


def controller(executor: Executor) -> CliqueSetController:
    client: Any = None
    sets: Informer[CliqueSet] = Informer(client, CLIQUESETS, CliqueSet)
    cliques: Informer[Clique] = Informer(client, CLIQUES, Clique, indexers=BY_CONTROLLER)
    svcs: Informer[Service] = Informer(client, SERVICES, Service, indexers=BY_CONTROLLER)
    exp = Expectations("cliqueset")
    return CliqueSetController(SetInformers(sets, cliques, svcs), executor, exp, Hasher())


async def test_the_controller_orphans_the_set_s_objects_before_it_forgets_it() -> None:
    executor = Recording()
    ctl = controller(executor)
    cqs = deleting(["orphan"])
    ctl.cliquesets.store.upsert(cqs)
    for c in (clique(0, "leader"), clique(0, "worker"), clique(1, "leader")):
        ctl.cliques.store.upsert(c)
    await ctl.reconcile("ns/llama")
    (plan,) = executor.plans
    assert sorted(p.name for p in plan.patches) == [
        "llama-0-leader",
        "llama-0-worker",
        "llama-1-leader",
    ]
    assert ctl.states == {}


async def test_a_set_deleted_otherwise_is_left_to_the_collector() -> None:
    executor = Recording()
    ctl = controller(executor)
    ctl.cliquesets.store.upsert(deleting(["foregroundDeletion"]))
    ctl.cliques.store.upsert(clique(0, "leader"))
    await ctl.reconcile("ns/llama")
    assert executor.plans == []


async def test_a_clique_deleted_with_orphan_lets_go_of_its_pods() -> None:
    executor = Recording()
    client: Any = None
    cliques: Informer[Clique] = Informer(client, CLIQUES, Clique, indexers=BY_CONTROLLER)
    pods: Informer[Pod] = Informer(client, PODS, Pod, indexers=BY_CONTROLLER)
    going = clique(0, "worker", replicas=2)
    going.metadata.deletion_timestamp = GONE
    going.metadata.finalizers = ["orphan"]
    cliques.store.upsert(going)
    for i in range(2):
        pods.store.upsert(pod(going, i))
    ctl = CliqueController(cliques, pods, executor, Expectations("clique"), Hasher())
    await ctl.reconcile(f"ns/{going.metadata.name}")
    (plan,) = executor.plans
    assert [(p.resource, p.name) for p in plan.patches] == [
        (PODS, "llama-0-worker-0"),
        (PODS, "llama-0-worker-1"),
    ]
    assert all(
        p.patch[-1] == {"op": "remove", "path": "/metadata/ownerReferences/0"} for p in plan.patches
    )


async def test_a_set_with_creates_not_seen_yet_is_looked_at_again() -> None:
    executor = Recording()
    ctl = controller(executor)
    cqs = deleting(["orphan"])
    ctl.cliquesets.store.upsert(cqs)
    ctl.expectations.expect_creates(cqs.metadata.uid, ["llama-1-leader"])
    result = await ctl.reconcile("ns/llama")
    assert result.requeue_after > 0
    # once the create is seen (and orphaned), the set is forgotten
    ctl.cliques.store.upsert(clique(1, "leader"))
    ctl.expectations.created(cqs.metadata.uid, "llama-1-leader")
    result = await ctl.reconcile("ns/llama")
    assert result.requeue_after == 0
    assert [p.name for p in executor.plans[-1].patches] == ["llama-1-leader"]
