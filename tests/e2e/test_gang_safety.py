"""Gang safety under `failurePolicy: RecreateGang` when pods are slow to start or cannot
be placed, with the operator on the real control plane:

- a resize whose new pods find no node is not a breach: no running pod is deleted, no
  gang is restarted or failed, the set and its Cliques say the pods wait for a node, and
  once a node with room comes every pod runs;
- a gang restarted after a crash is restarted once, though its new pods take far longer to
  start than the breach window: a gang on its way up is not broken;
- after a restart a gang starts in order again (`startupType: InOrder`): no worker pod is
  created before the new leader is Ready.

Slow starts come from the dev cluster's KWOK stages: a pod annotated
`pod-ready.stage.kwok.x-k8s.io/delay` stays Pending that long once bound
(docs/devcluster.md); the first test proves it. Full nodes come from `gang_nodes`: nodes
offering a test's own extended resource (`own_slot`), one slot per pod. The sets here use
`gangScheduling: {backend: None}`, so that the scheduler places pods one by one and start
order is kept by holding pods back (with the Workload backend every pod is created at once
and waits at its start gate; test_gang_scheduling.py covers that).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any, Literal

import msgspec
import pytest

from cliques.api import labels
from cliques.api.pod import Pod
from cliques.kube.resources import CLIQUES, EVENTS, PODS
from cliques_lab.devcluster import kwok
from tests.support.gangnodes import gang_nodes, own_slot, slot_cliqueset
from tests.support.harness import Cluster, PodTracker, cliqueset, running_operator, wait_for

__all__ = ["gang_nodes"]

SET = "safe"
WINDOW = 2  # minAvailableBreachedSeconds
POLICY: dict[str, Any] = {
    "restartPolicy": "RecreateGang",
    "minAvailableBreachedSeconds": WINDOW,
    "maxGangRestarts": 2,
    "restartBackoff": {"initialSeconds": 1, "maxSeconds": 2},
}
NO_GANG_SCHEDULING = {"backend": "None"}
#: How long "nothing is deleted" is watched once a breach could have begun: the first
#: restart falls due after the window plus the backoff (3 s), the second 4 s later.
QUIET_WINDOW = 10.0
#: A condition message saying that pods wait for a node.
WAITING_FOR_NODE = re.compile(r"unschedulable|wait(s|ing)? for (a )?node|no node", re.I)


# --- helpers --------------------------------------------------------------------------------


def _delayed(body: dict[str, Any], delay: str, *roles: str) -> dict[str, Any]:
    """`body` with the start delay annotation in the pod templates of `roles`."""
    for clique in body["spec"]["template"]["cliques"]:
        if clique["name"] in roles:
            meta = clique["template"].setdefault("metadata", {})
            meta.setdefault("annotations", {})[kwok.START_DELAY_ANNOTATION] = delay
    return body


def _body(replicas: int, policy: dict[str, Any], startup: str = "AnyOrder") -> dict[str, Any]:
    """A set of `replicas` gangs of a leader and 2 workers on the dev cluster's own nodes
    (room for every pod), with `policy`, scheduled pod by pod."""
    body = cliqueset(SET, replicas, startup=startup, leader=1, workers=2)
    body["spec"]["failurePolicy"] = policy
    body["spec"]["gangScheduling"] = NO_GANG_SCHEDULING
    return body


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pod.get("status", {}).get("conditions", [])
    )


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "PodScheduled"
        and c["status"] == "False"
        and c.get("reason") == "Unschedulable"
        for c in pod.get("status", {}).get("conditions", [])
    )


async def _live(cluster: Cluster, selector: str = "") -> dict[str, dict[str, Any]]:
    """name -> pod (a raw object) of the pods not being deleted."""
    pods = await cluster.list(PODS, dict, selector)
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


async def _uids(cluster: Cluster, selector: str = "") -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in (await _live(cluster, selector)).items()}


def _gang(gang: int) -> str:
    return f"{labels.LABEL_GANG_INDEX}={gang}"


async def _events(cluster: Cluster, reason: str) -> list[dict[str, Any]]:
    raw = await cluster.client.list_page(EVENTS, cluster.namespace, limit=500)
    items = msgspec.json.decode(raw, type=dict[str, Any])["items"]
    return [
        e
        for e in items
        if e.get("reason") == reason and e.get("involvedObject", {}).get("kind") == "CliqueSet"
    ]


async def _restart_events(cluster: Cluster) -> int:
    return sum(int(e.get("count") or 1) for e in await _events(cluster, "GangRestart"))


async def _not_true(cluster: Cluster, type_: str) -> None:
    cond = await cluster.condition(SET, type_)
    assert cond is None or cond.status != "True", f"{SET} says {type_}: {cond}"


async def _gang_restarts(cluster: Cluster) -> int:
    cqs = await cluster.cliqueset(SET)
    return cqs.status.gang_restarts if cqs.status is not None else 0


async def _break(cluster: Cluster, name: str, how: str) -> None:
    """Make a pod Failed or not ready through pods/status, as a kubelet would (KWOK leaves
    a running pod's status as it is patched)."""
    kind: Literal["merge", "strategic"]
    if how == "failed":
        patch: dict[str, Any] = {"status": {"phase": "Failed"}}
        kind = "merge"
    else:
        patch = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
        kind = "strategic"
    await cluster.client.patch(
        PODS, cluster.namespace, name, patch, dict, patch_type=kind, sub="status"
    )


def _pod(name: str, namespace: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ]
        },
    }


