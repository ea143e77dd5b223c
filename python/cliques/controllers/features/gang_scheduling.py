"""Gang scheduling of one CliqueSet, planned (pure): which backend it gets, the Workload and
PodGroups to create, patch or delete, what each gang's pods name, and its `GangScheduling`
condition.

- The backend is `workload.decide(spec.gangScheduling.backend, <the gang API served>)`; the
  cluster is asked once per operator process (`gangapi.detect`), which picks the newest API
  it serves: `v1beta1` (1.37), `v1alpha2` (1.36), `v1alpha1` (1.35), and the controller
  turns that into the version's strategy once (`gang_apis.pick`): what differs between
  versions is asked of it, never of a version name.
- From 1.36 on (`podgroups`): the set's current Workload is the template, created when
  missing, and each gang has its PodGroup (`controllers.podgroups`), which its Cliques name
  (`cliques.dev/pod-group`) and their pods reference. A Workload no PodGroup links to and
  that is not the current one is deleted.
- On 1.35: the CliqueSet's current Workload (`workload.workload_name`: it carries the gang
  shape's hash) is created when missing, and no Clique of a new gang is created before the
  cache shows it (pods referencing a missing Workload would not schedule). A gang's Cliques
  record the Workload they were created with (`cliques.dev/workload`); every Clique of that
  gang created later (a clique template added) uses the same one, so a gang's pods always
  share one Workload. A Workload no live Clique records and that is not the current one is
  deleted.
- Where the server serves CompositePodGroups (1.37 alpha in v1alpha3, 1.38 beta in v1beta1:
  `gangapi.COMPOSITE`, in `GangAPIVersion.composite_version`), a set with
  scaling groups whose gangs share no DRA claims gets a tree per gang instead
  (`gang_trees`): a composite whose children are a PodGroup per instance of its groups
  (`minGroupCount`: the group's `minAvailable`), and each Clique names its own part of it
  (`GangPlan.member_pod_group`). Elsewhere such a set gets one PodGroup per gang, as any
  other. Composites no group descends from are deleted, once nothing names them.
- Start order: the scheduler binds none of a gang's pods until all of them exist, so with
  the Workload backend a clique cannot hold its pods back until the cliques it starts
  after are Ready. Its Clique gets `startGate` instead (`start_gates`): all pods are created,
  and each waits at its start gate after placement (`start_gate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cliques.api import labels
from cliques.api.backends import GangBackend
from cliques.api.claim import ClaimScope
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import Condition, ConditionStatus, find_condition
from cliques.api.podgroup import CompositePodGroup, PodGroup
from cliques.api.workload import Workload
from cliques.controllers.base import conditions
from cliques.controllers.base.actions import Create, Delete, Event, Patch
from cliques.controllers.features import (
    composite_groups,
    gang_tree_parts,
    gang_trees,
    podgroups,
    workload,
)
from cliques.controllers.features.gang_apis import GangAPIVersion, NoGangAPI
from cliques.kube import gangapi, store
from cliques.kube.informer import Informer
from cliques.kube.resources import Resource
from cliques.kube.watches import Watch

CONDITION: Final = "GangScheduling"


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads for gang scheduling: the gang API the cluster
    serves (`gang_apis`, picked once per process), the Workloads the set owns, and its
    PodGroups (from 1.36 on) with its CompositePodGroups (`api.podgroup.CompositePodGroup`,
    a subclass; 1.37 alpha, `gang_trees`)."""

    api: GangAPIVersion = field(default_factory=NoGangAPI)
    workloads: list[Workload] = field(default_factory=list)
    groups: list[PodGroup] = field(default_factory=list)


def _workloads(api: gangapi.GangAPI) -> Resource | None:
    return api.workload_resource if api.served else None


def _pod_groups(api: gangapi.GangAPI) -> Resource | None:
    return api.podgroup_resource if api.podgroups else None


def _composite_groups(api: gangapi.GangAPI) -> Resource | None:
    return api.composite_resource if api.podgroups and api.composite else None


#: What gang scheduling watches: the Workloads, PodGroups and CompositePodGroups the
#: CliqueSets own, each only where the cluster serves it.
WATCHES: Final[tuple[Watch, ...]] = (
    Watch("workloads", Workload, _workloads, indexers=store.BY_CONTROLLER),
    Watch("pod_groups", PodGroup, _pod_groups, indexers=store.BY_CONTROLLER),
    Watch("composite_groups", CompositePodGroup, _composite_groups, indexers=store.BY_CONTROLLER),
)


