"""Gang scheduling of one CliqueSet, planned (pure): which backend it gets, the Workload to
create or delete, the Workload each gang uses, and its `GangScheduling` condition.

- The backend is `workload.decide(spec.gangScheduling.backend, <the cluster serves the
  Workload API>)`; the cluster is asked once per operator process (`gangapi.detect`).
- With the Workload backend, the CliqueSet's current Workload (`workload.workload_name`:
  it carries the gang shape's hash) is created when missing, and no Clique of a new gang
  is created before the cache shows it (pods referencing a missing Workload would not
  schedule). A gang's Cliques record the Workload they were created with
  (`cliques.dev/workload`); every Clique of that gang created later (a clique template
  added) uses the same one, so a gang's pods always share one Workload. A Workload no
  live Clique records and that is not the current one is deleted.
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
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import Condition, ConditionStatus, find_condition
from cliques.api.workload import Workload
from cliques.controllers import conditions, workload
from cliques.controllers.actions import Create, Delete, Event
from cliques.kube.resources import WORKLOADS

CONDITION: Final = "GangScheduling"


@dataclass(frozen=True)
class GangPlan:
    """What gang scheduling adds to a CliqueSet's plan."""

    decision: workload.Decision
    #: the Workload new gangs use ("" without the Workload backend)
    current: str = ""
    #: whether new gangs' Cliques can be created now (their Workload is in the cache)
    ready: bool = True
    creates: list[Create] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)


def plan(
    cqs: CliqueSet,
    cliques: Iterable[Clique],
    workloads: Iterable[Workload],
    *,
    workload_api: bool,
    detail: str,
    bucket: str,
) -> GangPlan:
    decision = workload.decide(cqs.spec.gang_scheduling.backend, workload_api, detail)
    have = {w.metadata.name: w for w in workloads}
    used = {
        c.metadata.annotations[labels.ANNOTATION_WORKLOAD]
        for c in cliques
        if c.metadata.deletion_timestamp is None
        and labels.ANNOTATION_WORKLOAD in c.metadata.annotations
    }
    current = workload.workload_name(cqs) if decision.backend == "Workload" else ""
    uid = cqs.metadata.uid
    creates: list[Create] = []
    if current and current not in have:
        body = workload.build_workload(cqs)
        body["metadata"]["labels"][labels.LABEL_BUCKET] = bucket
        creates.append(Create(WORKLOADS, current, body, uid))
    deletes = [
        Delete(WORKLOADS, name, w.metadata.uid, uid, "Unused")
        for name, w in sorted(have.items())
        if name != current and name not in used and w.metadata.deletion_timestamp is None
    ]
    return GangPlan(
        decision, current, ready=not current or current in have, creates=creates, deletes=deletes
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
        "Warning" if new.reason == workload.REASON_UNAVAILABLE else "Normal"
    )
    return Event(kind, new.reason, new.message)