@pytest.fixture
def start_delay(kube_cluster: Any) -> str:
    """The start delay annotation, once the dev cluster's KWOK stages are known to act on
    it (a cluster created by an older version keeps its old stages until recreated)."""
    if kube_cluster.name is not None:
        from cliques_lab.devcluster import cluster as devcluster

        saved = devcluster.paths_for(kube_cluster.name).saved_config
        missing = kwok.stage_changes(saved.read_text(encoding="utf-8"))
        if "start delay" in missing:
            pytest.fail(
                f"the dev cluster '{kube_cluster.name}' was created without the start delay "
                f"stage: recreate it (`cliques dev-cluster down --name {kube_cluster.name}`)",
                pytrace=False,
            )
    return kwok.START_DELAY_ANNOTATION


# --- the dev cluster's start delay ------------------------------------------------------------


async def test_kwok_delays_the_start_of_an_annotated_pod(
    cluster: Cluster, namespace: str, start_delay: str
) -> None:
    """A pod annotated with a 10 s delay is bound at once but stays Pending, not Ready, for
    10 s; one without the annotation is Ready at once; a waiting pod deleted goes at once."""
    started = time.monotonic()
    await cluster.client.create(
        PODS, namespace, _pod("slow", namespace, {start_delay: "10s"}), dict
    )
    await cluster.client.create(PODS, namespace, _pod("quick", namespace, {}), dict)
    await cluster.client.create(PODS, namespace, _pod("gone", namespace, {start_delay: "1h"}), dict)

    async def ready(name: str) -> bool:
        return _ready(await cluster.client.get(PODS, namespace, name, dict))

    await wait_for(lambda: ready("quick"), timeout=10, what="the pod without a delay Ready")
    quick = time.monotonic() - started

    # Until 5 s after creation: the slow pod is bound to a node and still Pending.
    while time.monotonic() < started + 5.0:
        slow = await cluster.client.get(PODS, namespace, "slow", dict)
        assert not _ready(slow), f"the delayed pod was Ready {time.monotonic() - started:.1f}s in"
        assert slow.get("status", {}).get("phase") == "Pending", slow.get("status")
        await asyncio.sleep(0.5)
    assert slow["spec"].get("nodeName"), "the delayed pod was not bound"

    # A pod deleted while it waits is deleted at once, not after its delay.
    await cluster.client.delete(PODS, namespace, "gone")

    async def gone() -> bool:
        return all(p["metadata"]["name"] != "gone" for p in await cluster.list(PODS, dict))

    await wait_for(gone, timeout=10, what="the waiting pod deleted")

    # Ready about 10 s after it was created (a few seconds' slack for a busy machine).
    left = started + 18.0 - time.monotonic()
    await wait_for(lambda: ready("slow"), timeout=left, what="the delayed pod Ready by 18 s")
    slow_took = time.monotonic() - started
    print(f"ready after: without a delay {quick:.1f}s, with 10s {slow_took:.1f}s")
    assert quick < 5.0, quick
    assert slow_took >= 9.5, slow_took
    slow = await cluster.client.get(PODS, namespace, "slow", dict)
    assert slow["status"]["phase"] == "Running"


# --- a: resize while the nodes are full ---------------------------------------------------------


