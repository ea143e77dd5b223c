"""gangScheduling with the operator on the real kube-scheduler (the dev cluster's gang
gates on): with the Workload backend a gang binds whole or not at all, even with
startupType InOrder, and then starts in order (start gates); with None its pods bind one
by one. Each test makes its own one-slot
KWOK nodes (`tests.support.gangnodes`), so its pods can only land there."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.meta import Condition, find_condition
from cliques.api.pod import Pod
from cliques.controllers.features import start_gate
from cliques.kube.resources import PODS
from cliques_lab.devcluster import kwok
from tests.support import gangs
from tests.support.gangnodes import gang_nodes, slot_cliqueset
from tests.support.harness import Cluster, running_operator, wait_for

__all__ = ["gang_nodes"]

#: How long "nothing binds" is watched: several scheduling attempts and backoffs.
QUIET_WINDOW = 8.0
#: Seconds the leader of the ordered gang takes to start, once bound (past the quiet window).
LEADER_DELAY = QUIET_WINDOW + 4.0


async def _pods(cluster: Cluster, count: int) -> list[Pod]:
    async def made() -> list[Pod] | None:
        pods = await cluster.pods()
        return pods if len(pods) == count else None

    return await wait_for(made, timeout=60, what=f"{count} pods created")


async def _condition(cluster: Cluster, name: str, status: str) -> None:
    async def said() -> bool:
        cond = await cluster.condition(name, "GangScheduling")
        return cond is not None and cond.status == status

    await wait_for(said, timeout=30, what=f"{name} GangScheduling={status}")


async def _bound(cluster: Cluster) -> int:
    return sum(1 for p in await cluster.pods() if p.spec.node_name)


async def test_workload_backend_binds_a_gang_whole_even_in_order(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Any
) -> None:
    gang_nodes(3)  # room for 3 of the gang's 4 pods
    body = slot_cliqueset(
        "gang",
        1,
        (("leader", 1), ("worker", 3)),
        startupType="InOrder",
        gangScheduling={"backend": "Workload"},
    )
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await _pods(cluster, 4)  # InOrder does not hold the workers back
        cqs = await cluster.cliqueset("gang")
        api = await gangs.detect(cluster.client)
        groups = await gangs.check_gang_refs(
            cluster.client, api, cqs, await cluster.list(PODS, dict)
        )
        assert list(groups) == [0]
        await _condition(cluster, "gang", "True")
        cond = await cluster.condition("gang", "GangScheduling")
        assert api.api_version in cond.message, cond.message

        deadline = time.monotonic() + QUIET_WINDOW
        while time.monotonic() < deadline:
            assert await _bound(cluster) == 0, "a pod bound without its whole gang"
            await asyncio.sleep(0.5)

        gang_nodes(1)
        started = time.monotonic()

        async def all_bound() -> bool:
            return await _bound(cluster) == 4

        await wait_for(all_bound, timeout=30, what="the whole gang bound")
        print(f"gang bound {time.monotonic() - started:.1f}s after the 4th node")
        await cluster.wait_available("gang", timeout=60)


async def test_backend_none_binds_pod_by_pod(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Any
) -> None:
    gang_nodes(3)
    body = slot_cliqueset(
        "loose", 1, (("leader", 1), ("worker", 3)), gangScheduling={"backend": "None"}
    )
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await _pods(cluster, 4)
        assert not any(
            "workloadRef" in p["spec"] or "schedulingGroup" in p["spec"]
            for p in await cluster.list(PODS, dict)
        )

        async def three() -> bool:
            return await _bound(cluster) == 3

        await wait_for(three, timeout=30, what="3 pods bound")
        await asyncio.sleep(2)
        pods = await cluster.pods()
        assert sorted(bool(p.spec.node_name) for p in pods) == [False, True, True, True]
        await _condition(cluster, "loose", "False")
        assert not any(p.metadata.labels.get(labels.LABEL_CLIQUESET) != "loose" for p in pods)


def _ready_since(pod: dict[str, Any]) -> str:
    """When a pod (a raw object) turned Ready, "" if it is not."""
    for cond in pod.get("status", {}).get("conditions", []):
        if cond["type"] == "Ready" and cond["status"] == "True":
            return str(cond.get("lastTransitionTime", ""))
    return ""


async def test_in_order_gang_is_placed_whole_then_starts_in_order(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Any
) -> None:
    """InOrder + Workload: every pod exists and binds at once; the workers wait at their
    start gates (KWOK keeps a pod with a closed gate from starting, as a kubelet whose init
    container waits) until the leader is Ready, then start. The leader is slow to start
    (the dev cluster's start delay, `kwok.START_DELAY_ANNOTATION`), as a leader that pulls
    a large image would be."""
    gang_nodes(4)
    body = slot_cliqueset(
        "ordered",
        1,
        (("leader", 1), ("worker", 3)),
        startupType="InOrder",
        gangScheduling={"backend": "Workload"},
    )
    leader_meta = body["spec"]["template"]["cliques"][0]["template"]["metadata"]
    leader_meta["annotations"] = {kwok.START_DELAY_ANNOTATION: f"{LEADER_DELAY:g}s"}
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await _pods(cluster, 4)
        for pod in await cluster.list(PODS, dict):
            if pod["metadata"]["labels"][labels.LABEL_CLIQUE] == "worker":
                assert pod["spec"]["initContainers"][0]["name"] == start_gate.CONTAINER
            else:
                assert "initContainers" not in pod["spec"]

        async def all_bound() -> bool:
            return await _bound(cluster) == 4

        await wait_for(all_bound, timeout=30, what="the whole gang bound")

        # The leader is not Ready: over a window, no worker starts and no gate opens.
        deadline = time.monotonic() + QUIET_WINDOW / 2
        while time.monotonic() < deadline:
            for pod in await cluster.list(PODS, dict):
                name = pod["metadata"]["name"]
                assert not _ready_since(pod), f"{name} started before the leader"
                if pod["metadata"]["labels"][labels.LABEL_CLIQUE] != "worker":
                    continue
                gate = pod["metadata"]["annotations"][labels.ANNOTATION_START_GATE]
                assert gate == start_gate.CLOSED, f"{name}: start gate {gate}"
            await asyncio.sleep(0.5)

        async def waiting() -> Condition | None:
            worker = next(c for c in await cluster.cliques() if c.spec.clique_name == "worker")
            assert worker.spec.start_gate
            status = worker.status
            return find_condition(status.conditions, "Started") if status is not None else None

        started = await wait_for(waiting, timeout=30, what="the workers' Started condition")
        assert started.status == "False", started
        assert "start gates open when ordered-0-leader is Ready" in started.message

        # The leader starts: the operator opens the workers' gates and they start after it.
        await cluster.wait_available("ordered", timeout=60 + LEADER_DELAY)
        pods = {p["metadata"]["name"]: p for p in await cluster.list(PODS, dict)}
        leader_ready = _ready_since(pods.pop("ordered-0-leader-0"))
        assert leader_ready
        for name, pod in pods.items():
            assert pod["metadata"]["annotations"][labels.ANNOTATION_START_GATE] == "open"
            assert _ready_since(pod) >= leader_ready, f"{name} started before the leader"


async def test_a_shrink_and_an_image_change_leave_no_pod_pending(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Any
) -> None:
    """A gang's PodGroup follows the gang: shrunk from 1 + 3 to 1 + 1 and given a new image
    in one edit, the gang's new pods bind (the group asks for 2, not 4) and it is Available;
    grown back to 1 + 3, the new workers bind with the others."""
    gang_nodes(4)
    body = slot_cliqueset(
        "resized", 1, (("leader", 1), ("worker", 3)), gangScheduling={"backend": "Workload"}
    )
    async with running_operator(kubeconfig, namespace):
        api = await gangs.detect(cluster.client)
        if not api.podgroups:
            pytest.skip(
                f"{api.api_version} Workloads cannot follow a resize (their pod groups are "
                "immutable): docs/gangs.md, Kubernetes versions"
            )
        await cluster.apply(body)
        await cluster.wait_available("resized", timeout=90)

        async def settled(count: int, image: str) -> list[dict[str, Any]] | None:
            pods = await cluster.list(PODS, dict)
            if len(pods) != count or any(p["metadata"].get("deletionTimestamp") for p in pods):
                return None
            if any(p["spec"]["containers"][0]["image"] != image for p in pods):
                return None
            return pods if all(p["spec"].get("nodeName") for p in pods) else None

        workers = body["spec"]["template"]["cliques"][1]
        workers["replicas"] = 1
        for clique in body["spec"]["template"]["cliques"]:
            clique["template"]["spec"]["containers"][0]["image"] = "busybox:1.37"
        await cluster.apply(body)
        pods = await wait_for(
            lambda: settled(2, "busybox:1.37"), timeout=90, what="2 new pods, all bound"
        )
        cqs = await cluster.wait_available("resized", timeout=90)
        await gangs.check_gang_refs(cluster.client, api, cqs, pods)  # minCount 2

        workers["replicas"] = 3
        await cluster.apply(body)
        pods = await wait_for(
            lambda: settled(4, "busybox:1.37"), timeout=90, what="4 pods, all bound"
        )
        cqs = await cluster.wait_available("resized", timeout=90)
        # grown in place: minCount 4 on 1.37; on 1.36 the gang keeps its group for 2
        await gangs.check_gang_refs(cluster.client, api, cqs, pods, made_whole=False)
