"""Gang preemption with the operator on the real scheduler (PodGroups, Kubernetes 1.36+):
a low-priority set fills the nodes, a high-priority gang arrives, and the scheduler takes
one whole low gang for it (`gangScheduling.disruption: Gang`, the PodGroup's
`disruptionMode`), never some pods of several; the low set says its gang waits for a node,
and comes back whole when the room returns."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.meta import find_condition
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import CLIQUESETS, PODS, Resource
from tests.support import gangs
from tests.support.gangnodes import gang_nodes, own_slot, slot_cliqueset
from tests.support.harness import Cluster, running_operator, wait_for

__all__ = ["gang_nodes"]

PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)


@contextlib.asynccontextmanager
async def priority_classes(client: KubeClient, **values: int) -> AsyncIterator[dict[str, str]]:
    """PriorityClasses named `<name>-<namespace-unique tag>` for the block's duration."""
    import secrets

    tag = secrets.token_hex(3)
    names = {key: f"cliques-test-{key}-{tag}" for key in values}
    for key, value in values.items():
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": names[key]},
            "value": value,
        }
        await client.create(PRIORITY_CLASSES, None, body, dict)
    try:
        yield names
    finally:
        for name in names.values():
            with contextlib.suppress(errors.NotFound):
                await client.delete(PRIORITY_CLASSES, None, name)


def with_priority(body: dict[str, Any], priority_class: str) -> dict[str, Any]:
    for clique in body["spec"]["template"]["cliques"]:
        clique["template"]["spec"]["priorityClassName"] = priority_class
    return body


async def test_a_high_priority_gang_preempts_one_whole_low_gang(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Any
) -> None:
    slot = own_slot()
    gang_nodes(8, resource=slot)  # room for the two low gangs of 4, nothing else
    api = await gangs.detect(cluster.client, namespace)
    if not api.podgroups:
        pytest.skip(f"{api.describe()}: gang preemption needs PodGroups (Kubernetes 1.36+)")
    async with (
        priority_classes(cluster.client, low=100, high=1000) as classes,
        running_operator(kubeconfig, namespace),
    ):
        low = slot_cliqueset(
            "low",
            2,
            (("leader", 1), ("worker", 3)),
            resource=slot,
            gangScheduling={"backend": "Workload", "disruption": "Gang"},
        )
        await cluster.apply(with_priority(low, classes["low"]))
        await cluster.wait_available("low", timeout=90)
        before = {
            p.metadata.name: p.metadata.uid
            for p in await cluster.pods()
            if p.metadata.labels[labels.LABEL_CLIQUESET] == "low"
        }
        assert len(before) == 8

        high = slot_cliqueset(
            "high",
            1,
            (("leader", 1), ("worker", 1)),
            resource=slot,
            gangScheduling={"backend": "Workload"},
        )
        await cluster.apply(with_priority(high, classes["high"]))

        async def high_bound() -> list[dict[str, Any]] | None:
            pods = [
                p
                for p in await cluster.list(PODS, dict)
                if p["metadata"]["labels"][labels.LABEL_CLIQUESET] == "high"
            ]
            return pods if len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods) else None

        await wait_for(high_bound, timeout=120, what="the high-priority gang bound")

        # One low gang lost every pod (they were preempted and made again, Pending); the
        # other kept every pod it had.
        async def low_by_gang() -> dict[str, int] | None:
            kept: dict[str, int] = {"0": 0, "1": 0}
            for p in await cluster.pods():
                meta = p.metadata
                if meta.labels[labels.LABEL_CLIQUESET] != "low" or meta.deletion_timestamp:
                    continue
                if before.get(meta.name) == meta.uid and p.spec.node_name:
                    kept[meta.labels[labels.LABEL_GANG_INDEX]] += 1
            return kept if sorted(kept.values()) == [0, 4] else None

        kept = await wait_for(low_by_gang, timeout=60, what="one low gang preempted whole")
        lost = next(g for g, n in kept.items() if n == 0)

        async def says_waiting() -> bool:
            cqs = await cluster.cliqueset("low")
            if cqs.status is None or cqs.status.ready_replicas != 1:
                return False
            for clique in await cluster.cliques():
                if clique.metadata.name == f"low-{lost}-leader" and clique.status is not None:
                    cond = find_condition(clique.status.conditions, "PodsUnschedulable")
                    return cond is not None and cond.status == "True"
            return False

        await wait_for(says_waiting, timeout=60, what="the low set reporting its gang waits")

        # Room returns: the high set goes, the low gang comes back whole.
        await cluster.client.delete(CLIQUESETS, namespace, "high")
        await cluster.wait_available("low", timeout=120)