async def test_resize_with_nodes_full_deletes_no_running_pod(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Callable[..., list[str]]
) -> None:
    slot = own_slot()
    gang_nodes(3, slots=3, resource=slot)  # room for exactly 3 gangs of 3

    def body(workers: int) -> dict[str, Any]:
        return slot_cliqueset(
            SET,
            3,
            (("leader", 1), ("worker", workers)),
            resource=slot,
            failurePolicy=POLICY,
            gangScheduling=NO_GANG_SCHEDULING,
        )

    async with running_operator(kubeconfig, namespace, status_hold=0.0):
        await cluster.apply(body(2))
        await cluster.wait_available(SET, timeout=60)
        before = await _uids(cluster)
        assert len(before) == 9, before

        async with PodTracker(cluster.client, namespace, pods_per_gang=3) as tracker:
            await cluster.apply(body(3))

            async def waiting() -> list[str] | None:
                live = await _live(cluster)
                new = [n for n in live if n not in before]
                stuck = [n for n in new if _unschedulable(live[n])]
                return stuck if len(new) == 3 and len(stuck) == 3 else None

            stuck = await wait_for(waiting, timeout=30, what="3 new pods Pending, unschedulable")
            assert sorted(stuck) == [f"{SET}-{g}-worker-2" for g in range(3)], stuck

            async def resize_seen() -> bool:
                cliques = await cluster.list(CLIQUES, dict, f"{labels.LABEL_CLIQUE}=worker")
                return len(cliques) == 3 and all(
                    c.get("status", {}).get("observedGeneration") == c["metadata"]["generation"]
                    and c["spec"]["replicas"] == 3
                    for c in cliques
                )

            await wait_for(resize_seen, timeout=30, what="the worker Cliques resized")

            # Longer than a breach window plus the backoff, three times over: nothing runs
            # that was not running, and nothing that ran is deleted.
            deadline = time.monotonic() + QUIET_WINDOW
            while time.monotonic() < deadline:
                now = await _uids(cluster)
                lost = sorted(n for n, uid in before.items() if now.get(n) != uid)
                assert not lost, f"running pods deleted after the resize: {lost}"
                assert not tracker.deleted, f"pods deleted: {tracker.deleted}"
                await _not_true(cluster, "GangRestarting")
                await _not_true(cluster, "GangFailed")
                await asyncio.sleep(0.5)
            assert await _gang_restarts(cluster) == 0

        # The Cliques and the set say why: pods wait for a node.
        async def cliques_say() -> bool:
            cliques = await cluster.list(CLIQUES, dict, f"{labels.LABEL_CLIQUE}=worker")
            return len(cliques) == 3 and all(
                any(
                    WAITING_FOR_NODE.search(cond.get("message", ""))
                    for cond in c.get("status", {}).get("conditions", [])
                )
                for c in cliques
            )

        await wait_for(cliques_say, timeout=15, what="the worker Cliques saying pods wait")

        async def set_says() -> bool:
            cqs = await cluster.cliqueset(SET)
            conds = cqs.status.conditions if cqs.status is not None else []
            return any(WAITING_FOR_NODE.search(c.message or "") for c in conds)

        await wait_for(set_says, timeout=15, what=f"{SET} saying pods wait for a node")

        # Room for the three new pods: everything runs, nothing was recreated.
        gang_nodes(1, slots=3, resource=slot)

        async def all_ready() -> bool:
            live = await _live(cluster)
            return len(live) == 12 and all(_ready(p) for p in live.values())

        await wait_for(all_ready, timeout=30, what="all 12 pods Ready")
        await cluster.wait_available(SET, timeout=30)
        now = await _uids(cluster)
        assert {n: now.get(n) for n in before} == before, "a pod that ran was recreated"
        assert await _gang_restarts(cluster) == 0
        assert await _restart_events(cluster) == 0


# --- b: a crash, then a slow start ---------------------------------------------------------------


