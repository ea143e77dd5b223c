"""The operator against the real local control plane: gangs, identity, scaling, healing,
startup order, invalid specs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from cliques import _core
from cliques.api import labels
from cliques.kube.resources import CLIQUESETS, EVENTS, PODS, SERVICES
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster


async def test_gang_objects_have_identity_and_cliqueset_becomes_available(
    cluster: Cluster, crds: str
) -> None:
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(cliqueset(replicas=2, leader=1, workers=2))
        cqs = await cluster.wait_available("llama")
    assert cqs.status is not None
    assert (cqs.status.replicas, cqs.status.ready_replicas, cqs.status.available_replicas) == (
        2,
        2,
        2,
    )
    assert cqs.status.template_hash and cqs.status.selector == "cliques.dev/cliqueset=llama"

    cliques = {c.metadata.name for c in await cluster.cliques()}
    assert cliques == {"llama-0-leader", "llama-0-worker", "llama-1-leader", "llama-1-worker"}
    pods = {p.metadata.name: p for p in await cluster.pods()}
    assert set(pods) == {
        "llama-0-leader-0",
        "llama-0-worker-0",
        "llama-0-worker-1",
        "llama-1-leader-0",
        "llama-1-worker-0",
        "llama-1-worker-1",
    }
    raw = await cluster.client.request(
        "get", PODS, namespace=cluster.namespace, name="llama-1-worker-1"
    )
    full: dict[str, Any] = json.loads(raw)
    lab = full["metadata"]["labels"]
    assert lab[labels.LABEL_CLIQUESET] == "llama"
    assert lab[labels.LABEL_GANG_INDEX] == "1"
    assert lab[labels.LABEL_CLIQUE] == "worker"
    assert lab[labels.LABEL_POD_INDEX] == "1"
    assert lab[labels.LABEL_TEMPLATE_HASH]
    assert lab[labels.LABEL_BUCKET] == str(_core.bucket_of(cluster.namespace, "llama"))
    # One headless Service for the set (the default layout): the hostname carries the gang.
    assert full["spec"]["hostname"] == "worker-1-1"
    assert full["spec"]["subdomain"] == "llama"
    env = {e["name"]: e["value"] for e in full["spec"]["containers"][0]["env"]}
    assert env["CLIQUES_POD_INDEX"] == "1"
    assert env["CLIQUES_CLIQUE_SIZE"] == "2"
    assert env["CLIQUES_LEADER_ADDRESS"] == f"leader-1-0.llama.{cluster.namespace}.svc"
    owner = full["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "Clique" and owner["name"] == "llama-1-worker" and owner["controller"]
    svcs = json.loads(await cluster.client.list_page(SERVICES, cluster.namespace))
    assert [s["metadata"]["name"] for s in svcs["items"]] == ["llama"]


async def test_scale_gangs_and_cliques_and_heal_a_lost_pod(cluster: Cluster, crds: str) -> None:
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(cliqueset(replicas=2, workers=2))
        await cluster.wait_available("llama")

        # scale subresource, as `kubectl scale` and an HPA do
        await cluster.client.patch(
            CLIQUESETS, cluster.namespace, "llama", {"spec": {"replicas": 3}}, dict, sub="scale"
        )
        await cluster.wait_available("llama")
        names = {p.metadata.name for p in await cluster.pods()}
        assert {"llama-2-leader-0", "llama-2-worker-0", "llama-2-worker-1"} <= names

        # a clique's replicas: resize in place, highest index removed
        await cluster.apply(cliqueset(replicas=1, workers=4))

        async def resized() -> bool:
            names = sorted(
                p.metadata.name
                for p in await cluster.pods()
                if p.metadata.deletion_timestamp is None
            )
            return names == ["llama-0-leader-0"] + [f"llama-0-worker-{i}" for i in range(4)]

        await wait_for(resized, timeout=60, what="1 gang of 1 leader + 4 workers")
        await cluster.wait_available("llama")

        # a lost pod comes back at its own index, as a new pod
        pods = {p.metadata.name: p for p in await cluster.pods()}
        old_uid = pods["llama-0-worker-2"].metadata.uid
        await cluster.client.delete(PODS, cluster.namespace, "llama-0-worker-2")

        async def healed() -> bool:
            now = {p.metadata.name: p for p in await cluster.pods()}
            p = now.get("llama-0-worker-2")
            return p is not None and p.metadata.uid != old_uid and p.is_ready

        await wait_for(healed, timeout=60, what="llama-0-worker-2 recreated and Ready")


async def test_in_order_startup_creates_workers_after_leader_is_ready(
    cluster: Cluster, crds: str
) -> None:
    # Pod by pod (backend None): with gang scheduling every pod of a gang is made at once
    # and its order is kept by start gates (tests/e2e/test_gang_scheduling.py).
    body = cliqueset(replicas=1, startup="InOrder", workers=3)
    body["spec"]["gangScheduling"] = {"backend": "None"}
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(body)
        await cluster.wait_available("llama")
    raw = await cluster.client.request("list", PODS, namespace=cluster.namespace)
    pods = {p["metadata"]["name"]: p for p in json.loads(raw)["items"]}
    leader_ready = next(
        c["lastTransitionTime"]
        for c in pods["llama-0-leader-0"]["status"]["conditions"]
        if c["type"] == "Ready"
    )
    for i in range(3):
        created = pods[f"llama-0-worker-{i}"]["metadata"]["creationTimestamp"]
        assert created >= leader_ready, f"worker {i} created {created}, leader Ready {leader_ready}"


async def test_startsafter_cycle_is_reported_not_crashed(cluster: Cluster, crds: str) -> None:
    body = cliqueset(replicas=1, startup="Explicit")
    body["spec"]["template"]["cliques"][0]["startsAfter"] = ["worker"]
    body["spec"]["template"]["cliques"][1]["startsAfter"] = ["leader"]
    async with running_operator(crds, cluster.namespace) as manager:
        await cluster.apply(body)

        async def invalid() -> Any:
            c = await cluster.condition("llama", "Degraded")
            return c if c is not None and c.reason == "InvalidSpec" else None

        cond = await wait_for(invalid, timeout=30, what="Degraded/InvalidSpec")
        assert "leader -> worker -> leader" in cond.message
        assert await cluster.cliques() == []

        async def event() -> bool:
            raw = await cluster.client.list_page(EVENTS, cluster.namespace)
            return b"InvalidSpec" in raw

        await wait_for(event, timeout=30, what="an InvalidSpec Event")
        # the operator is still alive and serves other CliqueSets
        await cluster.apply(cliqueset(name="fine", replicas=1))
        await cluster.wait_available("fine")
        assert manager.ready()


async def test_invalid_spec_refused_by_api_server(cluster: Cluster) -> None:
    body = cliqueset(replicas=1)
    body["spec"]["template"]["cliques"][1]["minAvailable"] = 5  # > replicas 2
    with pytest.raises(ApiException) as info:  # the outside client's (kubernetes-asyncio)
        await cluster.apply(body)
    assert info.value.status == 422 and "minAvailable" in str(info.value.body)
