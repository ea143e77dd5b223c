"""Gang-aware drain on the real local control plane: a set of 4 gangs (leader 1 + worker 1)
on 5 nodes with room for 2 pods each, `maxUnavailable: 1`; `kubectl drain` (the dev
cluster's kubectl) of a node that holds gang pods completes, after the Eviction API refused
the set's pods (the set's PodDisruptionBudget) until the operator had moved their gangs
whole; whole gangs never fall below 3 while it drains; no pod of the set is left on the
node; the set says so (condition `Moving`, Events `MovingGang`). The same with pods that
take a minute to start (the dev cluster's start model, docs/devcluster.md).

The leaders may run on 3 of the nodes only and the workers on the other 2 (a node selector
per clique), so that some node holds the leaders of two gangs (4 leaders on 3 nodes of 2
slots): that node is drained, and one of its gangs must wait for the other to be whole
again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.features import drain
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUESETS, EVENTS, PDBS
from tests.support.gangnodes import gang_nodes, own_slot, slot_cliqueset
from tests.support.harness import Cluster, PodTracker, running_operator, wait_for

pytestmark = pytest.mark.cluster
__all__ = ["gang_nodes"]

SET = "llama"
#: The node label that keeps the leaders and the workers on nodes of their own.
POOL = "example.com/pool"
#: The dev cluster's start model (docs/devcluster.md): seconds every container start takes.
LOAD = "start.stage.kwok.x-k8s.io/load-seconds"


def drain_set(slot: str, load_seconds: int) -> dict[str, Any]:
    body = slot_cliqueset(
        SET,
        4,
        (("leader", 1), ("worker", 1)),
        resource=slot,
        updateStrategy={"maxUnavailable": 1},
    )
    for c in body["spec"]["template"]["cliques"]:
        c["template"]["spec"]["nodeSelector"] = {POOL: c["name"]}
        if load_seconds:
            c["template"]["metadata"]["annotations"] = {LOAD: str(load_seconds)}
    return body


async def set_pods_on(cluster: Cluster, node: str) -> list[str]:
    """The live pods of the set bound to `node`."""
    return sorted(
        p.metadata.name
        for p in await cluster.pods()
        if p.spec.node_name == node
        and p.metadata.deletion_timestamp is None
        and p.metadata.labels.get(labels.LABEL_CLIQUESET) == SET
    )


async def drain_while_serving(
    cluster: Cluster,
    kube_cluster: Any,
    kubeconfig: str,
    gang_nodes: Callable[..., list[str]],
    *,
    load_seconds: int,
    timeout: float,
) -> None:
    slot = own_slot()
    # 10 slots for 8 pods: 6 for the 4 leaders, 4 for the 4 workers
    gang_nodes(3, slots=2, resource=slot, node_labels={POOL: "leader"})
    gang_nodes(2, slots=2, resource=slot, node_labels={POOL: "worker"})
    async with running_operator(kubeconfig, cluster.namespace, status_hold=0.0):
        await cluster.apply(drain_set(slot, load_seconds))
        await cluster.wait_available(SET, timeout=timeout)

        async def budget() -> dict[str, Any] | None:
            found = await cluster.list(PDBS, dict)
            return found[0] if found else None

        pdb = await wait_for(budget, timeout=30, what="the set's PodDisruptionBudget")
        assert pdb["metadata"]["name"] == drain.budget_name(SET)
        assert pdb["spec"]["maxUnavailable"] == 0
        assert pdb["metadata"]["ownerReferences"][0]["kind"] == "CliqueSet"

        gangs_on: dict[str, set[str]] = {}
        for p in await cluster.pods():
            gangs_on.setdefault(p.spec.node_name, set()).add(
                p.metadata.labels[labels.LABEL_GANG_INDEX]
            )
        node = max(sorted(gangs_on), key=lambda n: len(gangs_on[n]))
        on_node = await set_pods_on(cluster, node)
        assert len(gangs_on[node]) == 2, gangs_on  # (4 leaders on 3 nodes of 2 slots)

        moving_seen: list[str] = []

        def on_set(kind: str, old: Any, new: CliqueSet) -> None:
            for c in new.status.conditions if new.status is not None else []:
                if c.type == drain.CONDITION_MOVING and c.status == "True":
                    moving_seen.append(c.message)

        sets = Informer(cluster.client, CLIQUESETS, CliqueSet, namespace=cluster.namespace)
        sets.add_handler(on_set)
        watching = asyncio.create_task(sets.run())
        try:
            async with PodTracker(cluster.client, cluster.namespace, pods_per_gang=2) as tracker:
                tracker.start_counting()
                assert tracker.whole() == 4
                started = time.monotonic()
                proc = await asyncio.create_subprocess_exec(
                    str(kube_cluster.kubectl),
                    "--kubeconfig",
                    kubeconfig,
                    "drain",
                    node,
                    f"--pod-selector={labels.LABEL_CLIQUESET}={SET}",
                    "--ignore-daemonsets",
                    "-v=6",
                    f"--timeout={int(timeout * 4)}s",
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    env=kube_cluster.env(),
                )
                samples: list[int] = []

                async def sample() -> None:
                    while True:
                        samples.append(tracker.whole())
                        await asyncio.sleep(0.5)

                sampler = asyncio.create_task(sample())
                try:
                    out, _ = await asyncio.wait_for(proc.communicate(), timeout=timeout * 4 + 30)
                finally:
                    sampler.cancel()
                    await asyncio.gather(sampler, return_exceptions=True)
                took = time.monotonic() - started
                text = out.decode()
                said = "\n".join(
                    line[line.find("verb=") :] if "verb=" in line else line
                    for line in text.splitlines()
                    if "round_trippers" in line or not line.startswith("I")
                )
                print(f"kubectl drain of {node} ({on_node}) took {took:.1f}s:\n{said}")
                print(f"pods deleted {tracker.deleted}, added {tracker.added}")
                print(f"Moving said: {moving_seen}")
                assert proc.returncode == 0, f"kubectl drain failed:\n{text}"
                # The Eviction API refused the set's ready pods (the set's budget: 429, which
                # kubectl retries, itself or through client-go's Retry-After; -v=6 logs every
                # answer): the operator moved them.
                refused = [
                    line
                    for line in text.splitlines()
                    if "/eviction" in line and "429 Too Many Requests" in line
                ]
                assert refused, text
                assert await set_pods_on(cluster, node) == []

                async def whole_again() -> bool:
                    cqs = await cluster.cliqueset(SET)
                    st = cqs.status
                    return (
                        st is not None
                        and st.available_replicas == 4
                        and tracker.whole() == 4
                        and await set_pods_on(cluster, node) == []
                    )

                await wait_for(whole_again, timeout=timeout * 2, what="4 whole gangs again")
            moved = {
                e["message"]
                for e in await cluster.list(EVENTS, dict)
                if e.get("reason") == drain.EVENT_MOVING
            }
            cond = await cluster.condition(SET, drain.CONDITION_MOVING)
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)

    print(f"whole gangs sampled during the drain: min {min(samples)}, {len(samples)} samples")
    assert tracker.min_whole is not None and tracker.min_whole >= 3, (
        f"{tracker.min_whole} whole gangs at the worst of the drain"
    )
    assert min(samples) >= 3, samples
    assert moving_seen and node in moving_seen[0], moving_seen
    # one of the node's two gangs waited for the other to be whole again
    assert any("wait for maxUnavailable" in m for m in moving_seen), moving_seen
    assert len(moved) == 2 and all(node in m for m in moved), moved
    assert cond is not None and cond.status == "False", cond


async def test_kubectl_drain_moves_gangs_whole_and_completes(
    cluster: Cluster,
    kube_cluster: Any,
    kubeconfig: str,
    gang_nodes: Callable[..., list[str]],
) -> None:
    await drain_while_serving(
        cluster, kube_cluster, kubeconfig, gang_nodes, load_seconds=0, timeout=60
    )


async def test_kubectl_drain_with_pods_that_take_a_minute_to_start(
    cluster: Cluster,
    kube_cluster: Any,
    kubeconfig: str,
    gang_nodes: Callable[..., list[str]],
) -> None:
    await drain_while_serving(
        cluster, kube_cluster, kubeconfig, gang_nodes, load_seconds=60, timeout=150
    )
