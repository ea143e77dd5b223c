"""Gang scheduling of scaling groups as CompositePodGroup trees (`controllers.gang_trees`,
through `gang_scheduling` and the CliqueSet planner): on a server with the composite API a
set with scaling groups gets a tree per gang, each Clique names its own part, a scale
makes or deletes one instance's child only, a gang keeps its tree until it is made whole
again, composites go after their children; elsewhere (no composite API, no scaling group,
shared claims) one PodGroup per gang, as before.

The set is test_scaling's: frontend, prefill (pleader 1 pod, pworker 2 pods; 2 instances,
minAvailable 1), decode autoscaled (1 pod)."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.claim import CliqueSetClaim
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.meta import ObjectMeta
from cliques.api.podgroup import CompositePodGroup, PodGroup
from cliques.api.policies import GangScheduling, PackPolicy, Placement
from cliques.api.scalinggroup import CliqueScalingGroup, ScalingGroup
from cliques.api.service import Service
from cliques.api.workload import Workload
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset.planner import CliqueSetPlan
from cliques.controllers.cliqueset.rollout import Judgement
from cliques.controllers.features import (
    composite_groups,
    gang_apis,
    gang_scheduling,
    gang_tree_parts,
    gang_trees,
    podgroups,
    workload,
)
from cliques.kube import gangapi

from .planner_fixtures import NOW
from .planner_fixtures import set_snapshot as snap
from .test_scaling import HASHES, member_clique, prefill_set
from .test_scaling_planner import _made, _ready

ON = frozenset({gangapi.COMPOSITE, "topology"})
KINDS = ("Workload", "CompositePodGroup", "PodGroup")


@dataclass
class World:
    """What the API server holds of a set's plans: Cliques (Ready once made), scale
    targets, PodGroups, CompositePodGroups and Workloads."""

    features: frozenset[str] = ON
    #: where CompositePodGroups are served ("": the default, 1.37's v1alpha3)
    composite_version: str = ""
    cliques: list[Clique] = field(default_factory=list)
    scaling_groups: list[CliqueScalingGroup] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    groups: list[PodGroup] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    #: names of PodGroups a delete leaves terminating (a pod still names them)
    protected: set[str] = field(default_factory=set)
    #: the verdicts and gang trees of the last plan, which the next one reuses (as the
    #: controller keeps them); `fresh` plans without them
    previous: Judgement | None = None
    fresh: bool = False

    def snapshot(self, cqs: CliqueSet) -> cliqueset_planner.CliqueSetSnapshot:
        return snap(
            cqs,
            list(self.cliques),
            hashes=dict(HASHES),
            gang_api=gang_apis.of(
                "v1beta1", self.features, composite_version=self.composite_version
            ),
            scaling_groups=list(self.scaling_groups),
            hpas=list(self.hpas),
            services=list(self.services),
            pod_groups=list(self.groups),
            workloads=list(self.workloads),
            previous=None if self.fresh else self.previous,
        )

    def plan(self, cqs: CliqueSet) -> CliqueSetPlan:
        """The set's plan, reusing the last one's gang trees; it is checked to be what a
        plan of every gang anew makes."""
        plan = cliqueset_planner.plan(self.snapshot(cqs))
        memo = self.previous.trees if self.previous is not None else None
        if cqs.spec.template.scaling_groups and not self.fresh:
            kept = self.trees(cqs, memo)
            assert kept == self.trees(cqs, None)
        self.previous = plan.judgement
        return plan

    def trees(self, cqs: CliqueSet, memo: gang_trees.Memo | None) -> dict[str, Any]:
        """What `gang_trees.plan` makes of the world with `memo` (all but the memo)."""
        made = gang_trees.plan(
            cqs,
            self.cliques,
            self.groups,
            bucket="0",
            features=self.features,
            memo=memo,
            composite_version=self.composite_version or gangapi.COMPOSITE_VERSION,
        )
        return {f.name: getattr(made, f.name) for f in dataclasses.fields(made) if f.name != "memo"}

    def apply(self, plan: CliqueSetPlan) -> CliqueSetPlan:
        gone = {(d.resource.kind, d.name) for d in plan.deletes}
        self.cliques = [c for c in self.cliques if ("Clique", c.metadata.name) not in gone]
        self.scaling_groups = [
            g for g in self.scaling_groups if ("CliqueScalingGroup", g.metadata.name) not in gone
        ]
        kept = []
        for g in self.groups:
            kind = "CompositePodGroup" if isinstance(g, CompositePodGroup) else "PodGroup"
            if (kind, g.metadata.name) not in gone:
                kept.append(g)
            elif g.metadata.name in self.protected:
                kept.append(terminating(g))
        self.groups = kept
        self.workloads = [w for w in self.workloads if ("Workload", w.metadata.name) not in gone]
        for c in plan.creates:
            kind = c.resource.kind
            if kind == "Clique":
                self.cliques.append(_ready(_made(c.body, Clique)))
            elif kind == "CliqueScalingGroup":
                self.scaling_groups.append(_made(c.body, CliqueScalingGroup))
            elif kind == "HorizontalPodAutoscaler":
                self.hpas.append(_made(c.body, HorizontalPodAutoscaler))
            elif kind == "Service":
                self.services.append(_made(c.body, Service))
            elif kind == "PodGroup":
                self.groups.append(_made(c.body, PodGroup))
            elif kind == "CompositePodGroup":
                self.groups.append(_made(c.body, CompositePodGroup))
            elif kind == "Workload":
                self.workloads.append(_made(c.body, Workload))
        patched = {p.name: p.patch for p in plan.patches if p.resource.kind == "Clique"}
        self.cliques = [self._patched(c, patched.get(c.metadata.name)) for c in self.cliques]
        return plan

    def _patched(self, clique: Clique, patch: Any) -> Clique:
        """A Clique with a roll's JSON patch applied (template hash, pod group)."""
        if not isinstance(patch, list):
            return clique
        meta = clique.metadata
        tags, notes = dict(meta.labels), dict(meta.annotations)
        for op in patch:
            path = op["path"]
            key = path.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
            if path.startswith("/metadata/labels/"):
                tags[key] = op["value"]
            elif path.startswith("/metadata/annotations/") and op["op"] == "add":
                notes[key] = op["value"]
        meta = msgspec.structs.replace(meta, labels=tags, annotations=notes)
        return msgspec.structs.replace(clique, metadata=meta)

    def settle(self, cqs: CliqueSet, passes: int = 4) -> None:
        """Plans applied until one writes no object (the status is not kept)."""
        for _ in range(passes):
            plan = self.apply(self.plan(cqs))
            if not plan.creates and not plan.deletes:
                return
        raise AssertionError("the set did not settle")

    def scale(self, gang: int, replicas: int) -> None:
        """`kubectl scale cqsg/llama-<gang>-prefill --replicas <replicas>`."""
        self.scaling_groups = [
            msgspec.structs.replace(g, spec=msgspec.structs.replace(g.spec, replicas=replicas))
            if g.spec.gang_index == gang
            else g
            for g in self.scaling_groups
        ]

    # -- what the tests read ---------------------------------------------------------------

    def pod_groups(self, gang: int | None = None) -> dict[str, PodGroup]:
        return {
            g.metadata.name: g
            for g in self.groups
            if not isinstance(g, CompositePodGroup)
            and (gang is None or g.metadata.labels[labels.LABEL_GANG_INDEX] == str(gang))
        }

    def composites(self, gang: int | None = None) -> dict[str, CompositePodGroup]:
        return {
            g.metadata.name: g
            for g in self.groups
            if isinstance(g, CompositePodGroup)
            and (gang is None or g.metadata.labels[labels.LABEL_GANG_INDEX] == str(gang))
        }

    def named(self, gang: int) -> dict[str, str]:
        """Member -> the PodGroup its Clique names, in gang `gang`."""
        prefix = f"llama-{gang}-"
        return {
            c.metadata.name.removeprefix(prefix): c.metadata.annotations.get(
                labels.ANNOTATION_POD_GROUP, ""
            )
            for c in self.cliques
            if c.spec.gang_index == gang
        }