@dataclass(frozen=True)
class Informers:
    """The informers of `WATCHES` (None where the cluster does not serve the kind)."""

    workloads: Informer[Workload] | None = None
    pod_groups: Informer[PodGroup] | None = None
    composite_groups: Informer[CompositePodGroup] | None = None

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> Informers:
        """From the informers by watch name."""
        return cls(*(informers.get(w.name) for w in WATCHES))

    def owned(self) -> tuple[Informer[Any], ...]:
        """The informers of objects a CliqueSet owns (a change wakes it)."""
        return tuple(i for i in (self.workloads, self.pod_groups, self.composite_groups) if i)

    def view(self, owner: str, api: GangAPIVersion) -> View:
        """What the planner reads of the objects of owner `owner` (`store.owner_key`)."""
        groups: list[PodGroup] = []
        for informer in (self.pod_groups, self.composite_groups):
            if informer is not None:  # its CompositePodGroups in the same list (a subclass)
                groups += informer.store.by_index("controller", owner)
        workloads = self.workloads
        return View(
            api=api,
            workloads=workloads.store.by_index("controller", owner) if workloads else [],
            groups=groups,
        )


@dataclass(frozen=True)
class GangPlan:
    """What gang scheduling adds to a CliqueSet's plan."""

    decision: workload.Decision
    #: the Workload new gangs use on 1.35 ("" without the Workload backend, and from 1.36
    #: on, where gangs name their PodGroup instead)
    current: str = ""
    #: whether new gangs' Cliques can be created now (their Workload is in the cache)
    ready: bool = True
    #: gangs name a PodGroup each (`pod_group`), from 1.36 on
    pod_groups: bool = False
    #: the scheduler keeps each gang in one domain of `placement.pack` (its PodGroup's
    #: topology constraint): the pods get no pack affinity term
    scheduler_packs: bool = False
    creates: list[Create] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)

    #: gang -> the PodGroup its live Cliques name; and the one each gang moves to when all
    #: its pods are made again (from 1.36 on; empty where gangs are composite trees)
    named: dict[int, str] = field(default_factory=dict)
    wanted: dict[int, str] = field(default_factory=dict)
    #: where gangs are composite trees (`gang_trees`): gang -> the PodGroup each part of
    #: it names (a new Clique), and that of the tree it moves to when made whole again
    trees: dict[int, gang_tree_parts.Names] = field(default_factory=dict)
    moves: dict[int, gang_tree_parts.Names] = field(default_factory=dict)
    #: the gang trees planned, for the next plan of the set (`gang_trees.Memo`)
    tree_memo: gang_trees.Memo | None = None

    @property
    def workload_to_move_to(self) -> str:
        """On 1.35 (no PodGroups): the Workload a gang whose pods are all made again moves
        to, the set's current one (its gang shape now), once the cache shows it; "" where
        gangs name PodGroups or no Workload is used. A gang that kept the Workload of an
        older shape would ask for a `minCount` it no longer has (after a shrink, more pods
        than it has: its pods would never be placed)."""
        return self.current if not self.pod_groups and self.ready else ""

    def pod_group(self, gang: int) -> str:
        """The PodGroup a new Clique of gang `gang` names: the one the gang's other Cliques
        name, else the wanted one ("" without PodGroups)."""
        if not self.pod_groups:
            return ""
        return self.named.get(gang) or self.wanted.get(gang, "")

    def member_pod_group(self, gang: int, group: str = "", instance: int | None = None) -> str:
        """The PodGroup a new Clique of gang `gang` names, for instance `instance` of
        scaling group `group` (or with no group, a clique outside the groups): its own
        part's where the gang is a composite tree, else the gang's (`pod_group`)."""
        names = self.trees.get(gang)
        if names is None or not self.pod_groups:
            return self.pod_group(gang)
        return names.of(group, instance)

    def move_to(self, gang: int, clique: Clique) -> str:
        """The PodGroup `clique` of gang `gang` names once all the gang's pods are made
        again: its part's in the tree the set asks for now, or the gang's wanted one."""
        names = self.moves.get(gang)
        if names is None or not self.pod_groups:
            return self.wanted.get(gang, "")
        return names.of(*gang_tree_parts.part_of(clique))


