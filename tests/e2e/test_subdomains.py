"""The DNS layout of a CliqueSet's gangs against the real control plane.

- A new CliqueSet gets one headless Service named after it; every pod's hostname carries
  its gang, the controller-manager publishes every pod under that hostname in the Service's
  EndpointSlices (what cluster DNS serves), and CLIQUES_LEADER_ADDRESS is the DNS name of
  pod 0 of the gang's first clique.
- A CliqueSet made before `subdomainPolicy` existed keeps its per-gang Services and pods
  when the operator is upgraded, scales up per gang, and moves to the shared Service only
  gang by gang, as gangs are created: never a pod replaced for it. Its "old" state is made
  by running the operator with `UniquePerGang` and then removing what older releases never
  wrote (the field from the CliqueSet, the policy annotation from its Cliques); the API
  server then serves it exactly as it serves a CliqueSet stored before the field existed,
  because the CRD gives the field no default.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cliques.api import labels
from cliques.kube.resources import CLIQUES, CLIQUESETS, PODS, Resource
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

SERVICES = Resource("", "v1", "services", "Service")
SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")


async def _items(cluster: Cluster, resource: Resource, selector: str = "") -> list[Any]:
    raw = await cluster.client.list_page(
        resource, cluster.namespace, label_selector=selector, limit=1000
    )
    items: list[Any] = json.loads(raw)["items"]
    return items


async def _services(cluster: Cluster) -> dict[str, str]:
    """Service name -> uid."""
    return {
        s["metadata"]["name"]: s["metadata"]["uid"]
        for s in await _items(cluster, SERVICES)
        if "deletionTimestamp" not in s["metadata"]
    }


async def _pods(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in await _items(cluster, PODS)
        if "deletionTimestamp" not in p["metadata"]
    }


def _uids(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in pods.items()}


def _env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0]["env"]}


async def test_a_new_set_has_one_service_and_hostnames_that_carry_the_gang(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    async with running_operator(crds, ns):
        await cluster.apply(cliqueset(replicas=2, leader=1, workers=2))
        await cluster.wait_available("llama")
        cqs = await cluster.client.get(CLIQUESETS, ns, "llama", dict)
        # The API server defaulted nothing: the layout is the operator's choice for a new set.
        assert "subdomainPolicy" not in cqs["spec"]

        (svc,) = await _items(cluster, SERVICES)
        assert svc["metadata"]["name"] == "llama"
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["spec"]["publishNotReadyAddresses"] is True
        assert svc["spec"]["selector"] == {labels.LABEL_CLIQUESET: "llama"}
        assert [r["kind"] for r in svc["metadata"]["ownerReferences"]] == ["CliqueSet"]

        pods = await _pods(cluster)
        assert len(pods) == 6
        hosts = {}
        for name, pod in pods.items():
            lab = pod["metadata"]["labels"]
            gang, role = lab[labels.LABEL_GANG_INDEX], lab[labels.LABEL_CLIQUE]
            assert pod["spec"]["subdomain"] == "llama", name
            assert pod["spec"]["hostname"] == f"{role}-{gang}-{lab[labels.LABEL_POD_INDEX]}"
            hosts[name] = pod["spec"]["hostname"]
            leader = pods[f"llama-{gang}-leader-0"]["spec"]
            assert _env(pod)[labels.ENV_LEADER_ADDRESS] == (
                f"{leader['hostname']}.{leader['subdomain']}.{ns}.svc"
            )
        assert len(set(hosts.values())) == 6

        # Cluster DNS answers <hostname>.llama.<ns>.svc from the Service's EndpointSlices:
        # the controller-manager publishes every pod there under its hostname.
        async def published() -> set[str] | None:
            slices = await _items(cluster, SLICES, "kubernetes.io/service-name=llama")
            names = {e.get("hostname", "") for s in slices for e in s.get("endpoints") or []}
            return names if names == set(hosts.values()) else None

        await wait_for(published, timeout=60, what="every pod's hostname in llama's slices")


async def test_a_set_made_before_the_field_keeps_its_layout_and_its_pods(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    per_gang = cliqueset(replicas=2, leader=1, workers=1)
    per_gang["spec"]["subdomainPolicy"] = "UniquePerGang"
    async with running_operator(crds, ns):
        await cluster.apply(per_gang)
        await cluster.wait_available("llama")

    # What an older release left behind: no subdomainPolicy, no policy annotation.
    await cluster.apply(cliqueset(replicas=2, leader=1, workers=1))
    old = await cluster.client.get(CLIQUESETS, ns, "llama", dict)
    assert "subdomainPolicy" not in old["spec"]
    for c in await cluster.cliques():
        patch = {"metadata": {"annotations": {labels.ANNOTATION_SUBDOMAIN_POLICY: None}}}
        await cluster.client.patch(CLIQUES, ns, c.metadata.name, patch, dict)
    pods = await _pods(cluster)
    assert pods["llama-1-worker-0"]["spec"]["hostname"] == "worker-0"
    assert pods["llama-1-worker-0"]["spec"]["subdomain"] == "llama-1"
    before_pods, before_svcs = _uids(pods), await _services(cluster)
    assert set(before_svcs) == {"llama-0", "llama-1"}

    async with running_operator(crds, ns):  # the upgraded operator
        await cluster.wait_available("llama")
        assert _uids(await _pods(cluster)) == before_pods
        assert await _services(cluster) == before_svcs

        # Scaled up, it stays one Service per gang.
        await cluster.apply(cliqueset(replicas=3, leader=1, workers=1))
        await cluster.wait_available("llama")
        pods = await _pods(cluster)
        assert pods["llama-2-leader-0"]["spec"]["hostname"] == "leader-0"
        assert pods["llama-2-leader-0"]["spec"]["subdomain"] == "llama-2"
        assert _env(pods["llama-2-worker-0"])[labels.ENV_LEADER_ADDRESS] == (
            f"leader-0.llama-2.{ns}.svc"
        )
        assert {n: u for n, u in _uids(pods).items() if n in before_pods} == before_pods
        assert set(await _services(cluster)) == {"llama-0", "llama-1", "llama-2"}
        kept = _uids(pods)

        # Asked for the shared Service: the running gangs keep theirs, a new gang is shared.
        shared = cliqueset(replicas=4, leader=1, workers=1)
        shared["spec"]["subdomainPolicy"] = "Shared"
        await cluster.apply(shared)
        await cluster.wait_available("llama")
        pods = await _pods(cluster)
        assert {n: u for n, u in _uids(pods).items() if n in kept} == kept
        assert pods["llama-3-worker-0"]["spec"]["hostname"] == "worker-3-0"
        assert pods["llama-3-worker-0"]["spec"]["subdomain"] == "llama"
        assert set(await _services(cluster)) == {"llama", "llama-0", "llama-1", "llama-2"}

        # A gang moves when it is made again: delete its Cliques, and its Service goes.
        for role in ("leader", "worker"):
            await cluster.client.delete(CLIQUES, ns, f"llama-0-{role}")

        async def moved() -> dict[str, dict[str, Any]] | None:
            now = await _pods(cluster)
            leader = now.get("llama-0-leader-0")
            if leader is None or leader["spec"].get("subdomain") != "llama":
                return None
            return now if "llama-0" not in await _services(cluster) else None

        pods = await wait_for(moved, timeout=60, what="gang 0 re-made under the shared Service")
        assert pods["llama-0-leader-0"]["spec"]["hostname"] == "leader-0-0"
        await cluster.wait_available("llama")
        assert set(await _services(cluster)) == {"llama", "llama-1", "llama-2"}


async def test_the_service_carries_the_templates_ports_and_gets_them_back(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    body = cliqueset(replicas=2, leader=1, workers=1)
    http = {"name": "http", "containerPort": 8000}
    metrics = {"name": "metrics", "containerPort": 9000}
    for role, ports in zip(
        body["spec"]["template"]["cliques"], ([http], [http, metrics]), strict=True
    ):
        role["template"]["spec"]["containers"][0]["ports"] = ports
    want = [
        {"name": "http", "port": 8000, "protocol": "TCP", "targetPort": 8000},
        {"name": "metrics", "port": 9000, "protocol": "TCP", "targetPort": 9000},
    ]

    async def ports_are(expected: list[dict[str, Any]]) -> bool | None:
        (svc,) = await _items(cluster, SERVICES)
        return True if svc["spec"].get("ports", []) == expected else None

    async def sliced() -> list[Any] | None:
        # Every pod of both roles in slices that carry both ports (targets are numbers, so
        # the leader, which declares only http, resolves metrics too).
        slices = await _items(cluster, SLICES, "kubernetes.io/service-name=llama")
        found = [e for s in slices if s.get("ports") for e in s.get("endpoints") or []]
        named = {p["name"] for s in slices for p in s.get("ports") or []}
        return slices if len(found) == 4 and named == {"http", "metrics"} else None

    async with running_operator(crds, ns):
        await cluster.apply(body)
        await cluster.wait_available("llama")
        assert await ports_are(want)
        await wait_for(sliced, timeout=60, what="llama's slices with both ports")
        uid = (await _services(cluster))["llama"]

    # What an older release left: the Service without ports.
    await cluster.client.patch(SERVICES, ns, "llama", {"spec": {"ports": None}}, dict)
    assert await ports_are([])

    async with running_operator(crds, ns):  # the upgraded operator puts them back
        await wait_for(lambda: ports_are(want), timeout=60, what="llama's ports restored")
        assert (await _services(cluster))["llama"] == uid

        # A template that no longer declares metrics: the Service follows.
        body["spec"]["template"]["cliques"][1]["template"]["spec"]["containers"][0]["ports"] = [
            http
        ]
        await cluster.apply(body)
        await wait_for(lambda: ports_are(want[:1]), timeout=60, what="metrics removed")
        await cluster.wait_available("llama")