def terminating(g: PodGroup) -> PodGroup:
    meta = msgspec.structs.replace(g.metadata, deletion_timestamp=NOW)
    return msgspec.structs.replace(g, metadata=meta)


def with_backend(cqs: CliqueSet, backend: str = "Workload") -> CliqueSet:
    spec = msgspec.structs.replace(cqs.spec, gang_scheduling=GangScheduling(backend=backend))
    return msgspec.structs.replace(cqs, spec=spec)


def writes(plan: CliqueSetPlan, kinds: tuple[str, ...] = KINDS) -> dict[str, list[str]]:
    """Kind -> the names a plan creates, patches or deletes (as `create:`, `patch:`,
    `delete:` entries), for the gang-scheduling kinds."""
    out: dict[str, list[str]] = {}
    for verb, actions in (("create", plan.creates), ("patch", plan.patches)):
        for a in actions:
            if a.resource.kind in kinds:
                out.setdefault(a.resource.kind, []).append(f"{verb}:{a.name}")
    for d in plan.deletes:
        if d.resource.kind in kinds:
            out.setdefault(d.resource.kind, []).append(f"delete:{d.name}")
    return out


def parent(g: PodGroup) -> str:
    return g.spec.parent_composite_pod_group_name


def settled(replicas: int = 2, **kw: Any) -> tuple[CliqueSet, World]:
    cqs = with_backend(prefill_set(replicas=replicas, **kw))
    world = World()
    world.settle(cqs)
    return cqs, world


