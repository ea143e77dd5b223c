"""In-place updates with the operator on the dev cluster (`updateStrategy.inPlace`): an
image-only change keeps every pod (UID, node), one gang in flight at a time, and ends
Available with every gang updated and the containers restarted on the new image (KWOK's
`pod-image-*` stages play the kubelet); any other change, or `inPlace: Never`, replaces the
pods; an image that cannot be pulled leaves one gang in flight, named by its Clique and
the set, until the image is fixed. A CPU and memory change resizes the pods in place
through `pods/resize` (KWOK's `pod-resize-*` stages play the kubelet), and a resize the
node cannot take holds one gang, named, until it can. A resize the API server refuses is
named on its Clique and holds nothing else: a pod lost meanwhile is made again."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.pod import Pod
from cliques.controllers.features import inplace
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer
from cliques.kube.resources import PODS, Resource
from cliques_lab.devcluster import kwok
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

GANGS = 3
PODS_PER_GANG = 3


def with_strategy(body: dict[str, Any], in_place: str) -> dict[str, Any]:
    body["spec"]["updateStrategy"]["inPlace"] = in_place
    return body


def main_image(body: dict[str, Any], image: str) -> dict[str, Any]:
    for clique in body["spec"]["template"]["cliques"]:
        clique["template"]["spec"]["containers"][0]["image"] = image
    return body


def main_resources(body: dict[str, Any], cpu: str, memory: str) -> dict[str, Any]:
    for clique in body["spec"]["template"]["cliques"]:
        container = clique["template"]["spec"]["containers"][0]
        container["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
    return body


class InFlight:
    """Watches the pods and keeps the most gangs seen in flight at once: a gang is in flight
    while one of its pods is not Ready, or runs another image or CPU and memory than it asks
    for, or is resizing, or its pods ask for different images."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.informer: Any = Informer(client, PODS, Pod, namespace=namespace)
        self.most = 0
        self.informer.add_handler(self._on)

    def _on(self, kind: str, old: Any, new: Pod) -> None:
        by_gang: dict[str, list[Pod]] = {}
        for pod in self.informer.store.objects():
            if pod.metadata.deletion_timestamp is None:
                gang = pod.metadata.labels.get(labels.LABEL_GANG_INDEX, "")
                by_gang.setdefault(gang, []).append(pod)
        flying = 0
        for pods in by_gang.values():
            images = {tuple(c.image for c in p.spec.containers) for p in pods}
            ok = all(p.is_ready and _runs_its_images(p) and _resized(p) for p in pods)
            ok = ok and len(images) == 1
            flying += 0 if ok and len(pods) == PODS_PER_GANG else 1
        self.most = max(self.most, flying)

    async def __aenter__(self) -> InFlight:
        self._task = asyncio.create_task(self.informer.run())
        await wait_for(self._synced, timeout=30, what="pod watch synced")
        return self

    async def _synced(self) -> bool:
        return bool(self.informer.synced.is_set())

    async def __aexit__(self, *exc: object) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def _runs_its_images(pod: Pod) -> bool:
    statuses = {s.name: s for s in pod.status.container_statuses}
    return all(
        c.name in statuses and inplace.image_matches(c.image, statuses[c.name].image)
        for c in pod.spec.containers
    )


def _resized(pod: Pod) -> bool:
    """The pod's statuses report the CPU and memory its spec asks for (KWOK copies them as
    written) and no resize is pending or in progress."""
    statuses = {s.name: s for s in pod.status.container_statuses}
    for c in pod.spec.containers:
        s = statuses.get(c.name)
        if s is None or s.resources is None:
            return False
        for kind in ("requests", "limits"):
            want = {k: v for k, v in getattr(c.resources, kind).items() if k in ("cpu", "memory")}
            if getattr(s.resources, kind) != want:
                return False
    return not any(
        c.type in ("PodResizePending", "PodResizeInProgress") and c.status == "True"
        for c in pod.status.conditions
    )


