"""Pods that keep finishing at one index are replaced ever more slowly (pure)."""

from __future__ import annotations

import pytest

from cliques.api import labels
from cliques.api.meta import find_condition
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique import status as clique_status
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.features import pod_backoff
from cliques.kube.resources import CLIQUES

from .planner_fixtures import NOW, clique, pod

# NOW is 2026-11-22T08:00:00Z
CREATED = {0: "2026-11-22T08:00:00Z", 5: "2026-11-22T07:59:55Z", 60: "2026-11-22T07:59:00Z"}


@pytest.mark.parametrize(
    ("in_a_row", "lived", "wait", "recorded"),
    [
        (0, 0.0, 0.0, 1),  # the first finish: replaced at once
        (1, 0.0, 10.0, 2),  # the second in a row: 10 s after the pod was created
        (1, 4.0, 6.0, 2),
        (1, 10.0, 0.0, 2),
        (2, 5.0, 15.0, 3),
        (3, 0.0, 40.0, 4),
        (20, 0.0, 300.0, 21),  # capped at five minutes
        (5, 600.0, 0.0, 1),  # a pod that ran ten minutes starts the count again
        (3, None, 0.0, 4),  # age unknown: replaced at once, still counted
    ],
)
def test_decide(in_a_row: int, lived: float | None, wait: float, recorded: int) -> None:
    assert pod_backoff.decide(in_a_row, lived) == (wait, recorded)


def test_counts_round_trip_and_ignore_garbage() -> None:
    assert pod_backoff.parse("3:2,7:1") == {3: 2, 7: 1}
    assert pod_backoff.parse("x:1,4:-1,5:0,,6:2:1,8:3") == {8: 3}
    assert pod_backoff.encode({7: 1, 3: 2, 4: 0}) == "3:2,7:1"
    assert pod_backoff.age("2026-11-22T07:59:55Z", NOW) == 5.0
    assert pod_backoff.age("garbage", NOW) is None


def _snap(finished: str, created: str) -> CliqueSnapshot:
    c = clique(0, "worker", replicas=2, annotations={labels.ANNOTATION_FINISHED_PODS: finished})
    dead = pod(c, 1, phase="Failed", ready=False)
    dead.metadata.creation_timestamp = created
    return CliqueSnapshot(clique=c, pods=[pod(c, 0), dead], now=NOW, template_hash="h1")


def test_a_first_finish_is_replaced_at_once_and_counted() -> None:
    plan = clique_planner.plan(_snap("", CREATED[5]))
    assert [d.name for d in plan.deletes] == ["llama-0-worker-1"]
    (patch,) = [p for p in plan.patches if p.resource == CLIQUES]
    assert patch.patch == {"metadata": {"annotations": {labels.ANNOTATION_FINISHED_PODS: "1:1"}}}
    assert plan.requeue_after == 0 and not plan.events


def test_a_repeat_waits_holding_its_index_and_says_so() -> None:
    plan = clique_planner.plan(_snap("1:2", CREATED[5]))  # 20 s back-off, 5 s lived
    assert not plan.deletes and not plan.creates
    assert plan.requeue_after == 15.0
    assert plan.status is not None
    cond = find_condition(plan.status.conditions, clique_status.CONDITION_POD_BACKOFF)
    assert cond is not None and cond.status == "True" and "index(es) 1" in cond.message


def test_a_repeat_past_its_back_off_is_replaced_with_an_event() -> None:
    plan = clique_planner.plan(_snap("1:2", CREATED[60]))
    assert [d.name for d in plan.deletes] == ["llama-0-worker-1"]
    assert [e.reason for e in plan.events] == ["BackOff"]
    (patch,) = [p for p in plan.patches if p.resource == CLIQUES]
    assert patch.patch["metadata"]["annotations"][labels.ANNOTATION_FINISHED_PODS] == "1:3"
    assert plan.status is not None
    assert find_condition(plan.status.conditions, clique_status.CONDITION_POD_BACKOFF) is None


def test_counts_of_indices_scaled_away_are_dropped() -> None:
    c = clique(0, "worker", replicas=1, annotations={labels.ANNOTATION_FINISHED_PODS: "0:1,4:2"})
    plan = clique_planner.plan(CliqueSnapshot(clique=c, pods=[pod(c, 0)], now=NOW))
    (patch,) = [p for p in plan.patches if p.resource == CLIQUES]
    assert patch.patch["metadata"]["annotations"][labels.ANNOTATION_FINISHED_PODS] == "0:1"
