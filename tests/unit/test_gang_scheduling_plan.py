"""Gang scheduling in the CliqueSet planner: the backend decided per CliqueSet against a
(fake) discovery result, the Workload created before any Clique of a new gang, the Workload
recorded on Cliques and referenced by pods, unused Workloads deleted, start order with the
Workload backend, and the GangScheduling condition said once."""

from __future__ import annotations

import msgspec

from cliques.api import labels
from cliques.api.meta import ObjectMeta, OwnerReference
from cliques.api.policies import GangScheduling
from cliques.api.workload import Workload
from cliques.controllers.clique import bodies as pod_bodies
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import gang_apis, workload
from cliques.kube import gangapi
from tests.support import bodies as support_bodies
from tests.unit.planner_fixtures import cliqueset, gangs, set_snapshot


def with_backend(backend: str, **kw: object):  # type: ignore[no-untyped-def]
    cqs = cliqueset(**kw)  # type: ignore[arg-type]
    spec = msgspec.structs.replace(cqs.spec, gang_scheduling=GangScheduling(backend=backend))  # type: ignore[arg-type]
    return msgspec.structs.replace(cqs, spec=spec)


def owned(name: str) -> Workload:
    ref = OwnerReference(
        api_version="x", kind="CliqueSet", name="llama", uid="cqs-uid", controller=True
    )
    return Workload(
        metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}", owner_references=[ref])
    )


def gang_condition(plan: cliqueset_planner.CliqueSetPlan) -> tuple[str, str]:
    assert plan.status is not None
    c = next(c for c in plan.status.conditions if c.type == "GangScheduling")
    return c.status, c.reason


def test_workload_is_created_first_then_the_cliques_record_it() -> None:
    cqs = with_backend("Auto", replicas=2)
    name = workload.workload_name(cqs)
    first = cliqueset_planner.plan(set_snapshot(cqs, [], gang_api=gang_apis.of("v1alpha1")))
    assert [(c.resource.kind, c.name) for c in first.creates if c.resource.kind != "Service"] == [
        ("Workload", name)
    ]
    body = first.creates[0].body
    assert body["spec"]["podGroups"] == [{"name": "gang", "policy": {"gang": {"minCount": 3}}}]
    assert body["metadata"]["labels"][labels.LABEL_BUCKET]
    assert gang_condition(first) == ("True", workload.REASON_WORKLOAD)
    assert [e.reason for e in first.events] == [workload.REASON_WORKLOAD]

    second = cliqueset_planner.plan(
        set_snapshot(cqs, [], gang_api=gang_apis.of("v1alpha1"), workloads=[owned(name)])
    )
    cliques = [c for c in second.creates if c.resource.kind == "Clique"]
    assert len(cliques) == 4
    assert all(
        c.body["metadata"]["annotations"][labels.ANNOTATION_WORKLOAD] == name for c in cliques
    )
    assert not any(c.resource.kind == "Workload" for c in second.creates)


def test_pods_reference_the_recorded_workload() -> None:
    cqs = with_backend("Workload", replicas=2)
    tmpl = cqs.spec.template.cliques[1]
    body = support_bodies.clique_body(
        cqs,
        1,
        tmpl,
        template_hash="h",
        algorithm=1,
        bucket="0",
        workload="llama-abc",
    )
    from cliques.api.clique import Clique

    clique = msgspec.convert(body, Clique)
    pod = pod_bodies.pod_body(clique, 0, "h", 1)
    assert pod["spec"]["workloadRef"] == {
        "name": "llama-abc",
        "podGroup": "gang",
        "podGroupReplicaKey": "1",
    }
    plain = support_bodies.clique_body(cqs, 1, tmpl, template_hash="h", algorithm=1, bucket="0")
    assert (
        "workloadRef" not in pod_bodies.pod_body(msgspec.convert(plain, Clique), 0, "h", 1)["spec"]
    )


