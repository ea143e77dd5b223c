"""`podReadiness: Gang` on the real local control plane (KWOK honours readiness gates as a
kubelet does, docs/devcluster.md): with one gang a pod short, a user's ClusterIP Service
over every pod of the set has ready endpoints only for the whole gang's pods, and the
short gang's running pods are not Ready while their containers are; once room appears every
pod is Ready within a minute; an `InOrder` start does not deadlock on the gate; and a gang
whose worker is slow to start (the dev cluster's start delay) is not Ready until it is.

Room is a node of the test's own (`gang_nodes`, an extended resource no other node has):
three slots for the four pods of two gangs of a leader and a worker, pod by pod
(`gangScheduling.backend: None`, so the short gang's other pod runs); which gang the
scheduler leaves short is its choice, and the test reads it from the pods."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.pod import Pod
from tests.support.gangnodes import gang_nodes, own_slot, slot_cliqueset
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for
from tests.support.kubectl import Kubectl

__all__ = ["gang_nodes"]

pytestmark = pytest.mark.cluster

NAME = "ready"
SERVICE = "ready-http"
GATE = labels.CONDITION_GANG_READY


def body(resource: str, startup: str = "AnyOrder") -> dict[str, Any]:
    return slot_cliqueset(
        NAME,
        2,
        (("leader", 1), ("worker", 1)),
        resource=resource,
        podReadiness="Gang",
        startupType=startup,
        gangScheduling={"backend": "None"},
    )


def service(namespace: str) -> str:
    """The user's own ClusterIP Service over every pod of the set (its `app` label)."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": namespace},
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": NAME},
                "ports": [{"name": "http", "port": 80, "targetPort": 8000}],
            },
        }
    )


def gang_of(pod: Pod) -> str:
    return pod.metadata.labels.get(labels.LABEL_GANG_INDEX, "")


async def live_pods(cluster: Cluster) -> list[Pod]:
    return [p for p in await cluster.pods() if p.metadata.deletion_timestamp is None]


async def ready_endpoints(k: Kubectl) -> set[str]:
    """The pods the Service's EndpointSlices list as ready."""
    slices = await asyncio.to_thread(
        k.json,
        "get",
        "endpointslices",
        "-l",
        f"kubernetes.io/service-name={SERVICE}",
    )
    return {
        e["targetRef"]["name"]
        for s in slices["items"]
        for e in s.get("endpoints") or ()
        if (e.get("conditions") or {}).get("ready") and e.get("targetRef")
    }


async def short_gang(cluster: Cluster) -> tuple[str, list[Pod], list[Pod]]:
    """Once the scheduler has placed three pods and left one Pending: the short gang's
    index, the whole gang's pods and the short gang's running pods."""

    async def placed() -> tuple[str, list[Pod], list[Pod]] | None:
        pods = await live_pods(cluster)
        pending = [p for p in pods if p.is_unschedulable]
        running = [p for p in pods if p.containers_ready]
        if len(pods) != 4 or len(pending) != 1 or len(running) != 3:
            return None
        short = gang_of(pending[0])
        whole = [p for p in running if gang_of(p) != short]
        return short, whole, [p for p in running if gang_of(p) == short]

    return await wait_for(placed, timeout=90, what="three pods running, one Pending")


async def hold(check: Callable[[], Any], seconds: float) -> None:
    """`check` (async, returns a failure message or "") holds for `seconds`, sampled."""
    deadline = time.monotonic() + seconds
    while True:
        failure = await check()
        assert not failure, failure
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(0.3)


