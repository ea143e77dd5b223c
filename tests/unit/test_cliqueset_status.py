"""Table tests of the CliqueSet status: gang counts and conditions."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cliques.api.clique import Clique
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import status as cliqueset_status

from .planner_fixtures import HASHES, clique, cliqueset, gangs, services
from .planner_fixtures import set_snapshot as snap


def test_status_counts_and_conditions() -> None:
    cqs = cliqueset(replicas=3)
    cl = gangs(3)
    cl[5] = clique(2, "worker", replicas=2, ready=False, ready_reason="BelowMinAvailable")
    plan = cliqueset_planner.plan(snap(cqs, cl, services=services(3)))
    st = plan.status
    assert (st.replicas, st.ready_replicas, st.available_replicas) == (3, 2, 2)
    conds = {c.type: c for c in st.conditions}
    assert conds["Available"].status == "False"
    assert conds["Degraded"].status == "True" and "2/worker" in conds["Degraded"].message
    assert st.selector == "cliques.dev/cliqueset=llama"


def _one_below_min() -> list[Clique]:
    cl = gangs(2)
    cl[1] = clique(0, "worker", replicas=2, ready=False, ready_reason="BelowMinAvailable")
    return cl


@pytest.mark.parametrize(
    ("replicas", "cliques", "hashes", "expected"),
    [
        pytest.param(
            2,
            lambda: gangs(2),
            HASHES,
            {
                "Available": ("True", "AllGangsAvailable"),
                "Progressing": ("False", "Complete"),
                "Degraded": ("False", "AsExpected"),
            },
            id="steady",
        ),
        pytest.param(
            3,
            lambda: gangs(2),
            HASHES,
            {
                "Available": ("False", "GangsUnavailable"),
                "Progressing": ("True", "Scaling"),
                "Degraded": ("False", "AsExpected"),
            },
            id="scaling-up",
        ),
        pytest.param(
            2,
            lambda: gangs(2),
            {"leader": "h2", "worker": "h2"},
            {
                "Available": ("True", "AllGangsAvailable"),
                "Progressing": ("True", "RollingUpdate"),
                "Degraded": ("False", "AsExpected"),
            },
            id="rolling",
        ),
        pytest.param(
            2,
            _one_below_min,
            HASHES,
            {
                "Available": ("False", "GangsUnavailable"),
                "Progressing": ("True", "Scaling"),
                "Degraded": ("True", "BelowMinAvailable"),
            },
            id="degraded",
        ),
    ],
)
def test_conditions(
    replicas: int,
    cliques: Callable[[], list[Clique]],
    hashes: dict[str, str],
    expected: dict[str, tuple[str, str]],
) -> None:
    cqs = cliqueset(replicas=replicas)
    st = cliqueset_planner.plan(
        snap(cqs, cliques(), services=services(replicas), hashes=hashes)
    ).status
    assert st is not None
    # (GangScheduling, which the planner adds, is tested in test_gang_scheduling_plan.py)
    got = {c.type: (c.status, c.reason) for c in st.conditions if c.type != "GangScheduling"}
    assert got == expected


def test_an_unchanged_condition_keeps_its_transition_time() -> None:
    cqs = cliqueset(replicas=2)
    first = cliqueset_status.invalid(cqs, "startsAfter cycle", now="2030-01-01T00:00:00Z")
    assert {c.last_transition_time for c in first.conditions} == {"2030-01-01T00:00:00Z"}
    cqs.status = first
    again = cliqueset_status.invalid(cqs, "startsAfter cycle", now="2031-01-01T00:00:00Z")
    assert again == first


@pytest.mark.parametrize(("startup", "same"), [("AnyOrder", True), ("InOrder", False)])
def test_set_hash_is_by_name_unless_in_order(startup: str, same: bool) -> None:
    """The gang template hash: the order of the cliques only counts for InOrder."""
    forward = cliqueset(startup=startup, roles=(("leader", 1), ("worker", 2))).spec
    backward = cliqueset(startup=startup, roles=(("worker", 2), ("leader", 1))).spec
    hashes = {"leader": "a", "worker": "b"}
    equal = cliqueset_status.set_hash(forward, hashes) == cliqueset_status.set_hash(
        backward, hashes
    )
    assert equal is same