def plan(
    cqs: CliqueSet,
    cliques: Iterable[Clique],
    workloads: Iterable[Workload],
    *,
    api: GangAPIVersion,
    bucket: str,
    groups: Iterable[PodGroup] = (),
    moving: Iterable[int] = (),
    tree_memo: gang_trees.Memo | None = None,
    counts: Mapping[int, Mapping[str, int]] | None = None,
) -> GangPlan:
    """`api`: the gang API the cluster serves (`gang_apis`); `groups`: the PodGroups the
    set owns (from 1.36 on); `moving`: gangs about to move to their wanted group (made
    whole again by a roll), whose wanted group is made ahead of them; `tree_memo`: the
    previous plan's (`GangPlan.tree_memo`) and `counts` (gang -> its instances of each
    scaling group), where gangs are composite trees."""
    shared = any(c.scope in (ClaimScope.GANG, ClaimScope.SET) for c in cqs.spec.resource_claims)
    decision = workload.decide(cqs.spec.gang_scheduling.backend, api, shared_claims=shared)
    cliques = list(cliques)
    groups = list(groups)
    have = {w.metadata.name: w for w in workloads}
    on = decision.backend == GangBackend.WORKLOAD
    if (
        on
        and api.composite
        and composite_groups.wanted(api.features, len(cqs.spec.template.scaling_groups), shared)
    ):
        return _trees(cqs, cliques, have, groups, decision, bucket, api, tree_memo, counts)
    latest = workload.workload_name(cqs) if on else ""
    uid = cqs.metadata.uid
    creates: list[Create] = []
    if latest and latest not in have:
        body = workload.build_workload(cqs, api)
        body["metadata"]["labels"][labels.LABEL_BUCKET] = bucket
        creates.append(Create(api.workloads, latest, body, uid))
    patches: list[Patch] = []
    group_deletes: list[Delete] = []
    named: dict[int, str] = {}
    wanted: dict[int, str] = {}
    if api.pod_groups:
        found = _one_group_per_gang(cqs, cliques, groups, api, latest, bucket, moving, on=on)
        creates += found.creates
        patches, group_deletes = found.patches, found.deletes
        used, named, wanted = found.used, found.named, found.wanted
        current, ready = "", True
    else:
        # (only the set's Workloads can be unused: with none, no Clique is asked)
        used = (
            {
                c.metadata.annotations[labels.ANNOTATION_WORKLOAD]
                for c in cliques
                if c.metadata.deletion_timestamp is None
                and labels.ANNOTATION_WORKLOAD in c.metadata.annotations
            }
            if have
            else set()
        )
        current, ready = latest, not latest or latest in have
    deletes = _unused_workloads(cqs, have, latest, used, api)
    return GangPlan(
        decision,
        current,
        ready=ready,
        pod_groups=on and api.pod_groups,
        scheduler_packs=on and api.pod_groups and podgroups.scheduler_packs(cqs, api.features),
        creates=creates,
        patches=patches,
        deletes=deletes + group_deletes,
        named=named,
        wanted=wanted,
    )


def _unused_workloads(
    cqs: CliqueSet, have: Mapping[str, Workload], latest: str, used: set[str], api: GangAPIVersion
) -> list[Delete]:
    """The deletes of the set's Workloads that are not `latest` and nothing links to."""
    return [
        Delete(api.workloads, name, w.metadata.uid, cqs.metadata.uid, "Unused")
        for name, w in sorted(have.items())
        if name != latest and name not in used and w.metadata.deletion_timestamp is None
    ]


@dataclass
class _GroupWrites:
    """The PodGroups of gangs of one PodGroup each: what to write, the Workloads they link
    to, and per gang the group its Cliques name and the one it moves to."""

    creates: list[Create]
    patches: list[Patch]
    deletes: list[Delete]
    used: set[str]
    named: dict[int, str]
    wanted: dict[int, str]


def _one_group_per_gang(
    cqs: CliqueSet,
    cliques: list[Clique],
    groups: list[PodGroup],
    api: GangAPIVersion,
    latest: str,
    bucket: str,
    moving: Iterable[int],
    *,
    on: bool,
) -> _GroupWrites:
    """The groups live Cliques name (whatever the backend: their pods may still be made,
    and name them), and while the backend is `on` the wanted group of each gang of the set
    that has no Clique naming one yet (and of the gangs `moving` to it)."""
    keep: dict[str, int] = {}
    named: dict[int, str] = {}
    wanted: dict[int, str] = {}
    for c in sorted(cliques, key=lambda c: c.metadata.name):
        name = c.metadata.annotations.get(labels.ANNOTATION_POD_GROUP)
        if c.metadata.deletion_timestamp is None and name:
            keep.setdefault(name, c.spec.gang_index)
            named.setdefault(c.spec.gang_index, name)
    if on:
        fixed = podgroups.fixed_hash(api, podgroups.shape(cqs, api.features))
        for gang in range(cqs.spec.replicas):
            wanted[gang] = podgroups.group_name(cqs.metadata.name, gang, fixed)
            if gang not in named:
                keep.setdefault(wanted[gang], gang)
        for gang in moving:
            if gang in wanted:
                keep.setdefault(wanted[gang], gang)
    plain = [g for g in groups if not isinstance(g, CompositePodGroup)]
    groups_plan = podgroups.plan(cqs, api, plain, keep, latest, bucket)
    used = groups_plan.linked | {
        g.metadata.annotations.get(labels.ANNOTATION_WORKLOAD, "")
        for g in groups
        if isinstance(g, CompositePodGroup)
    }
    return _GroupWrites(
        creates=groups_plan.creates,
        patches=groups_plan.patches,
        # and the composites of trees no longer named (the set's gangs were trees)
        deletes=groups_plan.deletes
        + gang_trees.stale_composites(cqs, groups, keep, version=api.composite_version),
        used=used,
        named=named,
        wanted=wanted,
    )


