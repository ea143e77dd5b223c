"""Gang restarts on the same nodes (pure): a gang made again after a crash prefers the nodes
it ran on, where its images are pulled and its caches warm.

On GPU nodes a new pod pulls an image of 10-20 GB and loads its weights for minutes; on the
node it ran on, both are in the node's caches. So when the Clique controller deletes its
pods for a gang restart, it records on the Clique the restart count and, by pod index, the
node each pod ran on (`cliques.dev/restart-nodes: 1:0=gpu-a,1=gpu-b`, `record`), and the
pod it makes at an index for that restart carries a preferred node affinity for that node
(`prefer`): the pod goes back where its index ran, to its images and to whatever its
index left on the node's disks. A preference the scheduler weighs, never a requirement, so
a pod whose old node has no room is placed elsewhere as before.

A pod that left for a node problem or a disruption is not followed: one with the
`DisruptionTarget` condition (evicted, preempted, its node tainted or lost: Kubernetes sets
it), or without a node; nor is any pod of a gang moved off a drained node (`drain`), whose
move writes a record that keeps none (`NONE`, `closed`). The record holds the nodes of one
restart; pods of an older restart, or made before any, get no preference. The operator's
`--restart-placement anywhere` turns the preference off.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.pod import Pod
from cliques.controllers.base.actions import Patch
from cliques.kube.resources import CLIQUES

#: The condition Kubernetes sets on a pod it is about to take away (eviction, preemption,
#: a taint or a lost node): such a pod's node is not one to come back to.
DISRUPTION_TARGET: Final = "DisruptionTarget"
#: The weight of the preference (the most a preferred term may have).
WEIGHT: Final = 100
#: The most pod indices one record keeps (the annotation stays small; a Clique with more
#: pods gives the rest no preference).
MAX_NODES: Final = 256


#: The nodes part of a record that keeps no node for its restart (a move off a drained node).
NONE: Final = "-"


def closed(restarts: str) -> str:
    """The record of a gang restart whose pods prefer no node (a move, `drain`)."""
    return f"{restarts}:{NONE}"


def _parse(value: str) -> tuple[str, dict[int, str]]:
    restarts, _, pairs = value.partition(":")
    out: dict[int, str] = {}
    for pair in pairs.split(","):
        index, _, node = pair.partition("=")
        if index.isdigit() and node:
            out[int(index)] = node
    return restarts, out


def recorded(clique: Clique, restarts: str) -> dict[int, str]:
    """Pod index -> the node its pod ran on, recorded for the gang restart `restarts` of
    `clique` ({} if none)."""
    value = clique.metadata.annotations.get(labels.ANNOTATION_RESTART_NODES, "")
    at, nodes = _parse(value)
    return nodes if value and at == restarts else {}


def _disrupted(pod: Pod) -> bool:
    return any(c.type == DISRUPTION_TARGET and c.status == "True" for c in pod.status.conditions)


def record(clique: Clique, restarts: str, leaving: Iterable[tuple[int, Pod]]) -> Patch | None:
    """The patch that records on `clique` the nodes of `leaving` ((index, pod) deleted for
    the gang restart `restarts`), added to what is recorded for that restart already; None
    when it adds nothing."""
    value = clique.metadata.annotations.get(labels.ANNOTATION_RESTART_NODES, "")
    if value == closed(restarts):
        return None
    have = recorded(clique, restarts)
    nodes = dict(have)
    for index, pod in leaving:
        if pod.spec.node_name and not _disrupted(pod):
            nodes[index] = pod.spec.node_name
    if nodes == have:
        return None
    pairs = ",".join(f"{i}={n}" for i, n in sorted(nodes.items())[:MAX_NODES])
    body = {"metadata": {"annotations": {labels.ANNOTATION_RESTART_NODES: f"{restarts}:{pairs}"}}}
    return Patch(CLIQUES, clique.metadata.name, body, reason="RestartNodes")


def prefer(body: dict[str, Any], node: str | None) -> dict[str, Any]:
    """Pod `body` with a preferred node affinity for `node` added to the template's own
    terms (a new dict where it changes; the template's dicts are never mutated). By the
    node's name (`matchFields`), which holds one value per term."""
    if not node:
        return body
    spec = dict(body.get("spec") or {})
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    preferred = list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or [])
    preferred.append(
        {
            "weight": WEIGHT,
            "preference": {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]
            },
        }
    )
    node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity
    return {**body, "spec": spec}
