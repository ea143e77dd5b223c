"""The CliqueSet planner with scaling groups and autoscaling: a gang's members and their
Cliques, the CliqueScalingGroups and HPAs, scaling a gang's group up and down (no roll), the
template's group replicas, autoscaled cliques left at the HPA's count, and the availability
of a gang with `minAvailable` instances of its group (`cliqueset_rollout`).

The set is test_scaling's: frontend, prefill (pleader 1 pod, pworker 2 pods; 2 instances,
minAvailable 1), decode autoscaled."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique, CliqueStatus
from cliques.api.cliqueset import CliqueSet
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.meta import Condition, ObjectMeta, OwnerReference
from cliques.api.policies import Autoscaling, FailurePolicy, GangScheduling
from cliques.api.scalinggroup import CliqueScalingGroup, CliqueScalingGroupStatus
from cliques.api.service import Service
from cliques.api.workload import Workload
from cliques.controllers.base import startup
from cliques.controllers.clique import bodies as pod_bodies
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset import status as cliqueset_status
from cliques.controllers.cliqueset.planner import CliqueSetPlan
from cliques.controllers.features import autoscaling, gang_apis, scaling, workload

from .planner_fixtures import NOW, template_patched
from .planner_fixtures import set_snapshot as snap
from .test_scaling import HASHES, gang_members, member_clique, prefill_set

BELOW = "BelowMinAvailable"


@dataclass
class World:
    """The objects a set's plans made, as the API server would hold them."""

    cliques: list[Clique] = field(default_factory=list)
    groups: list[CliqueScalingGroup] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)

    def snapshot(self, cqs: CliqueSet, **kw: Any) -> cliqueset_planner.CliqueSetSnapshot:
        kw.setdefault("hashes", dict(HASHES))
        return snap(
            cqs,
            list(self.cliques),
            scaling_groups=list(self.groups),
            hpas=list(self.hpas),
            services=list(self.services),
            **kw,
        )

    def clique(self, name: str) -> Clique:
        return next(c for c in self.cliques if c.metadata.name == name)

    def scale(self, gang: int, replicas: int) -> None:
        """`kubectl scale cqsg/llama-<gang>-prefill --replicas <replicas>`."""
        self.groups = [
            msgspec.structs.replace(g, spec=msgspec.structs.replace(g.spec, replicas=replicas))
            if g.spec.gang_index == gang
            else g
            for g in self.groups
        ]

    def replace_clique(self, name: str, **spec: Any) -> None:
        """Set fields of a Clique's spec (and its status's pod counts to match)."""
        out = []
        for c in self.cliques:
            if c.metadata.name != name:
                out.append(c)
                continue
            new_spec = msgspec.structs.replace(c.spec, **spec)
            r = new_spec.replicas
            assert c.status is not None
            status = msgspec.structs.replace(
                c.status, replicas=r, ready_replicas=r, updated_replicas=r
            )
            out.append(msgspec.structs.replace(c, spec=new_spec, status=status))
        self.cliques = out


def _made(body: dict[str, Any], typ: type[Any]) -> Any:
    obj = msgspec.convert(body, typ)
    obj.metadata.uid = f"uid-{obj.metadata.name}"
    obj.metadata.resource_version = "5"
    obj.metadata.generation = 1
    return obj


def _ready(clique: Clique) -> Clique:
    r = clique.spec.replicas
    clique.status = CliqueStatus(
        observed_generation=1,
        replicas=r,
        ready_replicas=r,
        updated_replicas=r,
        template_hash=clique.metadata.labels[labels.LABEL_TEMPLATE_HASH],
        hash_algorithm=1,
        conditions=[
            Condition(
                type="Ready",
                status="True",
                reason="MinAvailable",
                last_transition_time=NOW,
                observed_generation=1,
            )
        ],
    )
    return clique