async def gang_ready_then_room(cluster: Cluster, crds: str, gang_nodes: Any, startup: str) -> None:
    resource = own_slot()
    gang_nodes(3, resource=resource)
    k = Kubectl(crds, cluster.namespace)
    await asyncio.to_thread(k.ok, "apply", "-f", "-", stdin=service(cluster.namespace))
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(body(resource, startup))
        short, whole, stuck = await short_gang(cluster)
        whole_names = {p.metadata.name for p in whole}
        assert len(whole) == 2 and len(stuck) == 1

        async def whole_gang_serves() -> bool:
            pods = {p.metadata.name: p for p in await live_pods(cluster)}
            ready = all(pods[n].is_ready for n in whole_names if n in pods)
            return ready and await ready_endpoints(k) == whole_names

        await wait_for(whole_gang_serves, timeout=60, what="the whole gang Ready and served")

        async def only_the_whole_gang() -> str:
            pods = await live_pods(cluster)
            for p in pods:
                if gang_of(p) == short and p.containers_ready and p.is_ready:
                    return f"{p.metadata.name} of short gang {short} is Ready"
                if gang_of(p) == short and p.gang_ready == "True":
                    return f"{p.metadata.name} of short gang {short} has {GATE} True"
            running = [p for p in pods if gang_of(p) == short and p.containers_ready]
            if not running:
                return f"the short gang {short}'s running pod stopped running"
            served = await ready_endpoints(k)
            if served != whole_names:
                return f"ready endpoints {sorted(served)}, not the whole gang {whole_names}"
            return ""

        # the short gang's running pod: containers ready, not Ready, and not served
        await hold(only_the_whole_gang, 5.0)

        # room appears: every pod is Ready within a minute, and served
        gang_nodes(1, resource=resource)
        started = time.monotonic()

        async def all_ready() -> bool:
            pods = await live_pods(cluster)
            return len(pods) == 4 and all(p.is_ready for p in pods)

        await wait_for(all_ready, timeout=60, what="every pod Ready")
        took = time.monotonic() - started
        names = {p.metadata.name for p in await live_pods(cluster)}

        async def all_served() -> bool:
            return await ready_endpoints(k) == names

        await wait_for(all_served, timeout=30, what="every pod a ready endpoint")
        cqs = await cluster.wait_available(NAME, timeout=60)
        assert cqs.status is not None and cqs.status.ready_replicas == 2
    assert took < 60


async def test_only_whole_gangs_are_ready_and_served(
    cluster: Cluster, crds: str, gang_nodes: Any
) -> None:
    await gang_ready_then_room(cluster, crds, gang_nodes, "AnyOrder")


async def test_in_order_start_does_not_deadlock_on_the_gate(
    cluster: Cluster, crds: str, gang_nodes: Any
) -> None:
    """InOrder: each worker starts once its leader's containers are ready, though the
    leader is not Ready (its gang is not whole until the worker is): the whole gang comes
    up, and the short one once room appears."""
    await gang_ready_then_room(cluster, crds, gang_nodes, "InOrder")


async def test_a_slow_worker_keeps_its_gang_not_ready_until_it_is_ready(
    cluster: Cluster, crds: str
) -> None:
    """A worker that takes 8 s to start (the dev cluster's start delay): its leader's
    containers are ready meanwhile, and the leader is not Ready until the worker is."""
    from cliques_lab.devcluster import kwok

    body = cliqueset(name=NAME, replicas=1, workers=1)
    body["spec"]["podReadiness"] = "Gang"
    worker = body["spec"]["template"]["cliques"][1]["template"]
    worker["metadata"]["annotations"] = {kwok.START_DELAY_ANNOTATION: "8s"}
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(body)

        async def leader_waits() -> Pod | None:
            for p in await live_pods(cluster):
                if p.metadata.name == f"{NAME}-0-leader-0" and p.containers_ready:
                    return p
            return None

        await wait_for(leader_waits, timeout=60, what="the leader's containers ready")

        async def gang_not_ready() -> str:
            pods = await live_pods(cluster)
            slow = [p for p in pods if p.metadata.labels.get(labels.LABEL_CLIQUE) == "worker"]
            if slow and slow[0].containers_ready:
                return ""  # the worker has started: the hold is over
            ready = [p.metadata.name for p in pods if p.is_ready or p.gang_ready == "True"]
            return f"{ready} Ready while the worker starts" if ready else ""

        await hold(gang_not_ready, 3.0)

        async def all_ready() -> bool:
            pods = await live_pods(cluster)
            return len(pods) == 2 and all(p.is_ready for p in pods)

        await wait_for(all_ready, timeout=60, what="the gang Ready once its worker is")
        await cluster.wait_available(NAME, timeout=30)