# -- a new set -------------------------------------------------------------------------------


def test_a_new_set_makes_a_tree_per_gang_before_its_cliques_name_their_parts() -> None:
    cqs = with_backend(prefill_set(replicas=2))
    world = World()
    plan = world.apply(world.plan(cqs))
    made = writes(plan)
    (wl,) = made["Workload"]
    body = next(c.body for c in plan.creates if c.resource.kind == "Workload")
    assert "podGroupTemplates" not in body["spec"]
    root = body["spec"]["compositePodGroupTemplates"][0]
    assert root["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}  # others + prefill
    assert len(made["CompositePodGroup"]) == 2 * 2  # each gang: its root, prefill's
    assert len(made["PodGroup"]) == 2 * 3  # each gang: the others', 2 instances
    # composites before the PodGroups, each parent before its children
    order = [c.name for c in plan.creates if c.resource.kind in KINDS[1:]]
    for g in world.groups:
        if parent(g):
            assert order.index(parent(g)) < order.index(g.metadata.name)
    for gang in (0, 1):
        named = world.named(gang)
        pgs = world.pod_groups(gang)
        cpgs = world.composites(gang)
        assert named["frontend"] == named["decode"]
        others = pgs[named["frontend"]]
        assert others.min_count == 1 + 1 and labels.LABEL_SCALING_GROUP not in (
            others.metadata.labels
        )
        for inst in (0, 1):
            mine = named[f"pleader-{inst}"]
            assert named[f"pworker-{inst}"] == mine
            pg = pgs[mine]
            assert pg.min_count == 3
            assert pg.metadata.labels[labels.LABEL_GROUP_INDEX] == str(inst)
            prefill = cpgs[parent(pg)]
            assert prefill.metadata.labels[labels.LABEL_SCALING_GROUP] == "prefill"
            assert parent(prefill) == parent(others) and parent(prefill) in cpgs
        assert named["pleader-0"] != named["pleader-1"]
        assert {m for m in named.values()} == set(pgs)  # every PodGroup is named
        for g in (*pgs.values(), *cpgs.values()):
            assert g.metadata.annotations[labels.ANNOTATION_WORKLOAD] == wl.split(":")[1]
    assert not world.pod_groups().keys() & {
        podgroups.wanted_name(cqs, g, gang_apis.of("v1beta1", ON)) for g in (0, 1)
    }  # no one-PodGroup gang
    status = plan.status
    assert status is not None
    cond = next(c for c in status.conditions if c.type == "GangScheduling")
    assert cond.status == "True" and "CompositePodGroups" in cond.message


@pytest.mark.parametrize("version", ["v1alpha3", "v1beta1"])
def test_composites_are_written_in_the_version_discovery_found(version: str) -> None:
    """1.37 serves CompositePodGroups in v1alpha3 only, 1.38 in v1beta1: every composite
    is made and deleted there, the PodGroups stay v1beta1, and the condition says which."""
    cqs = with_backend(prefill_set(replicas=1))
    world = World(composite_version=version)
    plan = world.apply(world.plan(cqs))
    composites = [c for c in plan.creates if c.resource.kind == "CompositePodGroup"]
    assert composites
    for c in composites:
        assert c.resource.version == version
        assert c.body["apiVersion"] == f"scheduling.k8s.io/{version}"
    groups = [c for c in plan.creates if c.resource.kind == "PodGroup"]
    assert groups and {c.resource.version for c in groups} == {"v1beta1"}
    status = plan.status
    assert status is not None
    cond = next(c for c in status.conditions if c.type == "GangScheduling")
    assert f"scheduling.k8s.io/{version} CompositePodGroups" in cond.message
    # once no PodGroup names them, its composites are deleted in the same version
    world.settle(cqs)
    cpgs = [g for g in world.groups if isinstance(g, CompositePodGroup)]
    stale = gang_trees.stale_composites(cqs, cpgs, (), version=version)
    assert stale and {d.resource.version for d in stale} == {version}


def test_a_settled_set_plans_no_write() -> None:
    cqs, world = settled()
    plan = world.plan(cqs)
    assert not plan.creates and not plan.deletes
    assert writes(plan) == {}


def test_a_pack_required_is_the_roots_topology_and_the_pods_get_no_pack_term() -> None:
    cqs = with_backend(prefill_set(replicas=1))
    cqs.spec.placement = Placement(pack=PackPolicy(topology_key="rack", mode="Required"))
    world = World()
    plan = world.apply(world.plan(cqs))
    roots = [
        c.body["spec"]
        for c in plan.creates
        if c.resource.kind == "CompositePodGroup"
        and "parentCompositePodGroupName" not in c.body["spec"]
    ]
    assert [r["schedulingConstraints"] for r in roots] == [{"topology": [{"key": "rack"}]}]
    for c in plan.creates:
        if c.resource.kind == "Clique":
            spec = c.body["spec"]["template"]["spec"]
            assert "podAffinity" not in spec.get("affinity", {}), c.name


def test_a_part_no_gang_needs_is_scheduled_apart_and_packed_by_affinity() -> None:
    cqs = with_backend(prefill_set(replicas=1, min_available=0))
    cqs.spec.placement = Placement(pack=PackPolicy(topology_key="rack", mode="Required"))
    world = World()
    plan = world.apply(world.plan(cqs))
    named = world.named(0)
    pgs = world.pod_groups(0)
    # the instances: PodGroups of their own, each whole; the others: the tree's one child
    for inst in (0, 1):
        pg = pgs[named[f"pleader-{inst}"]]
        assert parent(pg) == "" and pg.spec.workload_ref is None and pg.min_count == 3
    others = pgs[named["frontend"]]
    (root,) = world.composites(0).values()
    assert parent(others) == root.metadata.name
    # the scheduler cannot pack the gang whole: the pods keep their pack term
    for c in plan.creates:
        if c.resource.kind == "Clique":
            affinity = c.body["spec"]["template"]["spec"]["affinity"]
            assert "podAffinity" in affinity, c.name


def test_a_gang_with_only_a_group_is_one_flat_composite() -> None:
    cqs = with_backend(prefill_set(replicas=1))
    # every clique in the group: no others
    cqs.spec.template.scaling_groups = [
        ScalingGroup(
            name="prefill",
            cliques=["frontend", "pleader", "pworker", "decode"],
            replicas=2,
            min_available=1,
        )
    ]
    cqs.spec.template.cliques[3].autoscaling = None
    world = World()
    world.settle(cqs)
    (root,) = world.composites(0).values()
    assert parent(root) == "" and root.metadata.labels[labels.LABEL_SCALING_GROUP] == "prefill"
    pgs = world.pod_groups(0)
    assert len(pgs) == 2
    assert {parent(g) for g in pgs.values()} == {root.metadata.name}
    assert {g.min_count for g in pgs.values()} == {1 + 1 + 2 + 1}


# -- where the trees are not made --------------------------------------------------------------


@pytest.mark.parametrize(
    "case", ["not served", "no scaling group", "shared claims", "v1alpha2", "backend None"]
)
def test_elsewhere_a_gang_is_one_podgroup_as_before(case: str) -> None:
    cqs = with_backend(prefill_set(replicas=1), "None" if case == "backend None" else "Workload")
    world = World(features=frozenset({"topology"}) if case == "not served" else ON)
    if case == "no scaling group":
        cqs.spec.template.scaling_groups = []
    if case == "shared claims":
        cqs.spec.resource_claims = [
            CliqueSetClaim(name="domain", scope="Gang", template={"spec": {}})
        ]
    snapshot = world.snapshot(cqs)
    if case == "v1alpha2":
        gangs = snapshot.gangs
        older = gang_apis.of("v1alpha2", gangs.api.features)
        snapshot = dataclasses.replace(snapshot, gangs=dataclasses.replace(gangs, api=older))
    plan = cliqueset_planner.plan(snapshot)
    assert "CompositePodGroup" not in writes(plan)
    groups = {
        c.body["metadata"]["annotations"].get(labels.ANNOTATION_POD_GROUP, "")
        for c in plan.creates
        if c.resource.kind == "Clique"
    }
    if case == "backend None":
        assert groups == {""}
        return
    (group,) = groups
    (made,) = [c.body for c in plan.creates if c.resource.kind == "PodGroup"]
    assert made["metadata"]["name"] == group
    assert made["spec"]["schedulingPolicy"] == {"gang": {"minCount": workload.min_count(cqs)}}
    assert "parentCompositePodGroupName" not in made["spec"]


# -- scaling ---------------------------------------------------------------------------------


def test_a_scale_up_makes_the_new_instances_child_and_moves_nothing() -> None:
    cqs, world = settled()
    before = {g: world.named(g) for g in (0, 1)}
    groups_before = {g.metadata.name for g in world.groups}
    world.scale(0, 3)
    first = world.apply(world.plan(cqs))
    # the new instance's Cliques name a child of the gang's prefill composite, made in
    # the same plan, ahead of them
    named = world.named(0)
    child = named["pleader-2"]
    assert named["pworker-2"] == child and child not in groups_before
    assert child == composite_groups.instance_name(
        "llama", 0, "prefill", 2, named["pleader-0"].rsplit("-", 1)[-1]
    )
    assert writes(first) == {"PodGroup": [f"create:{child}"]}
    order = [c.name for c in first.creates]
    assert order.index(child) < order.index("llama-0-pleader-2")
    second = world.apply(world.plan(cqs))
    assert writes(second) == {}
    made = world.pod_groups(0)[child]
    assert parent(made) == parent(world.pod_groups(0)[named["pleader-0"]])
    assert made.min_count == 3 and made.metadata.labels[labels.LABEL_GROUP_INDEX] == "2"
    # nothing else moved
    assert {k: v for k, v in named.items() if not k.endswith("-2")} == before[0]
    assert world.named(1) == before[1]
    third = world.plan(cqs)
    assert not third.creates and not third.deletes


def test_a_scale_down_deletes_the_instances_child_only() -> None:
    cqs, world = settled(group_replicas=3)
    named = world.named(0)
    world.scale(0, 1)
    first = world.apply(world.plan(cqs))
    assert sorted(d.name for d in first.deletes if d.resource.kind == "Clique") == [
        "llama-0-pleader-1",
        "llama-0-pleader-2",
        "llama-0-pworker-1",
        "llama-0-pworker-2",
    ]
    second = world.apply(world.plan(cqs))
    assert sorted(writes(second)["PodGroup"]) == sorted(
        f"delete:{named[f'pleader-{i}']}" for i in (1, 2)
    )
    assert "CompositePodGroup" not in writes(second)
    assert len(world.composites(0)) == 2


def test_a_gang_keeps_its_tree_when_the_groups_min_available_changes() -> None:
    cqs, world = settled(group_replicas=3)
    old = dict(world.named(0))
    old_composites = set(world.composites(0))
    cqs.spec.template.scaling_groups[0].min_available = 2
    cqs.spec.replicas = 3
    first = world.apply(world.plan(cqs))
    # gangs 0 and 1 stay on their trees; gang 2 gets the new one, and a new Workload
    assert world.named(0) == old
    made = writes(first)
    assert len(made["Workload"]) == 1
    assert all(
        c.body["metadata"]["labels"][labels.LABEL_GANG_INDEX] == "2"
        for c in first.creates
        if c.resource.kind in ("PodGroup", "CompositePodGroup")
    )
    world.settle(cqs)
    new_root = next(
        g
        for g in world.composites(2).values()
        if not parent(g) and not g.metadata.labels.get(labels.LABEL_SCALING_GROUP)
    )
    assert new_root.metadata.name not in old_composites
    prefill2 = next(g for g in world.composites(2).values() if parent(g))
    assert prefill2.metadata.name != next(g for g in old_composites if "prefill" in g)
    # a scale of gang 0 adds a sibling in its old tree
    world.scale(0, 4)
    world.settle(cqs)
    named = world.named(0)
    sibling = world.pod_groups(0)[named["pleader-3"]]
    assert parent(sibling) == parent(world.pod_groups(0)[old["pleader-0"]])
    assert sibling.spec.workload_ref == world.pod_groups(0)[old["pleader-0"]].spec.workload_ref
    assert set(world.composites(0)) == old_composites
    # the old Workload is kept while gang 0's and 1's groups link to it
    assert len(world.workloads) == 2


def test_a_roll_of_a_whole_gang_moves_each_clique_to_its_part_of_the_new_tree() -> None:
    cqs, world = settled(replicas=1)
    old = dict(world.named(0))
    old_groups = {g.metadata.name for g in world.groups}
    old_composites = set(world.composites(0))
    old_workloads = [w.metadata.name for w in world.workloads]
    # a new disruption mode (every object of the tree) and a template change (a roll)
    cqs.spec.template.scaling_groups[0].min_available = 2
    cqs.spec.gang_scheduling = GangScheduling(backend="Workload", disruption="Pod")
    changed = {role: f"{h}2" for role, h in HASHES.items()}
    snapshot = dataclasses.replace(world.snapshot(cqs), hashes=changed)
    plan = world.apply(cliqueset_planner.plan(snapshot))
    rolled = {p.name for p in plan.patches if p.resource.kind == "Clique"}
    assert len(rolled) == 6
    moved = world.named(0)
    assert moved["frontend"] == moved["decode"] and moved["frontend"] != old["frontend"]
    assert moved["pleader-1"] == moved["pworker-1"] != moved["pleader-0"]
    assert not set(moved.values()) & old_groups
    names = gang_tree_parts.wanted_names("llama", 0, gang_tree_parts.parts(cqs, ON))
    assert moved["pleader-1"] == names.of("prefill", 1) and moved["decode"] == names.of()
    # next: the new tree is made, the old PodGroups deleted; the old composites only once
    # their children are gone from the cache
    world.protected = {g for g in old_groups if g in world.pod_groups()}
    second = world.apply(world.plan(cqs))
    made = writes(second)
    assert sorted(n for n in made["PodGroup"] if n.startswith("delete:")) == sorted(
        f"delete:{n}" for n in world.pod_groups() if n in old_groups
    )
    assert not any(n.startswith("delete:") for n in made["CompositePodGroup"])
    assert {g.metadata.name for g in world.groups} >= old_groups  # still terminating
    # the PodGroups' last pods are gone: the old prefill composite goes, then its parent
    world.groups = [g for g in world.groups if g.metadata.deletion_timestamp is None]
    third = world.apply(world.plan(cqs))
    (mid,) = writes(third)["CompositePodGroup"]
    fourth = world.apply(world.plan(cqs))
    (root,) = writes(fourth)["CompositePodGroup"]
    assert {mid, root} == {f"delete:{n}" for n in old_composites}
    assert "prefill" in mid and "prefill" not in root
    assert not {g.metadata.name for g in world.groups} & old_groups
    # and the old Workload, which nothing links to any more
    last = world.apply(world.plan(cqs))
    assert writes(last) == {"Workload": [f"delete:{w}" for w in old_workloads]}
    assert not world.plan(cqs).deletes


def test_minimum_counts_follow_each_parts_pods() -> None:
    cqs, world = settled(replicas=1)
    named = world.named(0)
    cqs.spec.template.cliques[2].replicas = 3  # pworker: 3 pods per instance
    cqs.spec.template.cliques[2].min_available = None
    plan = world.plan(cqs)
    patched = {
        p.name: p.patch["spec"]["schedulingPolicy"]
        for p in plan.patches
        if p.resource.kind == "PodGroup"
    }
    assert patched == {
        named["pleader-0"]: {"gang": {"minCount": 4}},
        named["pleader-1"]: {"gang": {"minCount": 4}},
    }


# -- older gangs and leaving composites --------------------------------------------------------


def test_a_gang_made_with_one_podgroup_keeps_it_and_its_new_instances_join_it() -> None:
    cqs = with_backend(prefill_set(replicas=1))
    world = World(features=frozenset({"topology"}))
    world.settle(cqs)
    (one,) = world.pod_groups(0)
    world.features = ON  # the operator now runs against a server with composites
    world.scale(0, 3)
    world.settle(cqs)
    named = world.named(0)
    assert set(named.values()) == {one}
    assert not world.composites()
    # its minCount follows the whole gang (1 instance needed: unchanged)
    assert world.pod_groups(0)[one].min_count == workload.min_count(cqs)


def test_composites_of_a_set_that_left_them_go_once_nothing_names_them() -> None:
    cqs, world = settled(replicas=1)
    pgs, cpgs = set(world.pod_groups()), set(world.composites())
    world.features = frozenset({"topology"})  # composites no longer served to this set
    cqs.spec.replicas = 0
    first = world.apply(world.plan(cqs))
    assert "CompositePodGroup" not in writes(first)  # the Cliques first
    world.protected = set(pgs)  # their pods are on their way out
    second = world.apply(world.plan(cqs))
    made = writes(second)
    assert sorted(made["PodGroup"]) == sorted(f"delete:{n}" for n in pgs)
    assert "CompositePodGroup" not in made  # the children still in the cache
    world.groups = [g for g in world.groups if g.metadata.deletion_timestamp is None]
    # the prefill composite first (the root is its parent), then the root
    third = world.apply(world.plan(cqs))
    (mid,) = writes(third)["CompositePodGroup"]
    fourth = world.apply(world.plan(cqs))
    (root,) = writes(fourth)["CompositePodGroup"]
    assert {mid, root} == {f"delete:{n}" for n in cpgs}
    assert not world.groups


def test_the_plain_planner_leaves_a_tree_parts_min_count_alone() -> None:
    cqs, world = settled(replicas=1)
    world.features = frozenset({"topology"})
    plan = world.plan(cqs)
    assert not [p for p in plan.patches if p.resource.kind == "PodGroup"]


# -- the pieces --------------------------------------------------------------------------------


def test_names_of_an_old_tree() -> None:
    cqs = with_backend(prefill_set(replicas=1))
    of = gang_tree_parts.parts(cqs, ON)
    wanted = gang_tree_parts.wanted_names("llama", 0, of)
    assert wanted.of("prefill", 7) == composite_groups.instance_name(
        "llama", 0, "prefill", 7, wanted.instances["prefill"]
    )
    old = gang_tree_parts.Names(
        "llama",
        0,
        instances={"prefill": "abcdef12"},
        named={("", None): "llama-0-old", ("prefill", 0): "llama-0-prefill-0-abcdef12"},
        fallback="llama-0-old",
    )
    assert old.of() == "llama-0-old"
    assert old.of("prefill", 0) == "llama-0-prefill-0-abcdef12"
    assert old.of("prefill", 5) == "llama-0-prefill-5-abcdef12"
    assert old.of("decode", 0) == "llama-0-old"  # no place in the tree: a group it names
    assert gang_tree_parts.instance_hash(
        "llama", 0, "prefill", 5, "llama-0-prefill-5-abcdef12"
    ) == ("abcdef12")
    assert gang_tree_parts.instance_hash("llama", 0, "prefill", 5, "llama-0-abcdef12") == ""


def test_member_pod_group_without_trees_is_the_gangs() -> None:
    plan = gang_scheduling.GangPlan(
        workload.Decision("Workload", "r", "m"), pod_groups=True, named={0: "g0"}, wanted={1: "w1"}
    )
    assert plan.member_pod_group(0, "prefill", 1) == "g0"
    assert plan.member_pod_group(1) == "w1"
    clique = member_clique(1, "pleader", 0)
    assert plan.move_to(1, clique) == "w1"


def test_stale_composites_wait_for_their_children() -> None:
    cqs = with_backend(prefill_set(replicas=1))
    root = CompositePodGroup(metadata=ObjectMeta(name="root", uid="r"))
    mid = CompositePodGroup(metadata=ObjectMeta(name="mid", uid="m"))
    mid.spec.parent_composite_pod_group_name = "root"
    child = PodGroup(metadata=ObjectMeta(name="child", uid="c", deletion_timestamp=NOW))
    child.spec.parent_composite_pod_group_name = "mid"
    assert gang_trees.stale_composites(cqs, [root, mid, child], ()) == []
    # kept: a PodGroup a Clique names descends from them
    assert gang_trees.stale_composites(cqs, [root, mid], ["child2"]) == [
        d for d in gang_trees.stale_composites(cqs, [root, mid], ()) if d.name == "mid"
    ]
    (gone,) = gang_trees.stale_composites(cqs, [root, mid], ())
    assert gone.name == "mid" and gone.resource.kind == "CompositePodGroup"
    assert gang_trees.stale_composites(cqs, [root], ())[0].name == "root"


def test_a_split_made_again_from_the_last_is_the_split_of_the_new_list() -> None:
    """`_resplit` (the changed objects' gangs split again) equals `_split` of the new list,
    and names every gang whose objects changed, through drops, adds and equal copies (which
    change nothing)."""
    rng = random.Random(7)
    _, world = settled(replicas=6)
    old = list(world.cliques)
    split = gang_trees._split(old, gang_trees._clique_gang)
    for step in range(300):
        new = list(old)
        op = rng.choice(["drop", "add", "copy", "same", "many"])
        changed: set[int] = set()
        if op == "drop" and new:
            changed.add(new.pop(rng.randrange(len(new))).spec.gang_index)
        elif op in ("add", "many"):
            for n in range(1 if op == "add" else 40):
                base = rng.choice(world.cliques)
                spec = msgspec.structs.replace(base.spec, gang_index=rng.randrange(8))
                meta = msgspec.structs.replace(
                    base.metadata, name=f"{base.metadata.name}-{step}-{n}"
                )
                made = msgspec.structs.replace(base, metadata=meta, spec=spec)
                new.insert(rng.randrange(len(new) + 1), made)
                changed.add(made.spec.gang_index)
        elif op == "copy" and new:
            i = rng.randrange(len(new))
            new[i] = msgspec.structs.replace(new[i])  # equal, not the same object: no change
        kept, got, dirty = gang_trees._resplit(old, new, split, gang_trees._clique_gang)
        assert got == gang_trees._split(new, gang_trees._clique_gang)
        assert changed <= dirty
        # the split holds the very objects of the list it remembers
        assert sorted(id(x) for found in got.values() for x in found) == sorted(map(id, kept))
        old, split = kept, got
