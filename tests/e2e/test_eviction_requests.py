"""EvictionRequests answered by the operator, end to end, on a dev cluster of its own running
Kubernetes 1.38.0-beta.0 with the alpha gate `EvictionRequestAPI` (its
evictionrequest-controller and default responder in kube-controller-manager; 1.37 serves the
API without them): a set of 4 gangs (leader 1 + worker 1) outside PodGroups
(`gangScheduling.backend: None`), `maxUnavailable: 1`, the operator in this event loop.

- Every pod names the operator's responder (`cliques.dev/gang-mover`, priority 10000).
- An EvictionRequest for one pod: the responder is made active, the pod's gang is made again
  whole (every pod of it replaced, no other gang touched), the responder reports and
  completes, the request ends `TargetEvicted`, the default responder never evicts (made
  active, if at all, once the pod is being deleted, it sees it go), and whole gangs never
  fall below 3; the set says so (Events `MovingGang` and the `Moving`
  condition naming the request).
- Two requests for pods of two gangs whose pods take 20 s to start (the dev cluster's
  start model, docs/devcluster.md): one gang waits for the other to be whole again,
  its Eviction saying so with a heartbeat, and both complete.
- The second of those requests withdrawn while its gang waits: its Eviction is canceled,
  that gang is not moved (no pod of it replaced), and the default responder never runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.eviction import RESPONDER_PRIORITY
from cliques.controllers.features import drain
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUESETS, EVENTS, EVICTIONS, Resource
from tests.support.addon_cluster import addon_cluster, make_namespace
from tests.support.cluster_fixtures import KubeCluster, addon_build_error
from tests.support.harness import (
    Cluster,
    PodTracker,
    cliqueset,
    connected,
    install_crds,
    running_operator,
    wait_for,
)

KUBE_VERSION = "1.38.0-beta.0"
pytestmark = [pytest.mark.cluster, pytest.mark.kube_version(KUBE_VERSION)]
NAME = "cliques-eviction-requests"
SET = "llama"
RESPONDER = labels.LABEL_RESPONDER
DEFAULT = "imperative-eviction.k8s.io/evictor"
REQUESTS = Resource("lifecycle.k8s.io", "v1alpha1", "evictionrequests", "EvictionRequest")
#: The dev cluster's start model (docs/devcluster.md): seconds every container start takes.
LOAD = "start.stage.kwok.x-k8s.io/load-seconds"


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    failed = addon_build_error(request.config)
    if failed is not None:
        pytest.fail(f"Kubernetes v{KUBE_VERSION} could not be built:\n{failed}", pytrace=False)
    gates = ["--kube-version", KUBE_VERSION, "--feature-gates", "EvictionRequestAPI=true"]
    with addon_cluster(NAME, [], gates) as cluster:
        install_crds(str(cluster.kubeconfig))
        yield cluster


@pytest.fixture
def namespace(kube: KubeCluster) -> Iterator[str]:
    ns = make_namespace(kube, "t-cq-evict")
    try:
        yield ns
    finally:
        kube.kubectl_run("delete", "namespace", ns, "--wait=false", check=False)


@pytest.fixture
async def cluster(kube: KubeCluster, namespace: str) -> AsyncIterator[Cluster]:
    async with connected(str(kube.kubeconfig), namespace) as cluster:
        yield cluster


def gang_set(load_seconds: int) -> dict[str, Any]:
    body = cliqueset(SET, 4, leader=1, workers=1)
    body["spec"]["gangScheduling"] = {"backend": "None"}
    if load_seconds:
        for c in body["spec"]["template"]["cliques"]:
            c["template"]["metadata"]["annotations"] = {LOAD: str(load_seconds)}
    return body


def target_pod(gang: int) -> str:
    return labels.pod_name(labels.clique_name(SET, gang, "leader"), 0)


async def ask(cluster: Cluster, name: str, pod: str, uid: str) -> None:
    body = {
        "apiVersion": "lifecycle.k8s.io/v1alpha1",
        "kind": "EvictionRequest",
        "metadata": {"name": name},
        "spec": {
            "target": {"pod": {"name": pod, "uid": uid}},
            "requester": "example.com/e2e",
            "intent": "Eviction",
        },
    }
    await cluster.client.create(REQUESTS, cluster.namespace, body, dict)


async def eviction_of(cluster: Cluster, pod: str) -> dict[str, Any] | None:
    for ev in await cluster.list(EVICTIONS, dict):
        if ev["spec"]["target"]["pod"]["name"] == pod:
            return ev
    return None


def responder(ev: dict[str, Any], name: str = RESPONDER) -> tuple[str, dict[str, Any]]:
    """(its state, its status entry) in an Eviction."""
    st = ev.get("status", {})
    state = next((r["state"] for r in st.get("targetResponders", []) if r["name"] == name), "")
    entry = next((r for r in st.get("responders", []) if r["name"] == name), {})
    return state, entry


async def evicted(cluster: Cluster, name: str) -> bool:
    got = await cluster.client.get(REQUESTS, cluster.namespace, name, dict)
    return any(
        c["type"] == "TargetEvicted" and c["status"] == "True"
        for c in got.get("status", {}).get("conditions", [])
    )


async def move_on_request(cluster: Cluster, kubeconfig: str, gangs: list[int], load: int) -> None:
    timeout = 60 + 4 * load
    async with running_operator(kubeconfig, cluster.namespace, status_hold=0.0) as manager:
        assert manager.gang_api is not None and manager.gang_api.evictions
        await cluster.apply(gang_set(load))
        await cluster.wait_available(SET, timeout=timeout)
        pods = {p.metadata.name: p for p in await cluster.pods()}
        assert len(pods) == 8
        for p in pods.values():
            raw = await cluster.client.get_path(
                f"/api/v1/namespaces/{cluster.namespace}/pods/{p.metadata.name}"
            )
            assert b'"evictionResponders":[{"name":"cliques.dev/gang-mover","priority":10000}]' in (
                raw
            ), raw[:2000]
        assert RESPONDER_PRIORITY == 10000
        before = {name: p.metadata.uid for name, p in pods.items()}
        messages: set[str] = set()
        said: list[str] = []

        def on_set(kind: str, old: Any, new: CliqueSet) -> None:
            for c in new.status.conditions if new.status is not None else []:
                if c.type == drain.CONDITION_MOVING and c.status == "True":
                    said.append(c.message)

        sets = Informer(cluster.client, CLIQUESETS, CliqueSet, namespace=cluster.namespace)
        sets.add_handler(on_set)
        watching = asyncio.create_task(sets.run())
        async with PodTracker(cluster.client, cluster.namespace, pods_per_gang=2) as tracker:
            tracker.start_counting()
            assert tracker.whole() == 4
            samples: list[int] = []

            async def sample() -> None:
                while True:
                    samples.append(tracker.whole())
                    for gang in gangs:
                        ev = await eviction_of(cluster, target_pod(gang))
                        if ev is not None:
                            messages.add(responder(ev)[1].get("message", ""))
                    await asyncio.sleep(0.5)

            sampler = asyncio.create_task(sample())
            started = time.monotonic()
            try:
                for gang in gangs:
                    pod = target_pod(gang)
                    await ask(cluster, f"move-{pod}", pod, before[pod])
                for gang in gangs:
                    name = f"move-{target_pod(gang)}"
                    await wait_for(
                        lambda name=name: evicted(cluster, name),  # type: ignore[misc]
                        timeout=timeout * len(gangs),
                        what=f"{name} TargetEvicted",
                    )
                took = time.monotonic() - started

                async def whole_again() -> bool:
                    cqs = await cluster.cliqueset(SET)
                    st = cqs.status
                    return st is not None and st.available_replicas == 4 and tracker.whole() == 4

                await wait_for(whole_again, timeout=timeout * 2, what="4 whole gangs again")
            finally:
                sampler.cancel()
                watching.cancel()
                await asyncio.gather(sampler, watching, return_exceptions=True)
            print(f"requests for gangs {gangs} evicted in {took:.1f}s")
            print(f"responder said: {sorted(messages)}; Moving said: {said[:3]}")

        for gang in gangs:
            ev = await eviction_of(cluster, target_pod(gang))
            assert ev is not None
            state, entry = responder(ev)
            assert state == "Completed", ev["status"]
            assert entry.get("heartbeatTime") and entry.get("completionTime"), entry
            # The default responder never evicted: active at most once the pod was already
            # being deleted (the operator completes then), it only saw it go.
            default_state, default_entry = responder(ev, DEFAULT)
            print(f"default responder: {default_state} {default_entry.get('message', '')!r}")
            assert default_state in ("Inactive", "Completed"), ev["status"]
            assert "/eviction" not in default_entry.get("message", ""), default_entry
        after = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
        assert set(after) == set(before)
        for name, uid in before.items():
            gang = int(name.split("-")[1])
            if gang in gangs:
                assert after[name] != uid, f"{name} of gang {gang} was not made again"
            else:
                assert after[name] == uid, f"{name} of gang {gang} was touched"
        events = [e["message"] for e in await cluster.list(EVENTS, dict)]
        for gang in gangs:
            assert any(
                f"gang {gang} is asked to go by EvictionRequest move-{target_pod(gang)}" in m
                for m in events
            ), events
        assert said and any("asked to go by EvictionRequest" in m for m in said), said
        cond = await cluster.condition(SET, drain.CONDITION_MOVING)
        assert cond is not None and cond.status == "False", cond

    print(f"whole gangs sampled: min {min(samples)}, {len(samples)} samples")
    assert tracker.min_whole is not None and tracker.min_whole >= 3, tracker.min_whole
    assert min(samples) >= 3, samples
    if len(gangs) > 1:
        assert any("waits for maxUnavailable" in m for m in messages), messages
        assert any("wait for maxUnavailable" in m for m in said), said


async def test_an_eviction_request_moves_the_pods_gang_whole(
    cluster: Cluster, kube: KubeCluster
) -> None:
    await move_on_request(cluster, str(kube.kubeconfig), [1], load=0)


async def test_two_requests_with_slow_starts_move_one_gang_at_a_time(
    cluster: Cluster, kube: KubeCluster
) -> None:
    await move_on_request(cluster, str(kube.kubeconfig), [1, 2], load=20)


async def test_a_request_withdrawn_while_its_gang_waits_moves_nothing(
    cluster: Cluster, kube: KubeCluster
) -> None:
    load, timeout = 20, 140.0
    kubeconfig = str(kube.kubeconfig)
    async with running_operator(kubeconfig, cluster.namespace, status_hold=0.0):
        await cluster.apply(gang_set(load))
        await cluster.wait_available(SET, timeout=timeout)
        before = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
        first, second = target_pod(1), target_pod(2)
        async with PodTracker(cluster.client, cluster.namespace, pods_per_gang=2) as tracker:
            tracker.start_counting()
            await ask(cluster, f"move-{first}", first, before[first])

            async def answered() -> bool:
                ev = await eviction_of(cluster, first)
                return ev is not None and bool(responder(ev)[1].get("heartbeatTime"))

            # gang 1 moves first (its pods take 20 s to start again): gang 2 must wait
            await wait_for(answered, timeout=30, what="the operator answering for gang 1")
            await ask(cluster, f"move-{second}", second, before[second])

            async def waiting() -> bool:
                ev = await eviction_of(cluster, second)
                said = responder(ev)[1].get("message", "") if ev is not None else ""
                return "waits for maxUnavailable" in said

            await wait_for(waiting, timeout=30, what="gang 2 waiting for the budget")
            await cluster.client.patch(
                REQUESTS,
                cluster.namespace,
                f"move-{second}",
                {"spec": {"intent": "Withdrawn"}},
                dict,
            )

            async def canceled() -> dict[str, Any] | None:
                ev = await eviction_of(cluster, second)
                return ev if ev is not None and responder(ev)[0] == "Canceled" else None

            ev = await wait_for(canceled, timeout=30, what="gang 2's eviction canceled")
            assert responder(ev, DEFAULT)[0] == "Inactive", ev["status"]
            await wait_for(
                lambda: evicted(cluster, f"move-{first}"), timeout=timeout, what="gang 1 moved"
            )

            async def whole_again() -> bool:
                st = (await cluster.cliqueset(SET)).status
                return st is not None and st.available_replicas == 4 and tracker.whole() == 4

            await wait_for(whole_again, timeout=timeout, what="4 whole gangs again")
        after = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
        for name, uid in before.items():
            gang = int(name.split("-")[1])
            assert (after[name] != uid) == (gang == 1), f"{name} of gang {gang}"
    assert tracker.min_whole is not None and tracker.min_whole >= 3, tracker.min_whole