def test_a_gang_keeps_its_workload_and_unused_ones_are_deleted() -> None:
    cqs = with_backend("Auto", replicas=2)
    current = workload.workload_name(cqs)
    members = gangs(2, annotations={labels.ANNOTATION_WORKLOAD: "llama-old"})
    # gang 1 lost its worker Clique: it comes back on the gang's own Workload
    members = [c for c in members if c.metadata.name != labels.clique_name("llama", 1, "worker")]
    snap = set_snapshot(
        cqs,
        members,
        gang_api=gang_apis.of("v1alpha1"),
        workloads=[owned(current), owned("llama-old"), owned("llama-older")],
    )
    plan = cliqueset_planner.plan(snap)
    cliques = [c for c in plan.creates if c.resource.kind == "Clique"]
    assert [c.body["metadata"]["annotations"][labels.ANNOTATION_WORKLOAD] for c in cliques] == [
        "llama-old"
    ]
    assert [(d.resource.kind, d.name) for d in plan.deletes] == [("Workload", "llama-older")]


def test_auto_falls_back_without_the_api_and_says_so_once() -> None:
    cqs = with_backend("Auto", replicas=1)
    found = gangapi.interpret(["v1"], {})
    snap = set_snapshot(cqs, [], gang_api=gang_apis.pick(found))
    plan = cliqueset_planner.plan(snap)
    assert gang_condition(plan) == ("False", workload.REASON_UNAVAILABLE)
    assert [e.reason for e in plan.events] == [workload.REASON_UNAVAILABLE]
    cliques = [c for c in plan.creates if c.resource.kind == "Clique"]
    assert cliques and all(
        labels.ANNOTATION_WORKLOAD not in c.body["metadata"]["annotations"] for c in cliques
    )
    assert not any(c.resource.kind == "Workload" for c in plan.creates)
    again = msgspec.structs.replace(cqs, status=plan.status)
    later = cliqueset_planner.plan(
        set_snapshot(again, [], gang_api=gang_apis.of("", detail=found.describe()))
    )
    assert not [e for e in later.events if e.reason == workload.REASON_UNAVAILABLE]


def test_explicit_workload_without_the_api_creates_nothing() -> None:
    cqs = with_backend("Workload", replicas=2)
    plan = cliqueset_planner.plan(set_snapshot(cqs, []))
    assert not plan.creates
    assert plan.status is not None
    degraded = next(c for c in plan.status.conditions if c.type == "Degraded")
    assert degraded.reason == "InvalidSpec" and "Workload" in degraded.message


def test_none_never_uses_the_api() -> None:
    cqs = with_backend("None", replicas=1)
    plan = cliqueset_planner.plan(set_snapshot(cqs, [], gang_api=gang_apis.of("v1alpha1")))
    assert not any(c.resource.kind == "Workload" for c in plan.creates)
    assert gang_condition(plan) == ("False", workload.REASON_DISABLED)
    assert not plan.events


def test_a_gang_made_whole_again_moves_to_the_current_workload() -> None:
    """1.35: a gang keeps the Workload its Cliques record while it runs, but one whose
    pods are all made again (a roll of every clique here; a restart or a move alike)
    moves to the current one: on the Workload of an older shape it would ask for a
    minCount it no longer has (after a shrink, more pods than it has: never placed)."""
    from cliques.controllers.base.actions import pointer_key
    from tests.unit.planner_fixtures import clique

    cqs = with_backend("Auto", replicas=2)
    current = workload.workload_name(cqs)
    old = {labels.ANNOTATION_WORKLOAD: "llama-old"}
    members = gangs(2, annotations=old)
    members[0:2] = [
        clique(0, "leader", hash_="h0", annotations=old),
        clique(0, "worker", replicas=2, hash_="h0", annotations=old),
    ]
    snap = set_snapshot(
        cqs,
        members,
        gang_api=gang_apis.of("v1alpha1"),
        workloads=[owned(current), owned("llama-old")],
    )
    plan = cliqueset_planner.plan(snap)
    rolls = [p for p in plan.patches if p.reason == "RollingUpdate"]
    assert sorted(p.name for p in rolls) == ["llama-0-leader", "llama-0-worker"]
    move = {
        "op": "add",
        "path": "/metadata/annotations/" + pointer_key(labels.ANNOTATION_WORKLOAD),
        "value": current,
    }
    assert all(move in p.patch for p in rolls)
    # gang 1 still runs on the old Workload, which stays
    assert not [d for d in plan.deletes if d.resource.kind == "Workload"]
