"""failurePolicy with the operator on the real control plane: a gang below minAvailable
for the breach window is recreated whole (`RecreateGang`), other gangs untouched, until
`maxGangRestarts` is used up and the gang is reported `GangFailed` and left as it is;
the breach clock survives an operator restart; a Failed pod replaced within the window
restarts nothing; without the policy a lost pod is replaced alone.

KWOK keeps a pod's status as it is patched through the pods/status subresource (its
stages only act on pods without a podIP or being deleted), so a pod patched Ready=False
stays not ready: its Clique drops below minAvailable (Ready=False, BelowMinAvailable)
until the pod is replaced.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec

from cliques.api import labels
from cliques.kube.resources import CLIQUES, EVENTS, PODS
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

SET = "train"
WINDOW = 2  # minAvailableBreachedSeconds
POLICY = {
    "restartPolicy": "RecreateGang",
    "minAvailableBreachedSeconds": WINDOW,
    "maxGangRestarts": 2,
    "restartBackoff": {"initialSeconds": 1, "maxSeconds": 2},
}
#: How long "nothing happens" is watched: longer than a breach window plus the backoff.
QUIET_WINDOW = 6.0


def _body(**failure_policy: Any) -> dict[str, Any]:
    body = cliqueset(SET, replicas=2, leader=1, workers=2)
    if failure_policy:
        body["spec"]["failurePolicy"] = failure_policy
    return body


async def _uids(cluster: Cluster, gang: int) -> dict[str, str]:
    """name -> uid of the gang's pods not being deleted."""
    pods = await cluster.list(PODS, dict, f"{labels.LABEL_GANG_INDEX}={gang}")
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


async def _break(cluster: Cluster, name: str, how: str = "unready") -> None:
    """Make a pod not ready (Ready=False) or Failed, through pods/status, as a kubelet would."""
    if how == "failed":
        patch: dict[str, Any] = {"status": {"phase": "Failed"}}
        kind = "merge"
    else:
        patch = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
        kind = "strategic"
    await cluster.client.patch(
        PODS, cluster.namespace, name, patch, dict, patch_type=kind, sub="status"
    )


async def _recreated(cluster: Cluster, gang: int, old: dict[str, str], timeout: float) -> dict:
    """Wait until every pod of the gang has a new uid at its old name, and is ready."""

    async def check() -> dict[str, str] | None:
        pods = await cluster.list(PODS, dict, f"{labels.LABEL_GANG_INDEX}={gang}")
        now = {p["metadata"]["name"]: p for p in pods}
        if sorted(now) != sorted(old):
            return None
        for name, pod in now.items():
            ready = any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in pod.get("status", {}).get("conditions", [])
            )
            if pod["metadata"]["uid"] == old[name] or not ready:
                return None
            if pod["metadata"].get("deletionTimestamp"):
                return None
        return {name: pod["metadata"]["uid"] for name, pod in now.items()}

    return await wait_for(check, timeout=timeout, what=f"gang {gang} recreated whole")


async def _events(cluster: Cluster, reason: str) -> list[dict[str, Any]]:
    raw = await cluster.client.list_page(EVENTS, cluster.namespace, limit=500)
    items = msgspec.json.decode(raw, type=dict[str, Any])["items"]
    return [
        e
        for e in items
        if e.get("reason") == reason and e.get("involvedObject", {}).get("kind") == "CliqueSet"
    ]


async def _condition_true(cluster: Cluster, type_: str, timeout: float) -> Any:
    async def check() -> Any:
        cond = await cluster.condition(SET, type_)
        return cond if cond is not None and cond.status == "True" else None

    return await wait_for(check, timeout=timeout, what=f"{SET} {type_}=True")


async def _settled(cluster: Cluster, restarts: int) -> None:
    """Wait until the set counts `restarts` gang restarts and is Available again (a status
    of before the restart may still say Available)."""

    async def counted() -> bool:
        cqs = await cluster.cliqueset(SET)
        return cqs.status is not None and cqs.status.gang_restarts == restarts

    await wait_for(counted, timeout=30, what=f"status.gangRestarts {restarts}")
    await cluster.wait_available(SET, timeout=60)
    cqs = await cluster.cliqueset(SET)
    assert cqs.status is not None and cqs.status.gang_restarts == restarts, cqs.status


def _leader(gang: int) -> str:
    return labels.pod_name(labels.clique_name(SET, gang, "leader"), 0)


async def _restart_once(cluster: Cluster, expected: int) -> dict[str, str]:
    """Break gang 1, wait for its recreation; check gang 0, the count and Available."""
    gang0 = await _uids(cluster, 0)
    gang1 = await _uids(cluster, 1)
    assert len(gang0) == 3 and len(gang1) == 3, (gang0, gang1)
    started = time.monotonic()
    await _break(cluster, _leader(1))
    new = await _recreated(cluster, 1, gang1, timeout=60)
    took = time.monotonic() - started
    print(f"restart {expected}: gang 1 recreated {took:.1f}s after the break")
    # not before the breach window and the backoff (less a second: times are in seconds)
    assert took >= WINDOW + min(2 ** (expected - 1), 2) - 1.0, took
    assert not set(new.values()) & set(gang1.values()), "a pod of gang 1 survived the restart"
    await _settled(cluster, restarts=expected)
    assert await _uids(cluster, 0) == gang0, "gang 0 was touched"
    return new


