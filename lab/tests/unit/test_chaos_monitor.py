"""The chaos monitor's judgement of pod events, fed by hand: which deletes are meant, which
are violations, what counts against a rollout's maxUnavailable."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from cliques.api.clique import Clique
from cliques.api.pod import Pod
from cliques.controllers.base.revision import Hasher
from cliques_lab.bench.chaos_actions import CliqueShape, Shape
from cliques_lab.bench.chaos_monitor import Monitor, desired_of

SHAPE = Shape("s", 2, (CliqueShape("lead", 1, 1),), max_unavailable=1)


def pod(
    gang: int, hash_: str, uid: str, *, ready: bool = True, gone: bool = False, clique: str = ""
) -> Pod:
    meta: dict[str, Any] = {
        "name": f"s-{gang}-lead-0",
        "uid": uid,
        "labels": {
            "cliques.dev/cliqueset": "s",
            "cliques.dev/gang-index": str(gang),
            "cliques.dev/clique": "lead",
            "cliques.dev/pod-index": "0",
            "cliques.dev/template-hash": hash_,
        },
    }
    if gone:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if clique:
        meta["ownerReferences"] = [
            {"apiVersion": "cliques.dev/v1alpha1", "kind": "Clique", "name": "s-0-lead"}
            | {"uid": clique, "controller": True}
        ]
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return msgspec.convert({"metadata": meta, "status": status}, Pod)


def monitor(shape: Shape = SHAPE) -> tuple[Monitor, str]:
    m = Monitor(None, "ns")  # type: ignore[arg-type]  # never started: fed by hand
    want = desired_of(shape, Hasher())
    m.desire("s", want)
    return m, want.cliques["lead"][2]


def test_a_delete_nobody_meant_is_a_violation() -> None:
    m, h = monitor()
    m._on("ADDED", None, pod(0, h, "a"))
    m._on("DELETED", None, pod(0, h, "a"))
    assert len(m.violations) == 1 and "nothing meant" in m.violations[0]


def test_a_reorder_only_edit_means_no_delete() -> None:
    m, h = monitor()
    m._on("ADDED", None, pod(0, h, "a"))
    m.desire("s", desired_of(dataclasses.replace(SHAPE, reordered=True), Hasher()))
    m._on("DELETED", None, pod(0, h, "a"))
    assert m.violations


def test_scale_down_set_delete_and_pod_loss_are_meant() -> None:
    m, h = monitor()
    for uid, gang in (("a", 0), ("b", 1)):
        m._on("ADDED", None, pod(gang, h, uid))
    m.desire("s", desired_of(dataclasses.replace(SHAPE, replicas=1), Hasher()))
    m._on("DELETED", None, pod(1, h, "b"))
    m.doom("a")
    m._on("DELETED", None, pod(0, h, "a"))
    assert m.violations == []
    assert m.counts["pods deleted: scaled down"] == 1
    assert m.counts["pods deleted: pod-loss"] == 1


def test_duplicates_are_reported() -> None:
    m, h = monitor()
    m._on("ADDED", None, pod(0, h, "a"))
    m._on("ADDED", None, pod(0, h, "b"))
    assert any("duplicate" in v for v in m.violations)


def test_a_rollout_taking_down_more_gangs_than_allowed_is_a_violation() -> None:
    m, h = monitor()
    m._on("ADDED", None, pod(0, h, "a"))
    m._on("ADDED", None, pod(1, h, "b"))
    m.desire("s", desired_of(dataclasses.replace(SHAPE, image="busybox:9"), Hasher()))
    m._on("DELETED", None, pod(0, h, "a"))
    assert m.violations == [] and m.max_rollout_down == 1
    m._on("DELETED", None, pod(1, h, "b"))
    assert len(m.violations) == 1 and "maxUnavailable 1" in m.violations[0]


def test_a_gang_back_on_the_new_hash_frees_the_budget() -> None:
    m, h = monitor()
    m._on("ADDED", None, pod(0, h, "a"))
    m._on("ADDED", None, pod(1, h, "b"))
    new = desired_of(dataclasses.replace(SHAPE, image="busybox:9"), Hasher())
    m.desire("s", new)
    h2 = new.cliques["lead"][2]
    m._on("DELETED", None, pod(0, h, "a"))
    m._on("ADDED", None, pod(0, h2, "c", ready=False))
    m._on("MODIFIED", pod(0, h2, "c", ready=False), pod(0, h2, "c"))
    m._on("DELETED", None, pod(1, h, "b"))
    assert m.violations == [] and m.max_rollout_down == 1


def test_a_set_short_of_ready_pods_says_which_and_why() -> None:
    m, h = monitor()
    m.informer.store.upsert(pod(0, h, "a"))
    assert m.converged("s") == (
        "s: 1 pods missing or not Ready, 0 stale, 0 extra (s-1-lead-0 missing)"
    )
    unscheduled = pod(1, h, "b", ready=False)
    unscheduled.status.phase = "Pending"
    m.informer.store.upsert(unscheduled)
    assert m.converged("s") == (
        "s: 1 pods missing or not Ready, 0 stale, 0 extra (s-1-lead-0 Pending, not scheduled)"
    )
    unscheduled.spec.node_name = "n1"
    assert "(s-1-lead-0 Pending on n1, Ready=False)" in str(m.converged("s"))
    m.informer.store.upsert(pod(1, h, "b"))
    assert m.converged("s") is None


def _clique(uid: str) -> Clique:
    spec = {"cliqueName": "lead", "gangIndex": 0, "template": {}}
    return msgspec.convert({"metadata": {"name": "s-0-lead", "uid": uid}, "spec": spec}, Clique)


def test_the_clique_of_a_set_deleted_with_orphan_must_be_kept() -> None:
    m, h = monitor()
    m._on_clique("ADDED", None, _clique("c1"))
    m._on("ADDED", None, pod(0, h, "a", clique="c1"))
    m.deleted("s", "Orphan")
    # the garbage collector takes the orphan (its graph did not know it): not meant,
    # whichever watch tells first
    m._on_clique("DELETED", None, _clique("c1"))
    m._on("DELETED", None, pod(0, h, "a", clique="c1"))
    assert len(m.violations) == 1 and "nothing meant" in m.violations[0]


def test_what_a_late_operator_made_for_a_deleted_set_may_be_collected() -> None:
    m, h = monitor()
    m.deleted("s", "Orphan")
    m._on_clique("ADDED", None, _clique("c2"))  # made after the delete, from a stale cache
    m._on("ADDED", None, pod(0, h, "b", clique="c2"))
    m._on("DELETED", None, pod(0, h, "b", clique="c2"))
    m._on_clique("DELETED", None, _clique("c2"))
    m.settle()
    assert m.violations == []
    assert m.counts["pods deleted: made after its set's delete"] == 1


def test_a_delete_waits_for_its_clique_s_deletion_from_the_other_watch() -> None:
    m, h = monitor()
    m._on_clique("ADDED", None, _clique("c3"))
    m._on("ADDED", None, pod(0, h, "a", clique="c3"))
    m._on("DELETED", None, pod(0, h, "a", clique="c3"))
    assert m.violations == []  # pending: its Clique's deletion may come later
    m._on_clique("DELETED", None, _clique("c3"))
    m.settle()
    assert m.violations == [] and m.counts["pods deleted: owner deleted"] == 1


def test_a_delete_whose_clique_lives_on_is_a_violation_at_the_end() -> None:
    m, h = monitor()
    m._on_clique("ADDED", None, _clique("c4"))
    m._on("ADDED", None, pod(0, h, "a", clique="c4"))
    m._on("DELETED", None, pod(0, h, "a", clique="c4"))
    m.settle()
    assert len(m.violations) == 1 and "nothing meant" in m.violations[0]