def apply(plan: CliqueSetPlan, world: World | None = None) -> World:
    """`world` with the plan's creates made (the Cliques Ready) and its deletes done."""
    out = world or World()
    gone = {(d.resource.kind, d.name) for d in plan.deletes}
    out.cliques = [c for c in out.cliques if ("Clique", c.metadata.name) not in gone]
    out.groups = [g for g in out.groups if ("CliqueScalingGroup", g.metadata.name) not in gone]
    out.hpas = [h for h in out.hpas if ("HorizontalPodAutoscaler", h.metadata.name) not in gone]
    for c in plan.creates:
        kind = c.resource.kind
        if kind == "Clique":
            out.cliques.append(_ready(_made(c.body, Clique)))
        elif kind == "CliqueScalingGroup":
            out.groups.append(_made(c.body, CliqueScalingGroup))
        elif kind == "HorizontalPodAutoscaler":
            out.hpas.append(_made(c.body, HorizontalPodAutoscaler))
        elif kind == "Service":
            out.services.append(_made(c.body, Service))
    return out


def settled(cqs: CliqueSet, **kw: Any) -> World:
    """The objects of `cqs` once made and Ready, the CliqueScalingGroups' statuses
    written and the set's status recorded: a plan over them writes nothing."""
    world = apply(cliqueset_planner.plan(snap(cqs, [], hashes=dict(HASHES), **kw)))
    plan = cliqueset_planner.plan(world.snapshot(cqs, **kw))
    statuses = {p.name: p.patch["status"] for p in plan.patches if p.sub == "status"}
    world.groups = [
        msgspec.structs.replace(
            g, status=msgspec.convert(statuses[g.metadata.name], CliqueScalingGroupStatus)
        )
        for g in world.groups
    ]
    cqs.status = plan.status
    return world


def _owned_workload(name: str) -> Workload:
    ref = OwnerReference(
        api_version="x", kind="CliqueSet", name="llama", uid="cqs-uid", controller=True
    )
    return Workload(
        metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}", owner_references=[ref])
    )


def kinds(plan: CliqueSetPlan, kind: str) -> dict[str, Any]:
    return {c.name: c.body for c in plan.creates if c.resource.kind == kind}


def clique_patches(plan: CliqueSetPlan) -> list[str]:
    return sorted(p.name for p in plan.patches if p.resource.kind == "Clique")


# -- the first plan ----------------------------------------------------------------------------


def test_first_plan_creates_every_clique_group_object_and_hpa() -> None:
    cqs = prefill_set(replicas=2)
    plan = cliqueset_planner.plan(snap(cqs, [], hashes=dict(HASHES)))
    cliques = kinds(plan, "Clique")
    assert sorted(cliques) == sorted(
        f"llama-{g}-{m}"
        for g in (0, 1)
        for m in ("frontend", "pleader-0", "pleader-1", "pworker-0", "pworker-1", "decode")
    )
    groups = kinds(plan, "CliqueScalingGroup")
    assert sorted(groups) == ["llama-0-prefill", "llama-1-prefill"]
    assert groups["llama-1-prefill"]["spec"] == {
        "groupName": "prefill",
        "gangIndex": 1,
        "replicas": 2,
        "minAvailable": 1,
    }
    hpas = kinds(plan, "HorizontalPodAutoscaler")
    assert sorted(hpas) == ["llama-0-decode", "llama-1-decode"]
    assert hpas["llama-1-decode"]["spec"]["scaleTargetRef"] == {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "Clique",
        "name": "llama-1-decode",
    }
    # every created object is owned by the set
    assert {c.owner_uid for c in plan.creates} == {"cqs-uid"}
    assert plan.patches == [] and plan.deletes == []


def test_instance_cliques_carry_role_group_instance_and_the_roles_hash() -> None:
    cqs = prefill_set(replicas=2)
    cliques = kinds(cliqueset_planner.plan(snap(cqs, [], hashes=dict(HASHES))), "Clique")
    body = cliques["llama-1-pworker-1"]
    assert body["metadata"]["labels"] == {
        labels.LABEL_CLIQUESET: "llama",
        labels.LABEL_GANG_INDEX: "1",
        labels.LABEL_BUCKET: body["metadata"]["labels"][labels.LABEL_BUCKET],
        labels.LABEL_SCALING_GROUP: "prefill",
        labels.LABEL_GROUP_INDEX: "1",
        labels.LABEL_CLIQUE: "pworker",
        labels.LABEL_TEMPLATE_HASH: "hw",
    }
    assert body["spec"]["cliqueName"] == "pworker"
    assert body["spec"]["gangIndex"] == 1
    assert body["spec"]["replicas"] == 2
    plain = cliques["llama-1-decode"]["metadata"]["labels"]
    assert labels.LABEL_SCALING_GROUP not in plain and labels.LABEL_GROUP_INDEX not in plain
    for b in cliques.values():
        role = b["spec"]["cliqueName"]
        assert b["metadata"]["labels"][labels.LABEL_TEMPLATE_HASH] == HASHES[role]
    # a Clique made by the planner reads back as its member
    made = msgspec.convert(body, Clique)
    assert scaling.instance_of(made) == 1 and scaling.member_of(made) == "pworker-1"


