"""Pods Ready only in whole gangs (pure): `spec.podReadiness: Gang`.

A pod's Ready condition is the kubelet's: its containers are ready, and every condition its
`spec.readinessGates` names is True. With `podReadiness: Gang` every pod carries the gate
`cliques.dev/gang-ready` (`add_gate`, put into each Clique's pod template by the CliqueSet
controller, so it is part of the template hash: a readiness gate cannot be added to a
running pod, and switching `Pod` to `Gang` or back rolls the set; a set with the default
`Pod` hashes as it always did). One Clique of each gang, the first by name
(`clique.planner.keeper`), sets that condition on every pod of the gang (`gate_patches`, a
strategic-merge patch of `pods/<name>/status`), so that no two reconciles of a gang write
the same condition; the other Cliques' pod and spec changes wake it:

- True while the pod's gang is whole: every pod of every Clique of the gang present with
  its containers ready, of its Clique's current template hash and gang restart count
  (`clique.planner.gang_whole`), and the pod itself one of them;
- False as soon as it is not, for a pod whose condition is True (a pod without the
  condition is not Ready by it either: nothing is written).

Nothing is written for a pod whose condition already says the right thing, so a gang in
steady state costs no write, and a gang of N pods that turns whole (or breaks) costs at
most N. The writes are status-neutral (`Patch.status_neutral`): the Clique's own status
does not wait for them, and their watch events wake no reconcile (the planner does not
look at the condition it writes, `clique.planner.same_to_planner`).

Every Service, the user's own included, then routes only to whole gangs. The
operator's own judgement (start order, availability, breaches) reads the pods' container
readiness (`Pod.containers_ready`), never their Ready, so the gate cannot deadlock an
`InOrder` start, whose first clique waits for no one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet, PodReadiness
from cliques.api.pod import Pod
from cliques.controllers.base.actions import Patch
from cliques.kube.resources import PODS

#: The readiness gate a pod of a `podReadiness: Gang` set carries.
GATE: dict[str, str] = {"conditionType": labels.CONDITION_GANG_READY}
REASON_WHOLE = "GangWhole"
REASON_NOT_WHOLE = "GangNotWhole"


def _has_gate(spec: Any) -> bool:
    gates = spec.get("readinessGates") if isinstance(spec, dict) else None
    return isinstance(gates, list) and any(
        isinstance(g, dict) and g.get("conditionType") == labels.CONDITION_GANG_READY for g in gates
    )


def add_gate(template: Mapping[str, Any], readiness: PodReadiness) -> Mapping[str, Any]:
    """`template` (a pod template) with the gate added to its `spec.readinessGates` for
    `Gang` (a copy), as it is for `Pod` or where it has the gate already: so a set with
    the default `Pod` keeps its template, and its hash."""
    if readiness != PodReadiness.GANG or _has_gate(template.get("spec")):
        return template
    out = dict(template)
    spec = dict(out.get("spec") or {})
    spec["readinessGates"] = [*copy.deepcopy(spec.get("readinessGates") or []), dict(GATE)]
    out["spec"] = spec
    return out


def hash_basis(basis: Mapping[str, Any], cqs: CliqueSet) -> Mapping[str, Any]:
    """What a clique's template hash is taken of: the basis with the gate added
    (`add_gate`) when the set asks for `Gang`."""
    return add_gate(basis, cqs.spec.pod_readiness)


def enabled(clique: Clique) -> bool:
    """The Clique's pods carry the gate: its pod template has it (`add_gate`)."""
    return _has_gate(clique.spec.template.get("spec"))


def desired(pod: Pod, whole: bool, of_epoch: bool) -> bool:
    """Whether the pod's gate should be True: its gang is whole and it is one of the pods
    that make it so (of its Clique's current epoch, `of_epoch`, and ready)."""
    return whole and of_epoch and pod.containers_ready


def gate_patch(value: bool, now: str, message: str) -> dict[str, Any]:
    """The strategic-merge patch of a pod's status that sets its gate condition (merged by
    type into its conditions, the kubelet's own left as they are)."""
    return {
        "status": {
            "conditions": [
                {
                    "type": labels.CONDITION_GANG_READY,
                    "status": "True" if value else "False",
                    "reason": REASON_WHOLE if value else REASON_NOT_WHOLE,
                    "message": message,
                    "lastTransitionTime": now,
                }
            ]
        }
    }


def gate_patches(pods: Iterable[tuple[Pod, bool]], whole: bool, now: str, gang: str) -> list[Patch]:
    """The status patches of the pods (each with whether it is of its Clique's current
    epoch) whose gate condition differs from what it should be (`desired`): True where it
    is not, False where it is True. None for a pod without the gate or being deleted, or
    whose condition is already right."""
    out = []
    for pod, of_epoch in sorted(pods, key=lambda p: p[0].metadata.name):
        if not pod.gang_gated or pod.metadata.deletion_timestamp is not None:
            continue
        want = desired(pod, whole, of_epoch)
        have = pod.gang_ready == "True"
        if want == have:
            continue
        message = f"gang {gang} is whole" if want else f"gang {gang} is not whole"
        out.append(
            Patch(
                PODS,
                pod.metadata.name,
                gate_patch(want, now, message),
                patch_type="strategic",
                reason=REASON_WHOLE if want else REASON_NOT_WHOLE,
                sub="status",
                status_neutral=True,
            )
        )
    return out
