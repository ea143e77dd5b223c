"""Gang scheduling of one CliqueSet, planned (pure): which backend it gets, the Workload and
PodGroups to create, patch or delete, what each gang's pods name, and its `GangScheduling`
condition.

- The backend is `workload.decide(spec.gangScheduling.backend, <a gang API is served>)`; the
  cluster is asked once per operator process (`gangapi.detect`), which picks the newest API
  it serves: `v1beta1` (1.37), `v1alpha2` (1.36), `v1alpha1` (1.35).
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
- Start order: the scheduler binds none of a gang's pods until all of them exist, so with
  the Workload backend a clique cannot hold its pods back until the cliques it starts
  after are Ready. Its Clique gets `startGate` instead (`gated`): all pods are created,
  and each waits at its start gate after placement (`start_gate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import SCOPE_GANG, SCOPE_SET, CliqueSet
from cliques.api.meta import Condition, ConditionStatus, find_condition
from cliques.api.podgroup import PodGroup
from cliques.api.workload import Workload
from cliques.controllers import conditions, podgroups, workload
from cliques.controllers.actions import Create, Delete, Event, Patch
from cliques.kube import gangapi

CONDITION: Final = "GangScheduling"


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
    #: its pods are made again (from 1.36 on)
    named: dict[int, str] = field(default_factory=dict)
    wanted: dict[int, str] = field(default_factory=dict)

    def pod_group(self, gang: int) -> str:
        """The PodGroup a new Clique of gang `gang` names: the one the gang's other Cliques
        name, else the wanted one ("" without PodGroups)."""
        if not self.pod_groups:
            return ""
        return self.named.get(gang) or self.wanted.get(gang, "")


def plan(
    cqs: CliqueSet,
    cliques: Iterable[Clique],
    workloads: Iterable[Workload],
    *,
    workload_api: bool,
    detail: str,
    bucket: str,
    version: str = "v1alpha1",
    groups: Iterable[PodGroup] = (),
    features: frozenset[str] = frozenset(),
    moving: Iterable[int] = (),
) -> GangPlan:
    """`version`: the scheduling.k8s.io version served (`gangapi`); `groups`: the PodGroups
    the set owns (from 1.36 on); `features`: the gated PodGroup fields the server keeps;
    `moving`: gangs about to move to their wanted group (made whole again by a roll), whose
    wanted group is made ahead of them."""
    shared = any(c.scope in (SCOPE_GANG, SCOPE_SET) for c in cqs.spec.resource_claims)
    decision = workload.decide(
        cqs.spec.gang_scheduling.backend, workload_api, detail, version, shared_claims=shared
    )
    cliques = list(cliques)
    have = {w.metadata.name: w for w in workloads}
    on = decision.backend == "Workload"
    latest = workload.workload_name(cqs) if on else ""
    uid = cqs.metadata.uid
    wl_resource = gangapi.workloads(version)
    creates: list[Create] = []
    if latest and latest not in have:
        body = workload.build_workload(cqs, version)
        body["metadata"]["labels"][labels.LABEL_BUCKET] = bucket
        creates.append(Create(wl_resource, latest, body, uid))
    patches: list[Patch] = []
    group_deletes: list[Delete] = []
    named: dict[int, str] = {}
    wanted: dict[int, str] = {}
    if version in podgroups.VERSIONS:
        # The groups live Cliques name (whatever the backend: their pods may still be
        # made, and name them), and while the backend is on the wanted group of each gang
        # of the set that has no Clique naming one yet.
        keep: dict[str, int] = {}
        for c in sorted(cliques, key=lambda c: c.metadata.name):
            name = c.metadata.annotations.get(labels.ANNOTATION_POD_GROUP)
            if c.metadata.deletion_timestamp is None and name:
                keep.setdefault(name, c.spec.gang_index)
                named.setdefault(c.spec.gang_index, name)
        if on:
            fixed = podgroups.fixed_hash(version, podgroups.shape(cqs, features))
            for gang in range(cqs.spec.replicas):
                wanted[gang] = podgroups.group_name(cqs.metadata.name, gang, fixed)
                if gang not in named:
                    keep.setdefault(wanted[gang], gang)
            for gang in moving:
                if gang in wanted:
                    keep.setdefault(wanted[gang], gang)
        groups_plan = podgroups.plan(cqs, version, groups, keep, latest, bucket, features)
        creates += groups_plan.creates
        patches = groups_plan.patches
        group_deletes = groups_plan.deletes
        used = groups_plan.linked
        current, ready = "", True
    else:
        used = {
            c.metadata.annotations[labels.ANNOTATION_WORKLOAD]
            for c in cliques
            if c.metadata.deletion_timestamp is None
            and labels.ANNOTATION_WORKLOAD in c.metadata.annotations
        }
        current, ready = latest, not latest or latest in have
    deletes = [
        Delete(wl_resource, name, w.metadata.uid, uid, "Unused")
        for name, w in sorted(have.items())
        if name != latest and name not in used and w.metadata.deletion_timestamp is None
    ]
    return GangPlan(
        decision,
        current,
        ready=ready,
        pod_groups=on and version in podgroups.VERSIONS,
        scheduler_packs=on
        and version in podgroups.VERSIONS
        and podgroups.scheduler_packs(cqs, features),
        creates=creates,
        patches=patches,
        deletes=deletes + group_deletes,
        named=named,
        wanted=wanted,
    )


def gang_workload(members: Mapping[str, Clique], current: str) -> str:
    """The Workload of a gang: the one its Cliques recorded, else `current`."""
    for _, clique in sorted(members.items()):
        name = clique.metadata.annotations.get(labels.ANNOTATION_WORKLOAD)
        if name:
            return name
    return current


def gated(decision: workload.Decision) -> bool:
    """Whether start order is enforced after placement (`startGate` on the Cliques): with
    the Workload backend a gang's pods must all exist for any of them to be scheduled."""
    return decision.backend == "Workload"


def condition(decision: workload.Decision, conds: conditions.Setter, ordered: bool) -> Condition:
    """The `GangScheduling` condition: True with the Workload backend, else False with the
    reason `decide` gave. `ordered`: the spec asks for a start order, which the Workload
    backend enforces after placement, with start gates."""
    status: ConditionStatus = "True" if decision.backend == "Workload" else "False"
    message = decision.message
    if ordered and decision.backend == "Workload":
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