def test_in_order_start_order_through_the_planner() -> None:
    cqs = prefill_set(replicas=1, startup_type="InOrder")
    cliques = kinds(cliqueset_planner.plan(snap(cqs, [], hashes=dict(HASHES))), "Clique")
    after = {n: b["spec"]["startsAfter"] for n, b in cliques.items()}
    assert after == {
        "llama-0-frontend": [],
        "llama-0-pleader-0": ["llama-0-frontend"],
        "llama-0-pleader-1": ["llama-0-frontend"],
        "llama-0-pworker-0": ["llama-0-pleader-0"],
        "llama-0-pworker-1": ["llama-0-pleader-1"],
        "llama-0-decode": ["llama-0-pworker-0"],
    }


def test_explicit_start_order_through_the_planner() -> None:
    cqs = prefill_set(replicas=1, startup_type="Explicit", group_replicas=3, min_available=2)
    by_name = {c.name: c for c in cqs.spec.template.cliques}
    by_name["pworker"].starts_after = ["pleader"]
    by_name["decode"].starts_after = ["pworker", "frontend"]
    cliques = kinds(cliqueset_planner.plan(snap(cqs, [], hashes=dict(HASHES))), "Clique")
    after = {n: b["spec"]["startsAfter"] for n, b in cliques.items()}
    assert after["llama-0-pleader-2"] == []
    assert after["llama-0-pworker-2"] == ["llama-0-pleader-2"]
    assert after["llama-0-decode"] == ["llama-0-pworker-0", "llama-0-pworker-1", "llama-0-frontend"]


@pytest.mark.parametrize(
    ("policy", "hosts", "leaders"),
    [
        pytest.param(
            "UniquePerGang",
            {"llama-1-pworker-1": "pworker-1-1", "llama-1-frontend": "frontend-0"},
            {
                "llama-1-pworker-1": "pleader-1-0.llama-1.ns.svc",
                "llama-1-pleader-1": "pleader-1-0.llama-1.ns.svc",
                "llama-1-pworker-0": "pleader-0-0.llama-1.ns.svc",
                "llama-1-frontend": "frontend-0.llama-1.ns.svc",
                "llama-1-decode": "frontend-0.llama-1.ns.svc",
            },
            id="unique-per-gang",
        ),
        pytest.param(
            "Shared",
            {"llama-1-pworker-1": "pworker-1-1-1", "llama-1-frontend": "frontend-1-0"},
            {
                "llama-1-pworker-1": "pleader-1-1-0.llama.ns.svc",
                "llama-1-pleader-1": "pleader-1-1-0.llama.ns.svc",
                "llama-1-pworker-0": "pleader-1-0-0.llama.ns.svc",
                "llama-1-frontend": "frontend-1-0.llama.ns.svc",
                "llama-1-decode": "frontend-1-0.llama.ns.svc",
            },
            id="shared",
        ),
    ],
)
def test_pods_of_an_instance_know_their_group_instance_and_leader(
    policy: str, hosts: dict[str, str], leaders: dict[str, str]
) -> None:
    cqs = prefill_set(replicas=2, policy=policy)
    cliques = kinds(cliqueset_planner.plan(snap(cqs, [], hashes=dict(HASHES))), "Clique")
    pods = {}
    for name, leader in leaders.items():
        member = msgspec.convert(cliques[name], Clique)
        pods[name] = pod_bodies.pod_body(member, 1 if "pworker" in name else 0, "h", 1)
        env = {e["name"]: e["value"] for e in pods[name]["spec"]["containers"][0]["env"]}
        assert env[labels.ENV_LEADER_ADDRESS] == leader, name
    for name, host in hosts.items():
        assert pods[name]["spec"]["hostname"] == host
    worker = pods["llama-1-pworker-1"]
    env = {e["name"]: e["value"] for e in worker["spec"]["containers"][0]["env"]}
    assert env[labels.ENV_SCALING_GROUP] == "prefill"
    assert env[labels.ENV_GROUP_INDEX] == "1"
    assert env[labels.ENV_CLIQUE] == "pworker"
    assert env[labels.ENV_GANG_INDEX] == "1"
    assert env[labels.ENV_CLIQUE_SIZE] == "2"
    pod_labels = worker["metadata"]["labels"]
    assert pod_labels[labels.LABEL_SCALING_GROUP] == "prefill"
    assert pod_labels[labels.LABEL_GROUP_INDEX] == "1"
    plain_env = {e["name"] for e in pods["llama-1-frontend"]["spec"]["containers"][0]["env"]}
    assert labels.ENV_SCALING_GROUP not in plain_env and labels.ENV_GROUP_INDEX not in plain_env
    # the instance leader's address is its pod 0's DNS name
    lead = pod_bodies.pod_body(msgspec.convert(cliques["llama-1-pleader-1"], Clique), 0, "h", 1)
    spec = lead["spec"]
    assert f"{spec['hostname']}.{spec['subdomain']}.ns.svc" == leaders["llama-1-pworker-1"]


