"""Names the operator needs that are already taken, against the real control plane.

An orphan that carries the identity labels of what the operator wants (left by `kubectl
delete cqs --cascade=orphan`) is adopted, pods and all, with nothing recreated; a foreign
object holding the CliqueSet's Service name (a foreign one, or another set's gang Service) is
reported as ReplicaFailure/NameConflict with a
Warning Event and left alone, and the set comes up once the name is free.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.kube.resources import CLIQUESETS, Resource
from tests.support import bodies as support_bodies
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

        # On a control plane that has just started, the garbage collector learns of the
        # cliques.dev resources at its next discovery (every 30 s) before it orphans them.
        await wait_for(orphaned, timeout=150, what="the Cliques orphaned by the garbage collector")

        # The set itself goes a moment after its children are orphaned (the garbage
        # collector removes its Orphan finalizer last): an apply before that would update
        # the dying set, not make a new one.
        await cluster.wait_set_gone("llama", timeout=60)

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


async def test_an_owner_being_deleted_does_not_adopt_the_orphans(
    cluster: Cluster, crds: str
) -> None:
    """The executor re-reads the owner before adopting (not the cache): a CliqueSet that is
    being deleted (here held by a finalizer of the test) never takes back the Clique the
    garbage collector orphaned from it, else the Clique would be collected with it; the
    same create for a live owner adopts."""
    from cliques.api.cliqueset import CliqueSet
    from cliques.controllers.base.actions import Create, Plan
    from cliques.controllers.base.executor import Executor
    from cliques.kube.events import ObjectRef
    from cliques.kube.expectations import Expectations
    from cliques.kube.resources import CLIQUES

    executor = Executor(cluster.client, Expectations("test"), None)

    async def create_first_clique(owner: CliqueSet) -> dict[str, Any]:
        """What the CliqueSet controller would send for the owner's first Clique (the
        executor finds its name taken), and the body it sent."""
        body = support_bodies.clique_body(
            owner,
            0,
            owner.spec.template.cliques[0],
            template_hash="h",
            algorithm=1,
            bucket="0",
        )
        uid = owner.metadata.uid
        ref = ObjectRef("cliques.dev/v1alpha1", "CliqueSet", cluster.namespace, "llama", uid)
        name = body["metadata"]["name"]
        await executor.execute(Plan(creates=[Create(CLIQUES, name, body, uid)]), ref)
        return body

    body = cliqueset(replicas=1, workers=1)
    body["metadata"]["finalizers"] = ["test.cliques.dev/hold"]
    await cluster.apply(body)
    owner = await cluster.cliqueset("llama")
    # the Clique, created then orphaned (as the garbage collector leaves it)
    clique = await create_first_clique(owner)
    name = clique["metadata"]["name"]
    await cluster.client.patch(
        CLIQUES, cluster.namespace, name, {"metadata": {"ownerReferences": None}}, dict
    )

    await cluster.client.delete(CLIQUESETS, cluster.namespace, "llama", uid=owner.metadata.uid)
    deleting = await cluster.cliqueset("llama")
    assert deleting.metadata.deletion_timestamp is not None
    # the stale view: the executor is handed the plan of the owner before its deletion
    await create_first_clique(owner)
    held = await cluster.client.get(CLIQUES, cluster.namespace, name, dict)
    assert not held["metadata"].get("ownerReferences"), "adopted by an owner being deleted"

    # let the owner go; a live owner of the same name adopts the same orphan
    await cluster.client.patch(
        CLIQUESETS, cluster.namespace, "llama", {"metadata": {"finalizers": None}}, dict
    )

    async def gone() -> bool:
        return not [c for c in await cluster.list(CLIQUESETS, CliqueSet)]

    await wait_for(gone, timeout=30, what="the deleted CliqueSet gone")
    del body["metadata"]["finalizers"]
    await cluster.apply(body)
    live = await cluster.cliqueset("llama")
    await create_first_clique(live)
    adopted = await cluster.client.get(CLIQUES, cluster.namespace, name, dict)
    assert [r["uid"] for r in adopted["metadata"]["ownerReferences"]] == [live.metadata.uid]


async def test_a_shared_set_named_like_another_sets_gang_service_takes_nothing_of_it(
    cluster: Cluster, crds: str
) -> None:
    """Set `llama` lays its gangs out one Service each (`llama-0`, `llama-1`); set `llama-1`
    (Shared) wants the Service `llama-1` too. The second never shares or takes it: it says
    NameConflict naming the Service and its owner, and the first set's Service keeps its one
    owner and its selector."""
    first = cliqueset("llama", replicas=2, workers=1)
    first["spec"]["subdomainPolicy"] = "UniquePerGang"
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(first)
        await cluster.wait_available("llama", timeout=90)
        before = await cluster.client.get(SERVICES, cluster.namespace, "llama-1", dict)
        await cluster.apply(cliqueset("llama-1", replicas=1, workers=1))

        async def conflict() -> Any:
            cond = await cluster.condition("llama-1", "ReplicaFailure")
            return cond if cond is not None and cond.status == "True" else None

        cond = await wait_for(conflict, timeout=60, what="ReplicaFailure on llama-1")
        assert cond.reason == "NameConflict", cond
        assert f"Service {cluster.namespace}/llama-1 already exists" in cond.message, cond
        held = await cluster.client.get(SERVICES, cluster.namespace, "llama-1", dict)
        owners = held["metadata"]["ownerReferences"]
        assert [(o["kind"], o["name"]) for o in owners] == [("CliqueSet", "llama")], owners
        assert held["spec"]["selector"] == before["spec"]["selector"]
        assert held["metadata"]["uid"] == before["metadata"]["uid"]
        await cluster.wait_available("llama", timeout=30)
