"""The gang-crash phase of `cliques bench scale` (pure parts): which pods crash and belong
to the crashed gangs for each kind, the crash as a pod status patch, the failure policy the
CliqueSets get, and how the phase's creates and deletes are judged."""

from __future__ import annotations

from typing import Any

from cliques_lab.bench import crash, kinds, workload
from cliques_lab.bench.workload import Shape

SHAPE = Shape(2, 3, 3)


def test_the_first_gangs_of_every_set_crash_at_least_one() -> None:
    assert crash.crashed_gangs(SHAPE, 2) == [0, 1]
    assert crash.crashed_gangs(SHAPE, 0) == [0]
    assert crash.crashed_gangs(SHAPE, 99) == [0, 1, 2]


def test_each_kind_names_its_leader_and_the_gang_s_pods() -> None:
    cqs = crash.gang_pods(kinds.CLIQUESET, SHAPE, [1])
    assert cqs == {
        "bench-0-1-leader-0": ["bench-0-1-leader-0", "bench-0-1-worker-0", "bench-0-1-worker-1"],
        "bench-1-1-leader-0": ["bench-1-1-leader-0", "bench-1-1-worker-0", "bench-1-1-worker-1"],
    }
    lws = crash.gang_pods(kinds.LEADERWORKERSET, SHAPE, [1])
    assert lws == {
        "bench-0-1": ["bench-0-1", "bench-0-1-1", "bench-0-1-2"],
        "bench-1-1": ["bench-1-1", "bench-1-1-1", "bench-1-1-2"],
    }
    for kind, gangs in ((kinds.CLIQUESET, cqs), (kinds.LEADERWORKERSET, lws)):
        named = {n for members in gangs.values() for n in members}
        assert named <= kind.desired_pods(SHAPE)


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "resourceVersion": "7"},
        "status": {
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
            ],
            "containerStatuses": [
                {"name": "main", "ready": True, "restartCount": 2, "image": "busybox:1.36"},
                {"name": "sidecar", "ready": True, "restartCount": 0},
            ],
        },
    }


def test_a_crash_is_a_restart_of_the_main_container_and_the_pod_not_ready() -> None:
    patch = crash.crash_status(_pod())
    assert patch["metadata"] == {"resourceVersion": "7"}
    conditions = {c["type"]: c["status"] for c in patch["status"]["conditions"]}
    assert conditions == {"PodScheduled": "True", "Ready": "False", "ContainersReady": "False"}
    main, sidecar = patch["status"]["containerStatuses"]
    assert (main["restartCount"], main["ready"], main["image"]) == (3, False, "busybox:1.36")
    assert sidecar == {"name": "sidecar", "ready": True, "restartCount": 0}


def test_cliquesets_recreate_a_breached_gang_and_lws_keeps_its_manifest() -> None:
    body = workload.manifest("bench-0", SHAPE)
    out = crash.failure_policy(body)
    assert out["spec"]["failurePolicy"] == {
        "restartPolicy": "RecreateGang",
        "minAvailableBreachedSeconds": crash.BREACH_SECONDS,
    }
    assert "failurePolicy" not in body["spec"]  # a copy
    lws = kinds.LEADERWORKERSET.manifest("bench-0", SHAPE, "busybox:1.36", "None", "")
    assert crash.failure_policy(lws) is lws


def test_only_the_crashed_gangs_pods_may_be_replaced_once() -> None:
    members = frozenset({"a", "b"})
    desired = {"a", "b", "c"}
    clean = workload.judge("gang-crash", ["a", "b"], ["a", "b"], desired, members)
    assert (clean.spurious_creates, clean.spurious_deletes, clean.replaced) == (0, 0, 2)
    bad = workload.judge("gang-crash", ["a", "a", "c"], ["a", "c"], desired, members)
    assert (bad.spurious_creates, bad.spurious_deletes, bad.replaced) == (2, 1, 2)