async def pods_by_name(client: KubeClient, ns: str) -> dict[str, dict[str, Any]]:
    raw = await client.list_page(PODS, ns)
    return {
        p["metadata"]["name"]: p
        for p in json.loads(raw)["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


async def rolled(cluster: Cluster, name: str, image: str, timeout: float = 120) -> Any:
    """Wait until every gang is updated and Available and every pod runs `image`."""

    async def done() -> Any:
        cqs = await cluster.cliqueset(name)
        st = cqs.status
        if st is None or st.observed_generation != cqs.metadata.generation:
            return None
        available = any(c.type == "Available" and c.status == "True" for c in st.conditions)
        if not available or st.updated_replicas != GANGS:
            return None
        pods = await pods_by_name(cluster.client, cluster.namespace)
        images = {
            s["image"]
            for p in pods.values()
            for s in p["status"].get("containerStatuses", [])
            if s["name"] == "main"
        }
        return cqs if len(pods) == GANGS * PODS_PER_GANG and images == {image} else None

    return await wait_for(done, timeout=timeout, what=f"every gang of {name} on {image}")


async def test_an_image_change_keeps_every_pod_one_gang_at_a_time(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    body = with_strategy(cliqueset("inp", GANGS), "IfPossible")
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await cluster.wait_available("inp", timeout=90)
        before = await pods_by_name(cluster.client, namespace)
        async with InFlight(cluster.client, namespace) as flight:
            await cluster.apply(main_image(body, "busybox:1.37"))
            cqs = await rolled(cluster, "inp", "busybox:1.37")
        after = await pods_by_name(cluster.client, namespace)
        assert {n: p["metadata"]["uid"] for n, p in after.items()} == {
            n: p["metadata"]["uid"] for n, p in before.items()
        }
        assert {n: p["spec"]["nodeName"] for n, p in after.items()} == {
            n: p["spec"]["nodeName"] for n, p in before.items()
        }
        for pod in after.values():
            main = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "main")
            side = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "sidecar")
            assert main["restartCount"] == 1 and side["restartCount"] == 0, pod["status"]
        assert flight.most == 1, f"{flight.most} gangs in flight at once (maxUnavailable 1)"
        assert (cqs.status.updated_in_place, cqs.status.updated_by_replacement) == (GANGS, 0)


@pytest.mark.parametrize("in_place", ["IfPossible", "Never"])
async def test_other_changes_and_never_replace_the_pods(
    cluster: Cluster, kubeconfig: str, namespace: str, in_place: str
) -> None:
    """With IfPossible an env change (and an image change with it) replaces the pods, one
    gang at a time; with Never an image change alone does."""
    body = with_strategy(cliqueset("rep", GANGS), in_place)
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await cluster.wait_available("rep", timeout=90)
        before = await pods_by_name(cluster.client, namespace)
        changed = main_image(body, "busybox:1.37")
        if in_place == "IfPossible":
            for clique in changed["spec"]["template"]["cliques"]:
                clique["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
        async with InFlight(cluster.client, namespace) as flight:
            await cluster.apply(changed)
            cqs = await rolled(cluster, "rep", "busybox:1.37")
        after = await pods_by_name(cluster.client, namespace)
        assert after.keys() == before.keys()
        assert not {p["metadata"]["uid"] for p in after.values()} & {
            p["metadata"]["uid"] for p in before.values()
        }
        assert flight.most == 1
        assert (cqs.status.updated_in_place, cqs.status.updated_by_replacement) == (0, GANGS)


async def test_an_image_that_cannot_be_pulled_holds_one_gang_and_is_named(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    body = with_strategy(cliqueset("pull", GANGS), "IfPossible")
    bad = f"registry.example/{kwok.IMAGE_PULL_ERROR}:1"
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await cluster.wait_available("pull", timeout=90)
        before = await pods_by_name(cluster.client, namespace)
        async with InFlight(cluster.client, namespace) as flight:
            await cluster.apply(main_image(body, bad))

            async def named() -> Any:
                cond = await cluster.condition("pull", "Available")
                ok = cond is not None and "ImagePullBackOff" in cond.message
                return cond if ok else None

            cond = await wait_for(named, timeout=60, what="the set naming ImagePullBackOff")
            assert "containers wait in" in cond.message
            # No second gang is started while the first waits (give the operator a few
            # passes: each pod event of the stuck gang wakes the set).
            pods = await pods_by_name(cluster.client, namespace)
            asking = {
                p["metadata"]["labels"][labels.LABEL_GANG_INDEX]
                for p in pods.values()
                if p["spec"]["containers"][0]["image"] == bad
            }
            assert len(asking) == 1, asking
            # Fixing the image finishes the roll in place.
            await cluster.apply(main_image(body, "busybox:1.37"))
            await rolled(cluster, "pull", "busybox:1.37")
        after = await pods_by_name(cluster.client, namespace)
        assert {p["metadata"]["uid"] for p in after.values()} == {
            p["metadata"]["uid"] for p in before.values()
        }
        assert flight.most == 1


def requests_of(pod: dict[str, Any], where: str = "spec") -> Any:
    if where == "spec":
        main = next(c for c in pod["spec"]["containers"] if c["name"] == "main")
    else:
        main = next(c for c in pod["status"]["containerStatuses"] if c["name"] == "main")
    return (main.get("resources") or {}).get("requests")


async def test_a_cpu_and_memory_change_resizes_every_pod_in_place(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    """An image and a CPU and memory change together: each pod is resized through
    pods/resize, then restarted on the new image, and keeps its UID and node."""
    body = with_strategy(cliqueset("rsz", GANGS), "IfPossible")
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await cluster.wait_available("rsz", timeout=90)
        before = await pods_by_name(cluster.client, namespace)
        for pod in before.values():
            assert requests_of(pod, "status") == {"cpu": "100m", "memory": "64Mi"}
        async with InFlight(cluster.client, namespace) as flight:
            await cluster.apply(main_resources(main_image(body, "busybox:1.37"), "200m", "128Mi"))
            cqs = await rolled(cluster, "rsz", "busybox:1.37")
        after = await pods_by_name(cluster.client, namespace)
        assert {n: (p["metadata"]["uid"], p["spec"]["nodeName"]) for n, p in after.items()} == {
            n: (p["metadata"]["uid"], p["spec"]["nodeName"]) for n, p in before.items()
        }
        for pod in after.values():
            assert requests_of(pod) == {"cpu": "200m", "memory": "128Mi"}
            assert requests_of(pod, "status") == {"cpu": "200m", "memory": "128Mi"}
        assert flight.most == 1, f"{flight.most} gangs in flight at once (maxUnavailable 1)"
        assert (cqs.status.updated_in_place, cqs.status.updated_by_replacement) == (GANGS, 0)


async def test_a_resize_the_node_cannot_take_holds_one_gang_and_is_named(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    """Every node says Infeasible (KWOK's pending annotation on every pod): one gang is
    resized and waits, named by the set; no second gang starts; once the nodes have the
    room the roll ends in place."""
    body = with_strategy(cliqueset("inf", GANGS), "IfPossible")
    marker = {"metadata": {"annotations": {kwok.RESIZE_PENDING_ANNOTATION: "Infeasible"}}}
    unmark = {"metadata": {"annotations": {kwok.RESIZE_PENDING_ANNOTATION: None}}}
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await cluster.wait_available("inf", timeout=90)
        before = await pods_by_name(cluster.client, namespace)
        for name in before:
            await cluster.client.patch(PODS, namespace, name, marker, dict)
        async with InFlight(cluster.client, namespace) as flight:
            await cluster.apply(main_resources(body, "300m", "64Mi"))

            async def named() -> Any:
                cond = await cluster.condition("inf", "Available")
                ok = cond is not None and "ResizeInfeasible" in cond.message
                return cond if ok else None

            await wait_for(named, timeout=60, what="the set naming ResizeInfeasible")
            pods = await pods_by_name(cluster.client, namespace)
            asking = {
                p["metadata"]["labels"][labels.LABEL_GANG_INDEX]
                for p in pods.values()
                if requests_of(p) == {"cpu": "300m", "memory": "64Mi"}
            }
            assert len(asking) == 1, asking
            for name in before:
                await cluster.client.patch(PODS, namespace, name, unmark, dict)
            await rolled(cluster, "inf", "busybox:1.36")
        after = await pods_by_name(cluster.client, namespace)
        assert {p["metadata"]["uid"] for p in after.values()} == {
            p["metadata"]["uid"] for p in before.values()
        }
        for pod in after.values():
            assert requests_of(pod, "status") == {"cpu": "300m", "memory": "64Mi"}
        assert flight.most == 1


POLICIES = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicies",
    "ValidatingAdmissionPolicy",
    namespaced=False,
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    namespaced=False,
)
FROZEN = "resizes are frozen in this namespace"


@contextlib.asynccontextmanager
async def resizes_refused(client: KubeClient, namespace: str) -> AsyncIterator[None]:
    """A ValidatingAdmissionPolicy that refuses every `pods/resize` in `namespace` (with
    `FROZEN`) for the block's duration: the API server's own refusal of a resize."""
    name = f"cliques-test-no-resize-{namespace}"[:63].rstrip("-")
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["pods/resize"],
                    }
                ]
            },
            "validations": [{"expression": "false", "message": FROZEN, "reason": "Forbidden"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    await client.create(POLICIES, None, policy, dict)
    try:
        await client.create(BINDINGS, None, binding, dict)
        try:
            yield
        finally:
            with contextlib.suppress(errors.NotFound):
                await client.delete(BINDINGS, None, name)
    finally:
        with contextlib.suppress(errors.NotFound):
            await client.delete(POLICIES, None, name)


async def test_a_pod_lost_while_its_cliques_resize_is_refused_is_made_again(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    """The API server refuses every resize (an admission policy): the gang picked for the
    resize keeps its pods, its Clique carries ReplicaFailure with the server's message,
    and a pod deleted meanwhile is made again: the refused resize holds only itself."""
    body = with_strategy(cliqueset("frz", 1), "IfPossible")
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)
        await cluster.wait_available("frz", timeout=90)
        async with resizes_refused(cluster.client, namespace):
            probe = next(iter(await pods_by_name(cluster.client, namespace)))

            async def refusing() -> bool:
                # the policy reaches the API server's admission a moment after it is made
                try:
                    await cluster.client.patch(
                        PODS, namespace, probe, [], dict, patch_type="json", sub="resize"
                    )
                except errors.ApiError as exc:
                    return FROZEN in exc.message
                return False

            await wait_for(refusing, timeout=30, what="the policy refusing resizes")
            await cluster.apply(main_resources(body, "200m", "64Mi"))

            async def refused() -> Any:
                # the workers' Clique: its other pod's resize is still there to refuse
                for c in await cluster.cliques():
                    if c.spec.replicas < 2:
                        continue
                    for cond in c.status.conditions if c.status else []:
                        if cond.type == "ReplicaFailure" and FROZEN in cond.message:
                            return c, cond
                return None

            clique, cond = await wait_for(
                refused, timeout=60, what="a Clique naming the refused resize"
            )
            assert (cond.status, cond.reason) == ("True", "FailedUpdate")
            pods = await cluster.pods()
            lost = next(
                p
                for p in pods
                if p.metadata.controller_ref() is not None
                and p.metadata.controller_ref().uid == clique.metadata.uid  # type: ignore[union-attr]
            )
            await cluster.client.delete(PODS, namespace, lost.metadata.name, uid=lost.metadata.uid)

            async def made_again() -> Any:
                now = await pods_by_name(cluster.client, namespace)
                again = now.get(lost.metadata.name)
                return again if again and again["metadata"]["uid"] != lost.metadata.uid else None

            await wait_for(made_again, timeout=60, what=f"{lost.metadata.name} made again")
            # the others still wait for their resize, named
            assert await refused()
