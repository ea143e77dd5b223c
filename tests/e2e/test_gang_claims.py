"""DRA claims per gang (`spec.resourceClaims`) with the operator, the real scheduler's
allocator and a fake driver (`tests.support.dra`: ResourceSlices for the test's KWOK nodes
and `allNodes` devices, no kubelet plugin): each gang gets its own allocated device shared
by exactly its pods, each worker a node-local device of its own; a gang for which no device
is left binds no pod and the set says why; a claim of a device class that does not exist
is named in the set's condition; deleting the set removes every claim.

On a server that keeps a PodGroup's `resourceClaims` (Kubernetes 1.37 with
DRAWorkloadResourceClaims) a gang's claim is its PodGroup's, reserved for the group;
elsewhere the operator makes a ResourceClaim per gang, reserved for each of its pods."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from cliques.api import labels
from cliques.kube.client import KubeClient
from cliques.kube.errors import NotFound
from cliques.kube.resources import (
    CLIQUESETS,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
)
from cliques_lab.devcluster import cluster as devcluster
from tests.support import dra, gangs
from tests.support.cluster_fixtures import KubeCluster
from tests.support.dra import fake_dra
from tests.support.gangnodes import gang_nodes, own_slot, slot_cliqueset
from tests.support.harness import Cluster, running_operator, wait_for
from tests.support.kubectl import Kubectl

__all__ = ["fake_dra", "gang_nodes"]

T = TypeVar("T")


async def scores_mixed_claims(client: KubeClient) -> bool:
    """Whether the server's scheduler can place a pod with an allocated claim and one to
    allocate (a gang's shared claim and a pod's own). The 1.35 scheduler cannot: its
    DynamicResources Score fails with "number of allocations 1 is smaller than number of
    claims" whenever more than one node fits (fixed in 1.36), so the pod never binds."""
    version = json.loads(await client.get_path("/version"))
    return (int(version["major"]), int(version["minor"].rstrip("+"))) >= (1, 36)


def claimed_cliqueset(
    name: str,
    replicas: int,
    driver: dra.FakeDriver,
    slot: str,
    domain_class: str = "",
    backend: str = "Auto",
    request: str = "",
    gpus: bool = True,
) -> dict[str, Any]:
    """Gangs of a leader and two workers: a Gang-scope `domain` claim for every pod, a
    Pod-scope node-local `gpu` for each worker (`gpus`)."""
    body = slot_cliqueset(
        name,
        replicas,
        (("leader", 1), ("worker", 2)),
        resource=slot,
        gangScheduling={"backend": backend},
        resourceClaims=[
            {
                "name": "domain",
                "scope": "Gang",
                "template": {
                    "spec": driver.claim_spec(domain_class or dra.DOMAIN, request=request)
                },
            },
            {
                "name": "gpu",
                "scope": "Pod",
                "cliques": ["worker"],
                "template": {"spec": driver.claim_spec(dra.GPU)},
            },
        ][: 2 if gpus else 1],
    )
    for clique in body["spec"]["template"]["cliques"]:
        container = clique["template"]["spec"]["containers"][0]
        names = ["domain", "gpu"] if clique["name"] == "worker" and gpus else ["domain"]
        container["resources"]["claims"] = [{"name": n} for n in names]
    return body


@contextlib.contextmanager
def dumped_on_failure(kubeconfig: str, namespace: str) -> Iterator[None]:
    """Print what the namespace holds when the block fails (a wait that timed out)."""
    try:
        yield
    except AssertionError:
        k = Kubectl(kubeconfig, namespace)
        print(k.run("get", "cliquesets", "-o", "yaml").stdout[-6000:])
        for kind in ("cliques", "pods", "podgroups", "workloads", "resourceclaims", "events"):
            print(k.run("get", kind, "-o", "wide").stdout[-6000:])
        raise


async def set_pods(client: KubeClient, ns: str, name: str) -> list[dict[str, Any]]:
    raw = await client.list_page(PODS, ns, label_selector=f"{labels.LABEL_CLIQUESET}={name}")
    return [p for p in json.loads(raw)["items"] if not p["metadata"].get("deletionTimestamp")]


