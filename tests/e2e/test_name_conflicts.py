"""Names the operator needs that are already taken, against the real control plane.

An orphan that carries the identity labels of what the operator wants (left by `kubectl
delete cqs --cascade=orphan`) is adopted, pods and all, with nothing recreated; a foreign
object holding the CliqueSet's Service name is reported as ReplicaFailure/NameConflict with a
Warning Event and left alone, and the set comes up once the name is free.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.kube.resources import CLIQUESETS, Resource
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")


class _Event(msgspec.Struct, rename="camel"):
    reason: str = ""
    message: str = ""
    involved_object: dict[str, Any] = msgspec.field(default_factory=dict)


async def _uids(cluster: Cluster) -> tuple[dict[str, str], dict[str, str]]:
    cliques = {c.metadata.name: c.metadata.uid for c in await cluster.cliques()}
    pods = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
    return cliques, pods


async def test_orphans_of_a_deleted_set_are_adopted_not_recreated(
    cluster: Cluster, crds: str
) -> None:
    body = cliqueset(replicas=2, workers=1)
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(body)
        old = await cluster.wait_available("llama")
        cliques, pods = await _uids(cluster)
        assert len(cliques) == 4 and len(pods) == 4

        # kubectl delete cqs llama --cascade=orphan
        await cluster.client.delete(
            CLIQUESETS, cluster.namespace, "llama", propagation="Orphan", uid=old.metadata.uid
        )

        async def orphaned() -> bool:
            found = await cluster.cliques()
            return len(found) == 4 and all(not c.metadata.owner_references for c in found)

        await wait_for(orphaned, timeout=60, what="the Cliques orphaned by the garbage collector")

        await cluster.apply(body)
        new = await cluster.wait_available("llama")
        assert new.metadata.uid != old.metadata.uid

        async def adopted() -> bool:
            found = await cluster.cliques()
            return all(
                (ref := c.metadata.controller_ref()) is not None and ref.uid == new.metadata.uid
                for c in found
            )

        await wait_for(adopted, timeout=30, what="every Clique controlled by the new CliqueSet")
        assert await _uids(cluster) == (cliques, pods), "something was recreated"
        assert await cluster.condition("llama", "ReplicaFailure") is None


async def test_a_foreign_object_holding_a_name_is_a_name_conflict(
    cluster: Cluster, crds: str
) -> None:
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "llama", "labels": {"app": "someone-else"}},
        "spec": {"ports": [{"port": 80}]},
    }
    await cluster.client.create(SERVICES, cluster.namespace, foreign, dict)
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(cliqueset(replicas=2, workers=1))

        async def conflict() -> Any:
            cond = await cluster.condition("llama", "ReplicaFailure")
            return cond if cond is not None and cond.status == "True" else None

        cond = await wait_for(conflict, timeout=60, what="ReplicaFailure on the CliqueSet")
        assert cond.reason == "NameConflict", cond
        assert f"Service {cluster.namespace}/llama already exists" in cond.message, cond
        assert "not controlled by any owner" in cond.message, cond

        async def event() -> _Event | None:
            raw = await cluster.client.list_page(EVENTS, cluster.namespace, limit=500)
            items = msgspec.json.decode(raw, type=dict[str, Any])["items"]
            for item in items:
                ev = msgspec.convert(item, _Event)
                if ev.reason == "NameConflict" and ev.involved_object.get("kind") == "CliqueSet":
                    return ev
            return None

        ev = await wait_for(event, timeout=30, what="a NameConflict Event")
        assert "Service" in ev.message and "/llama " in ev.message
        # Left alone: still the foreign object, no owner added.
        held = await cluster.client.get(SERVICES, cluster.namespace, "llama", dict)
        assert "ownerReferences" not in held["metadata"]
        assert held["metadata"]["labels"] == {"app": "someone-else"}

        await cluster.client.delete(SERVICES, cluster.namespace, "llama")
        await cluster.wait_available("llama", timeout=90)

        async def cleared() -> bool:
            cond = await cluster.condition("llama", "ReplicaFailure")
            return cond is None

        await wait_for(cleared, timeout=60, what="ReplicaFailure removed")
        svc = await cluster.client.get(SERVICES, cluster.namespace, "llama", dict)
        refs = svc["metadata"].get("ownerReferences", [])
        assert [r["kind"] for r in refs] == ["CliqueSet"]
