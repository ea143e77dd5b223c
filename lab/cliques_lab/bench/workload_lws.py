"""The benchmark workload as LeaderWorkerSets (pure): the manifests, their pod templates and
the pods LWS names, for comparing LWS with cliques on the same pods.

A shape `SETSxGANGSxPODS` becomes SETS LeaderWorkerSets of `replicas: GANGS` groups of
`size: PODS` pods, `startupPolicy: LeaderCreated`, rolled `maxUnavailable` as many groups
as the CliqueSets roll gangs. The leader and worker templates are `workload.pod_template`,
the CliqueSets' own, so the scheduler, KWOK and the API server see the same pods.

LWS names its pods after its StatefulSets: the leader StatefulSet `<set>` makes leader pods
`<set>-<group>`, and each group's worker StatefulSet `<set>-<group>` makes worker pods
`<set>-<group>-<index>` (index 1 to size-1).
"""

from __future__ import annotations

import copy
from typing import Any

from cliques.kube.resources import Resource
from cliques_lab.bench import workload
from cliques_lab.bench.workload import Shape

LEADERWORKERSETS = Resource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet")


def manifest(name: str, shape: Shape, image: str = "busybox:1.36") -> dict[str, Any]:
    """One LeaderWorkerSet of `shape.gangs` groups of `shape.pods` pods."""
    lwt: dict[str, Any] = {"size": shape.pods}
    if shape.pods > 1:
        lwt["leaderTemplate"] = workload.pod_template("leader", image)
        lwt["workerTemplate"] = workload.pod_template("worker", image)
    else:  # a group of one pod is its leader, made from the worker template
        lwt["workerTemplate"] = workload.pod_template("leader", image)
    return {
        "apiVersion": LEADERWORKERSETS.api_version,
        "kind": LEADERWORKERSETS.kind,
        "metadata": {"name": name},
        "spec": {
            "replicas": shape.gangs,
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {
                    "maxUnavailable": max(1, shape.gangs // 10),
                    "maxSurge": 0,
                },
            },
            "leaderWorkerTemplate": lwt,
        },
    }


def pod_templates(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A LeaderWorkerSet manifest's pod templates by role, named as the CliqueSets' cliques."""
    lwt = body["spec"]["leaderWorkerTemplate"]
    if "leaderTemplate" not in lwt:
        return {"leader": lwt["workerTemplate"]}
    return {"leader": lwt["leaderTemplate"], "worker": lwt["workerTemplate"]}


def reordered(body: dict[str, Any]) -> dict[str, Any]:
    """The same desired state spelled differently, as `workload.reordered` does for
    CliqueSets: containers and ports reversed, quantities in other units."""
    out = copy.deepcopy(body)
    for template in pod_templates(out).values():
        workload.respell_template(template)
    return out


def desired_pods(shape: Shape) -> set[str]:
    """The names of every pod the LeaderWorkerSets of `shape` should have."""
    return {
        f"{name}-{group}" + (f"-{index}" if index else "")
        for name in shape.names()
        for group in range(shape.gangs)
        for index in range(shape.pods)
    }