#: What the 1.37 scheduler writes on a pod it spins on (docs/gangs.md, "Which server gives
#: what"): every retry reuses its stale allocation of a gang's group claim that another pod
#: of the gang allocated meanwhile, and the gang never becomes whole by itself.
SPIN = "got allocated elsewhere in the meantime"


async def spinning(cluster: Cluster, ns: str, name: str) -> list[dict[str, Any]]:
    """The set's pods the scheduler spins on: PodScheduled False with `SPIN`."""
    return [
        p
        for p in await set_pods(cluster.client, ns, name)
        for c in (p.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
        if SPIN in c.get("message", "")
    ]


async def despite_the_spin(
    cluster: Cluster,
    ns: str,
    name: str,
    check: Callable[[], Awaitable[T | None]],
    *,
    timeout: float,
    what: str,
    patience: float = 20.0,
    dev_cluster: str | None = None,
) -> T:
    """Polls `check` until it returns something truthy, as `wait_for` does. When a pod of
    the set has been spun on by the scheduler for `patience` seconds (`SPIN`, a scheduler
    bug outside the operator's reach), the scheduler of `dev_cluster` is restarted, as an
    administrator would: the stale view is in its memory, and pods made again in place of
    the spinning ones (first the pod, then its whole gang, tried in earlier runs) spun at
    once again. Outside a dev cluster the gang's pods are deleted instead, the most a user
    can do. Patience is counted per pod (by uid). Each step is printed."""
    deadline = time.monotonic() + timeout
    seen: dict[str, float] = {}
    while True:
        got = await check()
        if got:
            return got
        now = time.monotonic()
        if now > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        spun = await spinning(cluster, ns, name)
        seen = {p["metadata"]["uid"]: seen.get(p["metadata"]["uid"], now) for p in spun}
        stuck = [p for p in spun if now - seen[p["metadata"]["uid"]] >= patience]
        if stuck:
            pod = stuck[0]
            spun_on = f"the scheduler spun on {pod['metadata']['name']} for {patience:.0f}s"
            if dev_cluster is not None:
                took = await asyncio.to_thread(
                    devcluster.restart_component, dev_cluster, "kube-scheduler"
                )
                print(f"{spun_on} (docs/gangs.md): restarted kube-scheduler in {took:.1f}s")
            else:
                gang = pod["metadata"]["labels"].get(labels.LABEL_GANG_INDEX)
                doomed = [
                    p["metadata"]["name"]
                    for p in await set_pods(cluster.client, ns, name)
                    if p["metadata"]["labels"].get(labels.LABEL_GANG_INDEX) == gang
                ]
                print(f"{spun_on} (docs/gangs.md): deleting {', '.join(doomed)}")
                for victim in doomed:
                    with contextlib.suppress(NotFound):  # gone on its own meanwhile
                        await cluster.client.delete(PODS, ns, victim)
            seen.clear()
        await asyncio.sleep(1.0)


@pytest.mark.parametrize("backend", ["Auto", "None"])
async def test_each_gang_gets_its_own_allocated_device_shared_by_its_pods(
    cluster: Cluster,
    kube_cluster: KubeCluster,
    kubeconfig: str,
    namespace: str,
    gang_nodes: Any,
    fake_dra: Any,
    backend: str,
) -> None:
    """`Auto`: through the gang's PodGroup where the server keeps its claims; `None` (no
    gang scheduling, so no PodGroup): a ResourceClaim per gang on every server."""
    slot = own_slot()
    nodes = gang_nodes(9, resource=slot)
    driver = fake_dra(nodes, gpus_per_node=1, domains=2)
    api = await gangs.detect(cluster.client, namespace)
    via_group = backend == "Auto" and api.podgroups and "workload-claims" in api.features
    print(f"gang claims {'through PodGroups' if via_group else 'per gang'}: {api.describe()}")
    gpus = await scores_mixed_claims(cluster.client)
    k = Kubectl(kubeconfig, namespace)
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(claimed_cliqueset("dom", 2, driver, slot, backend=backend, gpus=gpus))
        with dumped_on_failure(kubeconfig, namespace):
            await despite_the_spin(
                cluster,
                namespace,
                "dom",
                lambda: cluster.available("dom"),
                timeout=120,
                what="CliqueSet dom Available",
                dev_cluster=kube_cluster.name,
            )

        if backend == "Auto" and api.version == "v1alpha1":
            # 1.35 cannot gang-schedule pods that share a claim: pod by pod, and it says so
            cond = await cluster.condition("dom", "GangScheduling")
            assert (cond.status, cond.reason) == ("False", "SharedClaimsUnsupported"), cond
        pods = await set_pods(cluster.client, namespace, "dom")
        assert len(pods) == 6
        by_gang: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            by_gang.setdefault(pod["metadata"]["labels"][labels.LABEL_GANG_INDEX], []).append(pod)
        domains: dict[str, str] = {}
        for gang, members in sorted(by_gang.items()):
            used = {dra.pod_claims(p).get("domain") for p in members}
            assert len(used) == 1 and None not in used, (gang, used)
            domains[gang] = used.pop()  # type: ignore[assignment]
        assert len(set(domains.values())) == 2, domains
        devices = set()
        for gang, claim_name in domains.items():
            state = dra.claim_state(k.get("resourceclaim", claim_name))
            assert state.allocated and len(state.devices) == 1, state
            assert state.devices[0].pool == dra.DOMAIN_POOL and not state.node
            devices.add(state.devices[0].device)
            members = sorted(p["metadata"]["name"] for p in by_gang[gang])
            owner = k.get("resourceclaim", claim_name)["metadata"]["ownerReferences"][0]
            if via_group:  # the group's claim, made by the control plane from our template
                group = by_gang[gang][0]["spec"]["schedulingGroup"]["podGroupName"]
                assert state.reserved_names("podgroups") == [group], state
                assert (owner["kind"], owner["name"]) == ("PodGroup", group)
            else:  # the operator's claim for the gang
                assert sorted(state.reserved_names("pods")) == members, state
                assert (owner["kind"], owner["name"]) == ("CliqueSet", "dom")
                head, _, rest = claim_name.partition("-")  # dom-<name hash>-<gang>-domain-…
                assert head == "dom" and rest.split("-")[1:3] == [str(gang), "domain"], rest
        assert len(devices) == 2, "two gangs share a device"

        # Pod scope: each worker has a node-local device of its own, on its node.
        used_gpus = set()
        for pod in pods if gpus else ():
            if pod["metadata"]["labels"][labels.LABEL_CLIQUE] != "worker":
                assert "gpu" not in dra.pod_claims(pod)
                continue
            state = dra.claim_state(k.get("resourceclaim", dra.pod_claims(pod)["gpu"]))
            assert state.allocated and state.node == pod["spec"]["nodeName"], state
            assert state.reserved_names("pods") == [pod["metadata"]["name"]]
            used_gpus.add((state.node, state.devices[0].device))
        assert len(used_gpus) == (4 if gpus else 0)

        # A third gang finds no domain device left: none of its pods binds, the set says so.
        await cluster.apply(claimed_cliqueset("dom", 3, driver, slot, backend=backend, gpus=gpus))

        async def says_no_devices() -> Any:
            cond = await cluster.condition("dom", "ResourceClaims")
            ok = cond is not None and cond.reason == "DevicesUnavailable"
            return cond if ok and "gang(s) 2" in cond.message else None

        await wait_for(says_no_devices, timeout=90, what="the set saying gang 2 waits")
        third = [
            p
            for p in await set_pods(cluster.client, namespace, "dom")
            if p["metadata"]["labels"][labels.LABEL_GANG_INDEX] == "2"
        ]
        assert len(third) == 3 and not [p for p in third if p["spec"].get("nodeName")]
        for gang, claim_name in domains.items():  # the running gangs keep theirs
            assert dra.claim_state(k.get("resourceclaim", claim_name)).allocated, gang

        # Deleting the set removes every claim and template it led to.
        await cluster.client.delete(CLIQUESETS, namespace, "dom")

        async def all_gone() -> bool:
            for resource in (RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES):
                left = json.loads(await cluster.client.list_page(resource, namespace))["items"]
                if left:
                    return False
            return True

        await wait_for(all_gone, timeout=120, what="every claim of the set deleted")


async def test_a_claim_of_a_device_class_that_does_not_exist_is_named(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Any, fake_dra: Any
) -> None:
    slot = own_slot()
    nodes = gang_nodes(3, resource=slot)
    driver = fake_dra(nodes, gpus_per_node=1, domains=1)
    missing = f"{driver.tag}-no-such-class"
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(claimed_cliqueset("nodev", 1, driver, slot, domain_class=missing))

        async def names_the_claim() -> Any:
            cond = await cluster.condition("nodev", "ResourceClaims")
            if cond is None or cond.reason != "DeviceClassNotFound":
                return None
            return cond

        cond = await wait_for(names_the_claim, timeout=90, what="the set naming the claim")
        assert cond.status == "False"
        assert f"claim domain: device class {missing} does not exist" in cond.message
        assert "gang(s) 0" in cond.message
        pods = await set_pods(cluster.client, namespace, "nodev")
        assert pods and not [p for p in pods if p["spec"].get("nodeName")]
        available = await cluster.condition("nodev", "Available")
        assert available is not None and available.status == "False"


async def test_a_claim_change_rolls_each_gang_whole_onto_a_new_claim(
    cluster: Cluster,
    kube_cluster: KubeCluster,
    kubeconfig: str,
    namespace: str,
    gang_nodes: Any,
    fake_dra: Any,
) -> None:
    """The new claims need the devices the old ones hold (two gangs, two devices): a gang
    rolls whole, its old claim goes with its pods (and its old PodGroup), and the next gang
    follows; no pod runs on the old claim at the end and the old claims are deleted."""
    slot = own_slot()
    nodes = gang_nodes(9, resource=slot)
    driver = fake_dra(nodes, gpus_per_node=1, domains=2)
    gpus = await scores_mixed_claims(cluster.client)
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(claimed_cliqueset("roll", 2, driver, slot, gpus=gpus))
        await despite_the_spin(
            cluster,
            namespace,
            "roll",
            lambda: cluster.available("roll"),
            timeout=120,
            what="CliqueSet roll Available",
            dev_cluster=kube_cluster.name,
        )
        old = {
            dra.pod_claims(p)["domain"] for p in await set_pods(cluster.client, namespace, "roll")
        }
        assert len(old) == 2

        await cluster.apply(claimed_cliqueset("roll", 2, driver, slot, request="fabric", gpus=gpus))

        async def rolled() -> set[str] | None:
            cqs = await cluster.cliqueset("roll")
            st = cqs.status
            if st is None or st.observed_generation != cqs.metadata.generation:
                return None
            if st.updated_replicas != 2 or st.available_replicas != 2:
                return None
            pods = await set_pods(cluster.client, namespace, "roll")
            used = {dra.pod_claims(p).get("domain", "") for p in pods}
            return used if len(pods) == 6 and len(used) == 2 and not used & old else None

        with dumped_on_failure(kubeconfig, namespace):
            new = await despite_the_spin(
                cluster,
                namespace,
                "roll",
                rolled,
                timeout=180,
                what="both gangs on new claims",
                dev_cluster=kube_cluster.name,
            )
        assert "" not in new

        async def old_gone() -> bool:
            raw = await cluster.client.list_page(RESOURCE_CLAIMS, namespace)
            names = {c["metadata"]["name"] for c in json.loads(raw)["items"]}
            return not names & old

        await wait_for(old_gone, timeout=90, what="the old claims deleted")