# -- steady state and scaling ----------------------------------------------------------------


def test_a_settled_set_plans_no_write() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert plan.creates == [] and plan.deletes == [] and plan.patches == []
    assert plan.status is None


def test_scaling_a_gangs_group_up_creates_only_that_gangs_new_instance() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    world.scale(1, 3)
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    made = kinds(plan, "Clique")
    assert sorted(made) == ["llama-1-pleader-2", "llama-1-pworker-2"]
    assert [c.resource.kind for c in plan.creates] == ["Clique", "Clique"]
    assert plan.deletes == []
    assert clique_patches(plan) == []  # no Clique resized, re-ordered or rolled
    assert template_patched(plan) == []
    # the new instance: its own start order and leader, the roles' hashes
    worker = made["llama-1-pworker-2"]
    assert worker["spec"]["startsAfter"] == ["llama-1-pleader-2"]
    assert made["llama-1-pleader-2"]["spec"]["startsAfter"] == ["llama-1-frontend"]
    ann = worker["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_LEADER_ADDRESS] == "pleader-2-0.llama-1.ns.svc"
    assert ann[labels.ANNOTATION_SUBDOMAIN] == "llama-1"
    assert worker["metadata"]["labels"][labels.LABEL_GROUP_INDEX] == "2"
    for body in made.values():
        role = body["spec"]["cliqueName"]
        assert body["metadata"]["labels"][labels.LABEL_TEMPLATE_HASH] == HASHES[role]
    # the set's template hash is the same: a scale is no rollout
    assert cqs.status is not None
    assert cqs.status.template_hash == cliqueset_status.set_hash(cqs.spec, HASHES)
    assert plan.status is None or plan.status.template_hash == cqs.status.template_hash


def test_scaling_a_gangs_group_down_deletes_its_highest_instances_first() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    world.scale(1, 3)
    world = apply(cliqueset_planner.plan(world.snapshot(cqs)), world)
    world.scale(1, 1)
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert plan.creates == []
    assert [(d.resource.kind, d.name, d.reason) for d in plan.deletes] == [
        ("Clique", "llama-1-pleader-2", "InstanceRemoved"),
        ("Clique", "llama-1-pworker-2", "InstanceRemoved"),
        ("Clique", "llama-1-pleader-1", "InstanceRemoved"),
        ("Clique", "llama-1-pworker-1", "InstanceRemoved"),
    ]
    assert {d.uid for d in plan.deletes} == {f"uid-{d.name}" for d in plan.deletes}
    assert clique_patches(plan) == [] and template_patched(plan) == []
    # the object's status reports the one instance left
    (status,) = [p.patch["status"] for p in plan.patches if p.name == "llama-1-prefill"]
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (1, 1, 1)


def test_a_scale_down_of_two_gangs_deletes_the_highest_gang_first() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    world.scale(0, 1)
    world.scale(1, 1)
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert [d.name for d in plan.deletes] == [
        "llama-1-pleader-1",
        "llama-1-pworker-1",
        "llama-0-pleader-1",
        "llama-0-pworker-1",
    ]


def test_a_deleted_object_is_made_again_with_the_instances_the_gang_has() -> None:
    cqs = prefill_set(replicas=1)
    world = settled(cqs)
    world.scale(0, 3)
    world = apply(cliqueset_planner.plan(world.snapshot(cqs)), world)
    world.groups = []  # deleted by hand
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert plan.deletes == [] and kinds(plan, "Clique") == {}
    (body,) = kinds(plan, "CliqueScalingGroup").values()
    assert body["spec"]["replicas"] == 3
    assert body["metadata"]["annotations"][scaling.ANNOTATION_TEMPLATE_REPLICAS] == "2"


def test_changing_the_templates_group_replicas_patches_every_gangs_object_once() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    world.scale(0, 5)  # a kubectl scale of gang 0
    new = prefill_set(replicas=2, group_replicas=3, generation=2)
    new.status = cqs.status
    plan = cliqueset_planner.plan(world.snapshot(new))
    spec_patches = [p for p in plan.patches if p.reason == "ScalingGroupTemplate"]
    assert sorted(p.name for p in spec_patches) == ["llama-0-prefill", "llama-1-prefill"]
    for p in spec_patches:
        assert p.resource.kind == "CliqueScalingGroup" and p.sub == ""
        assert p.patch == {
            "metadata": {
                "resourceVersion": "5",
                "annotations": {scaling.ANNOTATION_TEMPLATE_REPLICAS: "3"},
            },
            "spec": {"replicas": 3},
        }
    # the Cliques follow the objects, not the template: gang 0 has the 5 instances its
    # object still says, gang 1 the 2 it has until its object says 3
    assert sorted(kinds(plan, "Clique")) == [
        f"llama-0-{r}-{i}" for r in ("pleader", "pworker") for i in (2, 3, 4)
    ]
    assert plan.deletes == []
    assert template_patched(plan) == []
    # once applied, the template is not applied again (a later kubectl scale stands)
    world.groups = [
        msgspec.structs.replace(
            g,
            metadata=msgspec.structs.replace(
                g.metadata, annotations={scaling.ANNOTATION_TEMPLATE_REPLICAS: "3"}
            ),
            spec=msgspec.structs.replace(g.spec, replicas=4),
        )
        for g in world.groups
    ]
    again = cliqueset_planner.plan(world.snapshot(new))
    assert [p for p in again.patches if p.reason == "ScalingGroupTemplate"] == []
    assert sorted(kinds(again, "Clique")) == [
        f"llama-{g}-{r}-{i}" for g in (0, 1) for r in ("pleader", "pworker") for i in (2, 3)
    ]


def test_under_group_autoscaling_the_template_replicas_are_not_applied() -> None:
    auto = Autoscaling(min_replicas=1, max_replicas=6)
    cqs = prefill_set(replicas=2, group_autoscaling=auto)
    world = settled(cqs)
    assert sorted(h.metadata.name for h in world.hpas) == [
        "llama-0-decode",
        "llama-0-prefill",
        "llama-1-decode",
        "llama-1-prefill",
    ]
    group_hpa = next(h for h in world.hpas if h.metadata.name == "llama-0-prefill")
    assert group_hpa.spec.scale_target_ref.kind == "CliqueScalingGroup"
    world.scale(1, 4)  # the HPA's choice
    new = prefill_set(replicas=2, group_replicas=3, group_autoscaling=auto, generation=2)
    plan = cliqueset_planner.plan(world.snapshot(new))
    assert [p for p in plan.patches if p.reason == "ScalingGroupTemplate"] == []
    assert sorted(kinds(plan, "Clique")) == [
        "llama-1-pleader-2",
        "llama-1-pleader-3",
        "llama-1-pworker-2",
        "llama-1-pworker-3",
    ]


# -- autoscaled cliques and HPAs -----------------------------------------------------------------


def test_an_autoscaled_cliques_replicas_are_left_to_its_hpa() -> None:
    cqs = prefill_set(replicas=1)
    world = settled(cqs)
    world.replace_clique("llama-0-decode", replicas=3)  # the HPA scaled it
    world.replace_clique("llama-0-frontend", replicas=3)  # someone scaled it by hand
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert clique_patches(plan) == ["llama-0-frontend"]
    (patch,) = [p for p in plan.patches if p.resource.kind == "Clique"]
    assert patch.patch["spec"] == {"replicas": 1}
    assert template_patched(plan) == [] and plan.creates == [] and plan.deletes == []
    # the gang is updated and available at the HPA's count
    world.replace_clique("llama-0-frontend", replicas=1)
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert plan.writes == 0 and plan.status is None


def test_removing_autoscaling_deletes_the_hpas_and_the_template_replicas_return() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    world.replace_clique("llama-1-decode", replicas=3)
    off = prefill_set(replicas=2, generation=2)
    off.spec.template.cliques[3].autoscaling = None
    plan = cliqueset_planner.plan(world.snapshot(off))
    assert sorted((d.resource.kind, d.name, d.uid) for d in plan.deletes) == [
        ("HorizontalPodAutoscaler", "llama-0-decode", "uid-llama-0-decode"),
        ("HorizontalPodAutoscaler", "llama-1-decode", "uid-llama-1-decode"),
    ]
    assert plan.creates == []
    assert clique_patches(plan) == ["llama-1-decode"]
    assert template_patched(plan) == []


def test_changing_max_replicas_patches_each_gangs_hpa_spec() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    wider = prefill_set(
        replicas=2, decode_autoscaling=Autoscaling(min_replicas=1, max_replicas=9), generation=2
    )
    plan = cliqueset_planner.plan(world.snapshot(wider))
    hpa_patches = [p for p in plan.patches if p.resource.kind == "HorizontalPodAutoscaler"]
    assert sorted(p.name for p in hpa_patches) == ["llama-0-decode", "llama-1-decode"]
    for p in hpa_patches:
        assert p.patch_type == "json" and p.reason == "AutoscalingChanged"
        ops = {op["path"]: op for op in p.patch}
        assert ops["/metadata/uid"] == {
            "op": "test",
            "path": "/metadata/uid",
            "value": f"uid-{p.name}",
        }
        spec = ops["/spec"]["value"]
        assert ops["/spec"]["op"] == "replace"
        assert spec["maxReplicas"] == 9 and spec["scaleTargetRef"]["name"] == p.name
        hash_op = ops["/metadata/annotations/cliques.dev~1hpa-spec"]
        assert hash_op["value"] == autoscaling.spec_hash(spec)
    assert plan.creates == [] and plan.deletes == [] and clique_patches(plan) == []


def test_fewer_gangs_delete_their_group_objects_and_hpas() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    plan = cliqueset_planner.plan(world.snapshot(prefill_set(replicas=1, generation=2)))
    deleted = {(d.resource.kind, d.name) for d in plan.deletes}
    assert ("CliqueScalingGroup", "llama-1-prefill") in deleted
    assert ("HorizontalPodAutoscaler", "llama-1-decode") in deleted
    assert ("Clique", "llama-1-pworker-1") in deleted
    assert not any(name.startswith("llama-0") for _, name in deleted)


def test_a_role_that_leaves_its_group_replaces_its_instances() -> None:
    cqs = prefill_set(replicas=1)
    world = settled(cqs)
    moved = prefill_set(replicas=1, group_cliques=("pleader",), generation=2)
    plan = cliqueset_planner.plan(world.snapshot(moved))
    assert sorted((d.name, d.reason) for d in plan.deletes) == [
        ("llama-0-pworker-0", "CliqueRegrouped"),
        ("llama-0-pworker-1", "CliqueRegrouped"),
    ]
    made = kinds(plan, "Clique")
    assert list(made) == ["llama-0-pworker"]
    assert made["llama-0-pworker"]["spec"]["startsAfter"] == ["llama-0-pleader-0"]


# -- availability ------------------------------------------------------------------------------


def _judge(
    cqs: CliqueSet, *gangs: list[Clique], counts: dict[int, dict[str, int]] | None = None
) -> cliqueset_rollout.Gangs:
    ctx = cliqueset_rollout.context(cqs, HASHES, startup.dependencies(cqs.spec), 1)
    by_gang = {g: {scaling.member_of(c): c for c in cl} for g, cl in enumerate(gangs)}
    if counts is None:
        counts = {g: {"prefill": 2} for g in range(len(gangs))}
    return cliqueset_rollout.judge_gangs(by_gang, len(gangs), ctx, {}, None, counts)


def test_a_gang_is_available_with_min_available_instances_ready() -> None:
    cqs = prefill_set(replicas=2, startup_type="AnyOrder")
    gangs = _judge(
        cqs,
        gang_members(0, ready_instances=(0,)),
        gang_members(1, ready_instances=()),
    )
    first, second = gangs.facts
    assert first.available and first.ready and first.updated
    assert not first.starting
    assert not second.available and not second.ready
    assert second.starting  # its instances are on their way up: not degraded
    assert second.degraded == []


def test_a_gang_is_not_available_without_its_plain_cliques() -> None:
    cqs = prefill_set(replicas=1, startup_type="AnyOrder")
    (facts,) = _judge(cqs, gang_members(0, plain_ready=False)).facts
    assert not facts.available


def test_min_available_two_needs_both_instances() -> None:
    cqs = prefill_set(replicas=1, startup_type="AnyOrder", min_available=2)
    (facts,) = _judge(cqs, gang_members(0, ready_instances=(1,))).facts
    assert not facts.available
    (facts,) = _judge(cqs, gang_members(0, ready_instances=(0, 1))).facts
    assert facts.available


def test_an_instance_below_min_available_degrades_the_gang_only_if_the_group_falls_short() -> None:
    cqs = prefill_set(replicas=1, startup_type="AnyOrder")
    members = gang_members(0)
    broken = member_clique(0, "pworker", 1, ready=False, ready_reason=BELOW)
    one_broken = [broken if c.metadata.name == broken.metadata.name else c for c in members]
    (facts,) = _judge(cqs, one_broken).facts
    assert facts.available and facts.degraded == []
    both = [
        member_clique(0, "pworker", scaling.instance_of(c), ready=False, ready_reason=BELOW)
        if c.spec.clique_name == "pworker"
        else c
        for c in members
    ]
    (facts,) = _judge(cqs, both).facts
    assert not facts.available
    assert facts.degraded == ["0/pworker-0", "0/pworker-1"]


def test_a_gang_with_an_instance_still_to_make_is_available_not_updated() -> None:
    cqs = prefill_set(replicas=1, startup_type="AnyOrder", min_available=2)
    # the object says 3: instance 2 is not made yet, instances 0 and 1 are Ready
    first = _judge(cqs, gang_members(0, instances=2), counts={0: {"prefill": 3}})
    (facts,) = first.facts
    assert facts.available and not facts.updated
    assert dict(first.judgement.counts) == {0: {"prefill": 3}}
    # a verdict is reused for the same Cliques and counts only
    ctx = first.judgement.context
    by_gang = {0: {scaling.member_of(c): c for c in first.judgement.gangs[0][0]}}
    same = cliqueset_rollout.judge_gangs(by_gang, 1, ctx, {}, first.judgement, {0: {"prefill": 3}})
    assert same.judgement.gangs[0][1] is first.judgement.gangs[0][1]
    fewer = cliqueset_rollout.judge_gangs(by_gang, 1, ctx, {}, first.judgement, {0: {"prefill": 2}})
    assert fewer.facts[0].updated


def test_the_status_counts_gangs_available_with_min_available_instances() -> None:
    cqs = prefill_set(replicas=2)
    world = settled(cqs)
    assert cqs.status is not None and cqs.status.available_replicas == 2
    not_ready = [
        member_clique(g, r, i, ready=False)
        for g, i in ((0, 1), (1, 0), (1, 1))
        for r in ("pleader", "pworker")
    ]
    names = {c.metadata.name: c for c in not_ready}
    world.cliques = [
        msgspec.structs.replace(
            c,
            status=msgspec.structs.replace(
                c.status,  # type: ignore[arg-type]
                ready_replicas=0,
                conditions=names[c.metadata.name].status.conditions,  # type: ignore[union-attr]
            ),
        )
        if c.metadata.name in names
        else c
        for c in world.cliques
    ]
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert plan.status is not None
    assert plan.status.available_replicas == 1
    assert plan.creates == [] and plan.deletes == []
    ready = {p.name: p.patch["status"]["readyReplicas"] for p in plan.patches if p.sub == "status"}
    assert ready == {"llama-0-prefill": 1, "llama-1-prefill": 0}


# -- start gates -------------------------------------------------------------------------------


def test_with_the_workload_backend_the_cliques_just_made_need_no_patch() -> None:
    """With the Workload backend a Clique with a `startsAfter` gets `startGate`. A plain
    clique after a group with `minAvailable: 0` starts after no Clique (no instance is
    needed), so the planner makes it without a start gate; the next plan must agree."""
    cqs = prefill_set(replicas=1, startup_type="InOrder", min_available=0)
    spec = msgspec.structs.replace(cqs.spec, gang_scheduling=GangScheduling(backend="Workload"))
    cqs = msgspec.structs.replace(cqs, spec=spec)
    name = workload.workload_name(cqs)
    gang_api = {"gang_api": gang_apis.of("v1alpha1"), "workloads": [_owned_workload(name)]}
    first = cliqueset_planner.plan(World().snapshot(cqs, **gang_api))
    made = kinds(first, "Clique")
    assert made["llama-0-pworker-1"]["spec"]["startGate"] is True
    assert made["llama-0-decode"]["spec"]["startsAfter"] == []
    assert "startGate" not in made["llama-0-decode"]["spec"]
    world = apply(first)
    second = cliqueset_planner.plan(world.snapshot(cqs, **gang_api))
    assert [(p.name, p.patch) for p in second.patches if p.resource.kind == "Clique"] == []


# -- failure policy ----------------------------------------------------------------------------


def _below_min(world: World, names: set[str]) -> None:
    """The Cliques `names` lost their pods: Ready=False, BelowMinAvailable."""
    out = []
    for c in world.cliques:
        if c.metadata.name not in names:
            out.append(c)
            continue
        assert c.status is not None
        cond = msgspec.structs.replace(c.status.conditions[0], status="False", reason=BELOW)
        status = msgspec.structs.replace(c.status, ready_replicas=0, conditions=[cond])
        out.append(msgspec.structs.replace(c, status=status))
    world.cliques = out


def test_recreate_gang_breaches_only_when_the_group_falls_short() -> None:
    cqs = prefill_set(replicas=1)
    cqs.spec.failure_policy = FailurePolicy(restart_policy="RecreateGang")
    world = settled(cqs)
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    # the gang is available whole: its lead Clique (the first outside the group) says so
    (mark,) = [p for p in plan.patches if p.reason == "GangAvailable"]
    assert mark.name == "llama-0-frontend"
    lead = world.clique("llama-0-frontend")
    annotations = {**lead.metadata.annotations, **mark.patch["metadata"]["annotations"]}
    world.cliques = [
        msgspec.structs.replace(
            c, metadata=msgspec.structs.replace(c.metadata, annotations=annotations)
        )
        if c is lead
        else c
        for c in world.cliques
    ]
    assert clique_patches(cliqueset_planner.plan(world.snapshot(cqs))) == []
    # one instance lost: the group still has its minAvailable, no breach
    _below_min(world, {"llama-0-pworker-1"})
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    assert clique_patches(plan) == []
    status = plan.status or cqs.status  # (None: unchanged)
    assert status is not None and status.available_replicas == 1
    # both lost: the gang is breached, every member marked
    _below_min(world, {"llama-0-pworker-0"})
    plan = cliqueset_planner.plan(world.snapshot(cqs))
    breached = sorted(p.name for p in plan.patches if p.reason == "GangBreach")
    assert breached == sorted(
        f"llama-0-{m}"
        for m in ("frontend", "pleader-0", "pleader-1", "pworker-0", "pworker-1", "decode")
    )
