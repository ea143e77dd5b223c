"""How long a CliqueSet gathers its children's events before it plans again: short while
it writes or rolls, long (up to 10 s for the biggest sets) while it only waits for its
pods, so that a 10,000-pod deploy does not plan a 5,000-gang set every second."""

from __future__ import annotations

import pytest

from cliques.controllers.base.actions import Create, Patch
from cliques.controllers.cliqueset import controller as ctl
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.kube.resources import CLIQUES

from .planner_fixtures import cliqueset, gangs, services
from .planner_fixtures import set_snapshot as snap


@pytest.mark.parametrize(
    ("cost", "waiting", "expected"),
    [
        (0.001, False, 0.5),  # a small set: the floor
        (0.001, True, 0.5),
        (0.040, False, 0.8),  # 20x its plan
        (0.090, False, 1.0),  # ... up to the busy ceiling
        (0.040, True, 4.0),  # 100x its plan while it only waits
        (0.090, True, 9.0),
        (0.500, True, 10.0),  # ... up to 10 s
    ],
)
def test_the_window_grows_with_the_plan_cost_and_more_while_waiting(
    cost: float, waiting: bool, expected: float
) -> None:
    assert ctl.child_debounce(cost, waiting, 0.5, 1.0) == pytest.approx(expected)


def test_a_ceiling_set_above_ten_seconds_holds_while_waiting_too() -> None:
    assert ctl.child_debounce(0.5, True, 0.5, 30.0) == pytest.approx(30.0)


def _settled_plan() -> tuple[object, cliqueset_planner.CliqueSetPlan]:
    cqs = cliqueset(replicas=2)
    first = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    cqs.status = first.status
    return cqs, cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))


def test_a_plan_with_nothing_to_write_only_waits() -> None:
    cqs, plan = _settled_plan()
    assert plan.writes == 0
    assert ctl.only_waits(cqs, plan, expectations_satisfied=True)  # type: ignore[arg-type]


def test_writes_unseen_writes_requeues_and_rollouts_do_not_wait() -> None:
    cqs, plan = _settled_plan()
    assert not ctl.only_waits(cqs, plan, expectations_satisfied=False)  # type: ignore[arg-type]
    plan.creates.append(Create(CLIQUES, "x", {}, "uid"))
    assert not ctl.only_waits(cqs, plan, True)  # type: ignore[arg-type]
    plan.creates.clear()
    plan.patches.append(Patch(CLIQUES, "x", {}))
    assert not ctl.only_waits(cqs, plan, True)  # type: ignore[arg-type]
    plan.patches.clear()
    plan.requeue_after = 5.0
    assert not ctl.only_waits(cqs, plan, True)  # type: ignore[arg-type]


def test_a_set_rolling_its_gangs_does_not_wait() -> None:
    cqs = cliqueset(replicas=2)
    plan = cliqueset_planner.plan(snap(cqs, gangs(2, hash_="h0"), services=services(2)))
    assert plan.status is not None
    progressing = [c for c in plan.status.conditions if c.type == "Progressing"]
    assert progressing[0].reason == "RollingUpdate"
    plan.patches.clear()  # even a rolling plan that writes nothing this time
    assert not ctl.only_waits(cqs, plan, True)