async def test_a_slow_gang_is_restarted_once(
    cluster: Cluster, kubeconfig: str, namespace: str, start_delay: str
) -> None:
    delay = 20.0
    body = _body(
        replicas=2, policy={**POLICY, "restartBackoff": {"initialSeconds": 1, "maxSeconds": 1}}
    )
    _delayed(body, f"{delay:.0f}s", "leader", "worker")
    async with (
        running_operator(kubeconfig, namespace, status_hold=0.0),
        PodTracker(cluster.client, namespace, pods_per_gang=3) as tracker,
    ):
        await cluster.apply(body)
        await cluster.wait_available(SET, timeout=delay + 40)
        gang0 = await _uids(cluster, _gang(0))
        gang1 = await _uids(cluster, _gang(1))
        assert len(gang0) == 3 and len(gang1) == 3, (gang0, gang1)

        broken = time.monotonic()
        await _break(cluster, f"{SET}-1-worker-0", "failed")

        async def back() -> bool:
            restarts = await _gang_restarts(cluster)
            assert restarts <= 1, f"gang 1 restarted {restarts} times while its pods started"
            await _not_true(cluster, "GangFailed")
            if restarts != 1:
                return False
            now = await _uids(cluster, _gang(1))
            if sorted(now) != sorted(gang1) or set(now.values()) & set(gang1.values()):
                return False  # not every pod of gang 1 recreated yet
            cqs = await cluster.cliqueset(SET)
            st = cqs.status
            return st is not None and any(
                c.type == "Available" and c.status == "True" for c in st.conditions
            )

        await wait_for(back, timeout=delay + 40, what="gang 1 restarted and Available again")
        took = time.monotonic() - broken
        print(f"gang 1 Available again {took:.1f}s after the crash")
        # the new pods did take their time: this is the case the test is about
        assert took >= delay, took
        await cluster.wait_available(SET, timeout=30)
        assert await _gang_restarts(cluster) == 1

        async def one_event() -> int:
            return await _restart_events(cluster)

        assert await wait_for(one_event, timeout=15, what="a GangRestart Event") == 1
        assert await _uids(cluster, _gang(0)) == gang0, "gang 0 was touched"
        seen = {n: len(tracker.uids_seen.get(n, set())) for n in gang1}
        # each pod of gang 1 once recreated; the crashed one perhaps replaced once before
        crashed = f"{SET}-1-worker-0"
        assert all(n == 2 for name, n in seen.items() if name != crashed), seen
        assert 2 <= seen[crashed] <= 3, seen
        await _not_true(cluster, "GangRestarting")


# --- c: start order after a restart ----------------------------------------------------------


async def test_a_restarted_gang_starts_in_order(
    cluster: Cluster, kubeconfig: str, namespace: str, start_delay: str
) -> None:
    delay = 10.0
    body = _body(replicas=1, policy=POLICY, startup="InOrder")
    _delayed(body, f"{delay:.0f}s", "leader")

    # For each restart count: when its leader turned Ready; and every worker created before.
    leader_ready: dict[str, float] = {}
    early: list[str] = []
    created: list[tuple[str, str, float]] = []

    def on(kind: str, old: Pod | None, new: Pod) -> None:
        if kind == "DELETED":
            return
        role = new.metadata.labels.get(labels.LABEL_CLIQUE)
        epoch = new.metadata.annotations.get(labels.ANNOTATION_GANG_RESTARTS, "0")
        if role == "leader" and new.is_ready:
            leader_ready.setdefault(epoch, time.monotonic())
        if role == "worker" and kind == "ADDED":
            created.append((new.metadata.name, epoch, time.monotonic()))
            if epoch not in leader_ready:
                early.append(f"{new.metadata.name} (restart {epoch})")

    tracker = PodTracker(cluster.client, namespace, pods_per_gang=3)
    tracker.informer.add_handler(on)
    async with running_operator(kubeconfig, namespace, status_hold=0.0), tracker:
        await cluster.apply(body)
        await cluster.wait_available(SET, timeout=delay + 40)
        assert not early, f"workers created before their leader was Ready: {early}"
        before = await _uids(cluster)

        await _break(cluster, f"{SET}-0-worker-1", "unready")

        async def restarted_and_back() -> bool:
            if early:
                return True  # the answer is known: fail below, with the names
            if await _gang_restarts(cluster) < 1 or "1" not in leader_ready:
                return False
            live = await _live(cluster)
            return (
                len(live) == 3
                and not set(before.values()) & {p["metadata"]["uid"] for p in live.values()}
                and all(_ready(p) for p in live.values())
            )

        await wait_for(restarted_and_back, timeout=delay + 40, what="gang 0 restarted, Ready")
        assert not early, f"workers created before their leader was Ready: {early}"
        after = [(n, t - leader_ready["1"]) for n, e, t in created if e == "1"]
        print("workers of restart 1, created (s) after their leader was Ready:", after)
        assert sorted(n for n, _ in after) == [f"{SET}-0-worker-0", f"{SET}-0-worker-1"]
        await cluster.wait_available(SET, timeout=30)
        assert await _gang_restarts(cluster) == 1