def _trees(
    cqs: CliqueSet,
    cliques: list[Clique],
    have: Mapping[str, Workload],
    groups: list[PodGroup],
    decision: workload.Decision,
    bucket: str,
    api: GangAPIVersion,
    memo: gang_trees.Memo | None,
    counts: Mapping[int, Mapping[str, int]] | None,
) -> GangPlan:
    """The `GangPlan` of a set whose gangs are composite trees (`gang_trees`)."""
    uid = cqs.metadata.uid
    trees = gang_trees.plan(
        cqs,
        cliques,
        groups,
        bucket=bucket,
        features=api.features,
        memo=memo,
        counts=counts,
        composite_version=api.composite_version,
    )
    wl_resource = api.workloads
    creates: list[Create] = []
    latest = trees.workload
    if latest and latest not in have and trees.workload_templates is not None:
        body = composite_groups.workload_body(cqs, trees.workload_templates, bucket, api)
        creates.append(Create(wl_resource, latest, body, uid))
    deletes = [
        Delete(wl_resource, name, w.metadata.uid, uid, "Unused")
        for name, w in sorted(have.items())
        if name != latest and name not in trees.linked and w.metadata.deletion_timestamp is None
    ]
    message = (
        f"gangs are scheduled through scheduling.k8s.io/{api.composite_version} "
        f"CompositePodGroups, one each, with a scheduling.k8s.io/"
        f"{composite_groups.POD_GROUP_VERSION} PodGroup per instance of a scaling group"
    )
    return GangPlan(
        dataclasses.replace(decision, message=message),
        pod_groups=True,
        scheduler_packs=trees.scheduler_packs,
        creates=creates + trees.creates,
        patches=trees.patches,
        deletes=deletes + trees.deletes,
        trees=trees.names,
        moves=trees.moves,
        tree_memo=trees.memo,
    )


def gang_workload(members: Mapping[str, Clique], current: str) -> str:
    """The Workload of a gang: the one its Cliques recorded, else `current`."""
    for _, clique in sorted(members.items()):
        name = clique.metadata.annotations.get(labels.ANNOTATION_WORKLOAD)
        if name:
            return name
    return current


def start_gates(decision: workload.Decision) -> bool:
    """Whether start order is kept by start gates after placement (`startGate` on the Cliques): with
    the Workload backend a gang's pods must all exist for any of them to be scheduled."""
    return decision.backend == GangBackend.WORKLOAD


def condition(decision: workload.Decision, conds: conditions.Setter, ordered: bool) -> Condition:
    """The `GangScheduling` condition: True with the Workload backend, else False with the
    reason `decide` gave. `ordered`: the spec asks for a start order, which the Workload
    backend enforces after placement, with start gates."""
    status: ConditionStatus = "True" if decision.backend == GangBackend.WORKLOAD else "False"
    message = decision.message
    if ordered and decision.backend == GangBackend.WORKLOAD:
        message += "; start order is enforced after placement, by start gates"
    return conds.set(CONDITION, status, decision.reason, message)


def event(old: list[Condition], new: Condition) -> Event | None:
    """An Event when the condition changes its status or reason (said once)."""
    prev = find_condition(old, CONDITION)
    if prev is not None and (prev.status, prev.reason) == (new.status, new.reason):
        return None
    if new.reason == workload.REASON_DISABLED:
        return None
    kind: Literal["Normal", "Warning"] = (
        "Warning"
        if new.reason in (workload.REASON_UNAVAILABLE, workload.REASON_SHARED_CLAIMS)
        else "Normal"
    )
    return Event(kind, new.reason, new.message)