async def test_recreate_gang_replaces_the_broken_gang_whole(cluster: Cluster, crds: str) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(_body(**POLICY))
        await cluster.wait_available(SET, timeout=90)
        await _restart_once(cluster, expected=1)

        async def event() -> list[dict[str, Any]]:
            return await _events(cluster, "GangRestart")

        found = await wait_for(event, timeout=30, what="a GangRestart Event")
        assert "gang 1" in found[0]["message"], found[0]
        assert found[0]["type"] == "Warning"
        failed = await cluster.condition(SET, "GangFailed")
        assert failed is not None and failed.status == "False", failed


async def test_gang_failed_after_max_restarts_is_left_alone(cluster: Cluster, crds: str) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(_body(**POLICY))
        await cluster.wait_available(SET, timeout=90)
        for n in (1, 2):
            await _restart_once(cluster, expected=n)

        gang0 = await _uids(cluster, 0)
        await _break(cluster, _leader(1))
        cond = await _condition_true(cluster, "GangFailed", timeout=30)
        assert cond.reason == "MaxGangRestartsReached", cond
        assert "gang(s) 1 " in cond.message, cond
        left = await _uids(cluster, 1)
        deadline = time.monotonic() + QUIET_WINDOW
        while time.monotonic() < deadline:
            assert await _uids(cluster, 1) == left, "a failed gang was touched"
            await asyncio.sleep(0.5)
        cqs = await cluster.cliqueset(SET)
        assert cqs.status is not None and cqs.status.gang_restarts == 2, cqs.status
        assert await _uids(cluster, 0) == gang0, "gang 0 was touched"
        restarting = await cluster.condition(SET, "GangRestarting")
        assert restarting is not None and restarting.status == "False", restarting


async def _marks(cluster: Cluster, gang: int) -> list[dict[str, str]]:
    cliques = await cluster.list(CLIQUES, dict, f"{labels.LABEL_GANG_INDEX}={gang}")
    return [c["metadata"].get("annotations", {}) for c in cliques]


async def test_the_breach_clock_survives_an_operator_restart(cluster: Cluster, crds: str) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(_body(**POLICY))
        await cluster.wait_available(SET, timeout=90)
        gang1 = await _uids(cluster, 1)
        await _break(cluster, _leader(1))

        async def marked() -> bool:
            marks = await _marks(cluster, 1)
            return len(marks) == 2 and all(labels.ANNOTATION_BREACH_SINCE in m for m in marks)

        await wait_for(marked, timeout=30, what="gang 1's breach marked on its Cliques")
        cond = await _condition_true(cluster, "GangRestarting", timeout=30)
        assert "gang(s) 1 " in cond.message, cond
        broken = time.monotonic()
    # No operator while the restart falls due (window + backoff: 3 s after the mark).
    while time.monotonic() < broken + WINDOW + 1.5:
        assert await _uids(cluster, 1) == gang1, "recreated without an operator"
        await asyncio.sleep(0.5)
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        back = time.monotonic()

        async def restarted() -> bool:
            marks = await _marks(cluster, 1)
            return all(m.get(labels.ANNOTATION_GANG_RESTARTS) == "1" for m in marks)

        await wait_for(restarted, timeout=30, what="gang 1's restart")
        took = time.monotonic() - back
        print(f"restarted {took:.1f}s after the new operator was ready")
        # a clock started again by the new operator would wait the whole window + backoff
        assert took < WINDOW + 1.0, took
        await _recreated(cluster, 1, gang1, timeout=60)
        await _settled(cluster, restarts=1)


async def test_a_failed_pod_replaced_in_time_restarts_nothing(cluster: Cluster, crds: str) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(_body(**POLICY))
        await cluster.wait_available(SET, timeout=90)
        gang1 = await _uids(cluster, 1)
        lost = _leader(1)
        await _break(cluster, lost, how="failed")

        async def replaced() -> dict[str, str] | None:
            now = await _uids(cluster, 1)
            return now if now.keys() == gang1.keys() and now[lost] != gang1[lost] else None

        now = await wait_for(replaced, timeout=30, what=f"{lost} replaced")
        # longer than the breach window and the backoff: nothing else is recreated
        deadline = time.monotonic() + QUIET_WINDOW
        while time.monotonic() < deadline:
            assert await _uids(cluster, 1) == now, "the gang was restarted"
            await asyncio.sleep(0.5)
        cqs = await cluster.wait_available(SET, timeout=60)
        assert cqs.status is not None and cqs.status.gang_restarts == 0
        assert not any(labels.ANNOTATION_BREACH_SINCE in m for m in await _marks(cluster, 1))


async def test_without_the_policy_a_lost_pod_is_replaced_alone(cluster: Cluster, crds: str) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(_body())
        await cluster.wait_available(SET, timeout=90)
        gang0 = await _uids(cluster, 0)
        gang1 = await _uids(cluster, 1)
        lost = _leader(1)
        await _break(cluster, lost, how="failed")

        async def replaced() -> dict[str, str] | None:
            now = await _uids(cluster, 1)
            return now if now.keys() == gang1.keys() and now[lost] != gang1[lost] else None

        now = await wait_for(replaced, timeout=30, what=f"{lost} replaced")
        await cluster.wait_available(SET, timeout=60)
        assert {k: v for k, v in now.items() if k != lost} == {
            k: v for k, v in gang1.items() if k != lost
        }, "another pod of the gang was recreated"
        assert await _uids(cluster, 0) == gang0
        cqs = await cluster.cliqueset(SET)
        assert cqs.status is not None and cqs.status.gang_restarts == 0
        assert await cluster.condition(SET, "GangRestarting") is None
        assert not await _events(cluster, "GangRestart")
