"""Clique status publication against the real control plane: progress towards Ready is held
back (`status_hold`) and written once its time is up; a Clique that turns Ready within the
hold has its status written once, Ready."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from datetime import datetime
from typing import Any

import pytest

from cliques.api.clique import Clique
from cliques.api.meta import find_condition
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, Resource
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


async def test_progress_of_pods_that_never_turn_ready_is_written_after_the_hold(
    cluster: Cluster, crds: str
) -> None:
    hold = 3.0
    body = cliqueset(replicas=1, workers=2)
    for clique in body["spec"]["template"]["cliques"]:
        # no node carries this label: the pods stay Pending, never Ready
        clique["template"]["spec"]["nodeSelector"] = {"cliques.dev/test": "nowhere"}
    async with running_operator(crds, cluster.namespace, status_hold=hold):
        await cluster.apply(body)

        async def published() -> Clique | None:
            for c in await cluster.cliques():
                if c.metadata.name == "llama-0-worker" and c.status is not None:
                    return c
            return None

        worker = await wait_for(published, timeout=60, what="llama-0-worker status")
        pods = [p for p in await cluster.pods() if p.metadata.name.startswith("llama-0-worker-")]
    status = worker.status
    assert status is not None
    assert (status.replicas, status.ready_replicas, status.updated_replicas) == (2, 0, 2)
    started = find_condition(status.conditions, "Started")
    ready = find_condition(status.conditions, "Ready")
    assert started is not None and started.status == "True"
    assert ready is not None and (ready.status, ready.reason) == ("False", "Starting")
    # Written no sooner than the hold after its pods appeared (timestamps have whole seconds).
    created = max(_time(p.metadata.creation_timestamp or "") for p in pods)
    waited = (_time(started.last_transition_time) - created).total_seconds()
    assert waited >= hold - 1, f"status written {waited}s after its pods, hold {hold}s"


async def test_clique_ready_within_the_hold_gets_one_ready_status(
    cluster: Cluster, crds: str
) -> None:
    """Its pods wait for a node (Pending, not Ready) until the test labels one; meanwhile
    the Clique controller has reconciled with the pods in view, and without the hold would
    have written a Ready=False status. With it, the only status written says Ready."""
    ns = cluster.namespace
    gate = {"cliques.dev/test-gate": ns}
    body = cliqueset(replicas=1, workers=2)
    for clique in body["spec"]["template"]["cliques"]:
        clique["template"]["spec"]["nodeSelector"] = gate
    seen: list[tuple[str, str, str]] = []  # (clique, Ready status, reason) of every version
    reconciled: list[tuple[str, float]] = []  # (Clique key, reconcile start)

    def record(kind: str, old: Any, new: Clique) -> None:
        if kind != "DELETED" and new.status is not None:
            cond = find_condition(new.status.conditions, "Ready")
            if cond is not None:
                seen.append((new.metadata.name, cond.status, cond.reason))

    def trace(controller: str, key: str, started: float, ended: float) -> None:
        if controller == "clique":
            reconciled.append((key, started))

    watcher: Informer[Clique] = Informer(cluster.client, CLIQUES, Clique, namespace=ns)
    watcher.add_handler(record)
    task = asyncio.create_task(watcher.run())
    nodes = json.loads(await cluster.client.request("list", NODES))["items"]
    node = nodes[0]["metadata"]["name"]
    try:
        async with running_operator(crds, ns, status_hold=60.0, trace=trace):
            await cluster.apply(body)

            async def pods_pending() -> float | None:
                names = {p.metadata.name for p in await cluster.pods()}
                wanted = {"llama-0-leader-0", "llama-0-worker-0", "llama-0-worker-1"}
                return time.perf_counter() if wanted <= names else None

            since = await wait_for(pods_pending, timeout=60, what="3 Pending pods")

            async def reconciled_since() -> bool:
                done = {key for key, started in reconciled if started > since}
                return {f"{ns}/llama-0-leader", f"{ns}/llama-0-worker"} <= done

            # Wake the Cliques (an annotation on them is an event, not a spec change), so
            # that each reconciles with all its pods in the cache.
            for name in ("llama-0-leader", "llama-0-worker"):
                await cluster.client.patch(
                    CLIQUES, ns, name, {"metadata": {"annotations": {"test/poke": "1"}}}, dict
                )
            await wait_for(reconciled_since, timeout=30, what="both Cliques reconciled")
            assert seen == [], f"a status was written while its pods were Pending: {seen}"

            await cluster.client.patch(NODES, None, node, {"metadata": {"labels": gate}}, dict)
            await cluster.wait_available("llama")

            async def all_seen() -> bool:
                return {name for name, *_ in seen} == {"llama-0-leader", "llama-0-worker"}

            await wait_for(all_seen, timeout=30, what="every Clique's status watched")
    finally:
        unlabel = {"metadata": {"labels": {"cliques.dev/test-gate": None}}}
        await cluster.client.patch(NODES, None, node, unlabel, dict)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert all(status == "True" for _, status, _ in seen), seen


async def test_a_pod_the_api_server_refuses_is_reported_until_the_template_is_fixed(
    cluster: Cluster, crds: str
) -> None:
    """An invalid container name passes the CRD but not pod validation: each Clique reports
    ReplicaFailure (FailedCreate, the API server's message) and the CliqueSet names the
    first one; once the template is fixed the gangs come up and the condition is gone."""
    body = cliqueset(replicas=2, workers=1)
    for clique in body["spec"]["template"]["cliques"]:
        clique["template"]["spec"]["containers"][0]["name"] = "Main_Bad"
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(body)

        async def refused() -> list[Clique] | None:
            found = [
                c
                for c in await cluster.cliques()
                if c.status is not None
                and (f := find_condition(c.status.conditions, "ReplicaFailure")) is not None
                and f.status == "True"
            ]
            return found if len(found) == 4 else None

        failing = await wait_for(refused, timeout=60, what="ReplicaFailure on all 4 Cliques")
        for c in failing:
            assert c.status is not None
            f = find_condition(c.status.conditions, "ReplicaFailure")
            assert f is not None and f.reason == "FailedCreate"
            assert f'Pod "{c.metadata.name}-0" is invalid' in f.message
            assert 'Invalid value: "Main_Bad"' in f.message

        async def set_reports() -> Any:
            cond = await cluster.condition("llama", "ReplicaFailure")
            return cond if cond is not None and "and 3 more Cliques" in cond.message else None

        cond = await wait_for(set_reports, timeout=30, what="the CliqueSet's ReplicaFailure")
        assert cond.status == "True" and cond.reason == "FailedCreate"
        assert cond.message.startswith('llama-0-leader: Pod "llama-0-leader-0" is invalid')
        assert not await cluster.pods()

        await cluster.apply(cliqueset(replicas=2, workers=1))
        await cluster.wait_available("llama")

        async def cleared() -> bool:
            cliques = await cluster.cliques()
            return await cluster.condition("llama", "ReplicaFailure") is None and all(
                c.status is not None
                and find_condition(c.status.conditions, "ReplicaFailure") is None
                for c in cliques
            )

        await wait_for(cleared, timeout=30, what="ReplicaFailure removed everywhere")
