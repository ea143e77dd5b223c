"""The gang-crash phase of `cliques bench scale`: the leaders of some gangs fail at once, and
the phase lasts until every gang serves again.

A crash is written on the leader pod's status as a kubelet reports a container that died
and was restarted in place: its `main` container's `restartCount` one higher and not ready,
the pod's Ready and ContainersReady False. The same pod status reaches every operator,
each by the rule it has for a failing member:
- LeaderWorkerSet (`restartPolicy: RecreateGroupOnPodRestart`, its default) recreates the
  group at the container restart;
- cliques recreates the gang once it has stayed below `minAvailable` for
  `minAvailableBreachedSeconds` (the benchmark's CliqueSets get `failurePolicy:
  RecreateGang` with `BREACH_SECONDS` when the phase runs), its pods preferring the nodes
  they ran on unless the operator runs with `--restart-placement anywhere`.

On KWOK nothing makes a crashed pod Ready again (KWOK readies a pod once, before it has an
IP), so a gang that no operator recreates does not serve again and the phase times out.
Under the dev cluster's start model a recreated pod pays the load, and the pull too on a
node without its image: where the new pods land is what the phase measures.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Final

from cliques_lab.bench.kinds import WorkloadKind
from cliques_lab.bench.workload import Shape

#: The phase's name in results and `--skip`.
PHASE: Final = "gang-crash"
#: `failurePolicy.minAvailableBreachedSeconds` of the CliqueSets when the phase runs.
BREACH_SECONDS: Final = 5
#: The container whose crash is reported (the workload's serving container).
CONTAINER: Final = "main"


def failure_policy(body: dict[str, Any]) -> dict[str, Any]:
    """A CliqueSet manifest that recreates a gang below `minAvailable` for
    `BREACH_SECONDS` (a copy; another kind's manifest is returned unchanged)."""
    if body.get("kind") != "CliqueSet":
        return body
    out = copy.deepcopy(body)
    out["spec"]["failurePolicy"] = {
        "restartPolicy": "RecreateGang",
        "minAvailableBreachedSeconds": BREACH_SECONDS,
    }
    return out


def crashed_gangs(shape: Shape, count: int) -> list[int]:
    """The gang indexes that crash in every set: the first `count` (at least one, at most
    all)."""
    return list(range(max(1, min(count, shape.gangs))))


def gang_pods(kind: WorkloadKind, shape: Shape, gangs: Iterable[int]) -> dict[str, list[str]]:
    """The leader pod of each crashed gang of every set -> the names of all its gang's pods
    (the leader first), as `kind` names them."""
    out: dict[str, list[str]] = {}
    for name in shape.names():
        for g in gangs:
            if kind.name == "LeaderWorkerSet":
                leader = f"{name}-{g}"
                members = [leader] + [f"{leader}-{i}" for i in range(1, shape.pods)]
            else:
                members = [f"{name}-{g}-{role}-{i}" for role, n in shape.roles() for i in range(n)]
                leader = members[0]
            out[leader] = members
    return out


def crash_status(pod: dict[str, Any]) -> dict[str, Any]:
    """The status merge patch that reports `pod`'s `CONTAINER` died and restarted: its
    restart count one higher, not ready; the pod's Ready and ContainersReady False. Guarded
    by the pod's resourceVersion; the other conditions and containers are kept."""
    status = pod.get("status") or {}
    conditions = [
        {**c, "status": "False", "reason": "ContainerCrashed"}
        if c.get("type") in ("Ready", "ContainersReady")
        else c
        for c in status.get("conditions") or []
    ]
    containers = [
        {**c, "restartCount": int(c.get("restartCount", 0)) + 1, "ready": False}
        if c.get("name") == CONTAINER
        else c
        for c in status.get("containerStatuses") or []
    ]
    return {
        "metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
        "status": {"conditions": conditions, "containerStatuses": containers},
    }
