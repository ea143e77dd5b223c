"""Gang restarts on the same nodes, on the real control plane with the dev cluster's start
model (an image pull paid once per node and image, a load at every start): a gang recreated
after a crash comes back on the nodes it ran on, each pod to the node of its index, and
pays only the load, its pods carrying a preference for that node (never a requirement);
with `--restart-placement anywhere`
they carry none. The image name is new to the cluster, so other tests never warm a node.

`CLIQUES_RESTART_START_MODEL=PULL,LOAD` (seconds; default 20,2) runs both with other
durations: docs/performance.md's time to serve after a crash is `60,90`.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

from cliques.api import labels
from cliques.kube.resources import PODS
from cliques_lab.devcluster import startmodel
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

SET = "warm"
PULL, LOAD = (int(v) for v in os.environ.get("CLIQUES_RESTART_START_MODEL", "20,2").split(","))
#: Seconds a deploy or a recreated gang may take: a pull and a load, with room to spare.
START_TIMEOUT = 60 + 2 * (PULL + LOAD)
POLICY = {
    "restartPolicy": "RecreateGang",
    "minAvailableBreachedSeconds": 2,
    "restartBackoff": {"initialSeconds": 1, "maxSeconds": 2},
}


def _body(image: str) -> dict[str, Any]:
    body = cliqueset(SET, replicas=1, leader=1, workers=2, image=image)
    body["spec"]["failurePolicy"] = POLICY
    for clique in body["spec"]["template"]["cliques"]:
        clique["template"]["metadata"]["annotations"] = {
            startmodel.PULL_ANNOTATION: str(PULL),
            startmodel.LOAD_ANNOTATION: str(LOAD),
        }
    return body


async def _pods(cluster: Cluster) -> dict[str, dict[str, Any]]:
    pods = await cluster.list(PODS, dict, f"{labels.LABEL_CLIQUESET}={SET}")
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


def _ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def _start_reason(pod: dict[str, Any]) -> str:
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == startmodel.CONDITION:
            return str(c.get("reason", ""))
    return ""


def _preferred_nodes(pod: dict[str, Any]) -> list[str]:
    terms = (
        pod["spec"]
        .get("affinity", {})
        .get("nodeAffinity", {})
        .get("preferredDuringSchedulingIgnoredDuringExecution", [])
    )
    return [
        value
        for t in terms
        for f in t["preference"].get("matchFields", [])
        if f["key"] == "metadata.name"
        for value in f["values"]
    ]


async def _crash_and_recreate(cluster: Cluster) -> tuple[dict[str, Any], dict[str, Any], float]:
    """Break the gang's leader (Ready=False, as a kubelet reports a failing probe) and wait
    until every pod is new and Ready: (old pods, new pods, seconds from break to Ready)."""
    old = await _pods(cluster)
    assert len(old) == 3 and all(_ready(p) for p in old.values()), old
    leader = labels.pod_name(labels.clique_name(SET, 0, "leader"), 0)
    patch = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    started = time.monotonic()
    await cluster.client.patch(
        PODS, cluster.namespace, leader, patch, dict, patch_type="strategic", sub="status"
    )
    uids = {p["metadata"]["uid"] for p in old.values()}

    async def recreated() -> dict[str, Any] | None:
        now = await _pods(cluster)
        fresh = len(now) == 3 and not {p["metadata"]["uid"] for p in now.values()} & uids
        return now if fresh and all(_ready(p) for p in now.values()) else None

    new = await wait_for(
        recreated, timeout=START_TIMEOUT + 40, what="the gang recreated whole and Ready"
    )
    return old, new, time.monotonic() - started


async def test_a_restarted_gang_comes_back_to_its_nodes_and_pays_only_the_load(
    cluster: Cluster, crds: str
) -> None:
    image = f"busybox:warm-{secrets.token_hex(4)}"
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(_body(image))
        await cluster.wait_available(SET, timeout=START_TIMEOUT)
        old, new, took = await _crash_and_recreate(cluster)
    before = sorted(p["spec"]["nodeName"] for p in old.values())
    after = sorted(p["spec"]["nodeName"] for p in new.values())
    print(f"same nodes: gang Ready {took:.1f}s after the crash; nodes {before} -> {after}")
    for name, pod in new.items():
        was = old[name]["spec"]["nodeName"]
        assert _preferred_nodes(pod) == [was], pod["spec"]
        assert pod["spec"]["nodeName"] == was
        # the image was on its node: the start paid the load alone
        assert _start_reason(pod) == "Load", pod["status"]


async def test_anywhere_gives_the_recreated_pods_no_preference(cluster: Cluster, crds: str) -> None:
    image = f"busybox:cold-{secrets.token_hex(4)}"
    async with running_operator(crds, cluster.namespace, status_hold=0.0, same_nodes=False):
        await cluster.apply(_body(image))
        await cluster.wait_available(SET, timeout=START_TIMEOUT)
        old, new, took = await _crash_and_recreate(cluster)
    moved = sum(
        1 for name, p in new.items() if p["spec"]["nodeName"] != old[name]["spec"]["nodeName"]
    )
    print(f"anywhere: gang Ready {took:.1f}s after the crash; {moved} of 3 pods on another node")
    for pod in new.values():
        assert _preferred_nodes(pod) == [], pod["spec"]
