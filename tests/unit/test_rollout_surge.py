"""`updateStrategy.maxSurge`: a roll makes surge gangs on the new template at the indices
above `replicas` first, rolls an outdated gang only as a surge gang (or maxUnavailable)
allows, and removes the surge gangs, highest index first, once every gang below
`replicas` is updated and available; percents round up; the partition and Recreate."""

from __future__ import annotations

from typing import Any

import pytest

from cliques.api import labels
from cliques.api.cliqueset_status import CONDITION_PROGRESSING
from cliques.api.meta import find_condition
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import surge as surge_gangs
from cliques.controllers.cliqueset.snapshot import CliqueSetPlan
from cliques.kube.resources import CLIQUES

from .planner_fixtures import clique, cliqueset, gangs, services, template_patched
from .planner_fixtures import set_snapshot as snap

H2 = {"leader": "h2", "worker": "h2"}


def gang(index: int, *, hash_: str = "h2", ready: bool = True) -> list[Any]:
    """Gang `index` (leader 1 + worker 2) on template `hash_`, available or starting."""
    return [
        clique(index, "leader", replicas=1, hash_=hash_, ready=ready),
        clique(index, "worker", replicas=2, hash_=hash_, ready=ready),
    ]


def plan(cliques: list[Any], *, replicas: int = 4, **spec: Any) -> CliqueSetPlan:
    spec.setdefault("max_unavailable", 0)
    spec.setdefault("max_surge", 1)
    cqs = cliqueset(replicas=replicas, **spec)
    n = max([c.spec.gang_index for c in cliques], default=-1) + 1
    return cliqueset_planner.plan(snap(cqs, cliques, services=services(n), hashes=H2))


def made_gangs(out: CliqueSetPlan) -> list[int]:
    return sorted({c.body["spec"]["gangIndex"] for c in out.creates if c.resource == CLIQUES})


def deleted(out: CliqueSetPlan) -> list[str]:
    return [d.name for d in out.deletes if d.resource == CLIQUES]


@pytest.mark.parametrize(
    ("value", "replicas", "gangs_"),
    [
        (0, 4, 0),
        (2, 4, 2),
        ("25%", 4, 1),
        ("30%", 4, 2),  # rounded up, as a Deployment's maxSurge
        ("1%", 4, 1),
        ("0%", 4, 0),
        ("100%", 3, 3),
        ("150%", 2, 3),
        ("25%", 0, 0),
        ("x", 4, 0),
        ("3", 4, 0),  # (a string must be a percent: the CRD refuses it)
        (-1, 4, 0),
    ],
)
def test_max_surge_resolves_to_gangs(value: int | str, replicas: int, gangs_: int) -> None:
    assert surge_gangs.resolve(value, replicas) == gangs_


def test_with_max_unavailable_0_the_surge_gang_comes_first_and_nothing_rolls() -> None:
    out = plan(gangs(4))
    assert made_gangs(out) == [4]
    assert template_patched(out) == []
    bodies = [c.body for c in out.creates if c.resource == CLIQUES]
    assert {b["metadata"]["labels"][labels.LABEL_TEMPLATE_HASH] for b in bodies} == {"h2"}
    assert {b["metadata"]["name"] for b in bodies} == {"llama-4-leader", "llama-4-worker"}


def test_no_roll_while_the_surge_gang_is_not_available() -> None:
    out = plan(gangs(4) + gang(4, ready=False))
    assert template_patched(out) == []
    assert made_gangs(out) == [] and deleted(out) == []


def test_an_available_surge_gang_lets_one_outdated_gang_roll() -> None:
    out = plan(gangs(4) + gang(4))
    assert template_patched(out) == ["llama-0-leader", "llama-0-worker"]
    assert deleted(out) == []


def test_a_rolled_gang_on_its_way_up_holds_the_next() -> None:
    cliques = gang(0, ready=False) + gangs(4)[2:] + gang(4)
    assert template_patched(plan(cliques)) == []


def test_the_next_gang_rolls_once_the_rolled_one_is_back() -> None:
    cliques = gang(0) + gangs(4)[2:] + gang(4)
    assert template_patched(plan(cliques)) == ["llama-1-leader", "llama-1-worker"]


def test_never_more_than_max_surge_extra_gangs() -> None:
    assert made_gangs(plan(gangs(4), max_surge=2)) == [4, 5]
    # fewer when fewer gangs are left to roll
    one_left = gang(0) + gang(1) + gang(2) + gangs(4)[6:]
    assert made_gangs(plan(one_left, max_surge=3)) == [4]
    # a surge gang beyond maxSurge (maxSurge lowered) goes, the highest first
    out = plan(gangs(4) + gang(4) + gang(5), max_surge=1)
    assert deleted(out) == ["llama-5-leader", "llama-5-worker"]


def test_two_available_surge_gangs_roll_two_gangs() -> None:
    out = plan(gangs(4) + gang(4) + gang(5), max_surge=2)
    assert template_patched(out) == [f"llama-{g}-{r}" for g in (0, 1) for r in ("leader", "worker")]


def test_with_max_unavailable_1_a_gang_rolls_while_the_surge_gang_starts() -> None:
    out = plan(gangs(4), max_unavailable=1)
    assert made_gangs(out) == [4]
    assert template_patched(out) == ["llama-0-leader", "llama-0-worker"]
    # and a second once the surge gang is available, the first still starting
    out = plan(gang(0, ready=False) + gangs(4)[2:] + gang(4), max_unavailable=1)
    assert template_patched(out) == ["llama-1-leader", "llama-1-worker"]


def test_the_surge_gang_stays_until_every_gang_is_available_again() -> None:
    last_starting = gang(0) + gang(1) + gang(2) + gang(3, ready=False) + gang(4)
    out = plan(last_starting)
    assert deleted(out) == [] and template_patched(out) == []
    done = gang(0) + gang(1) + gang(2) + gang(3) + gang(4)
    assert deleted(plan(done)) == ["llama-4-leader", "llama-4-worker"]


def test_surge_gangs_go_highest_index_first() -> None:
    last_starting = gang(0) + gang(1) + gang(2) + gang(3, ready=False) + gang(4) + gang(5)
    out = plan(last_starting, max_surge=2)
    assert deleted(out) == ["llama-5-leader", "llama-5-worker"]


def test_the_whole_gang_above_a_broken_one_stays_while_a_gang_below_is_missing() -> None:
    """Found by the simulator: a scale-down (2 to 1) during a roll with surge gangs 2 and 3,
    gang 0 down, gang 1 (now above `replicas`) broken, surge gang 2 whole. The surge gangs
    kept reach the whole one (gang 3 goes, gangs 1 and 2 stay) instead of the first one
    above `replicas` (which deleted the only whole gang)."""
    cliques = gang(0, ready=False) + gang(1, ready=False) + gang(2) + gang(3, ready=False)
    out = plan(cliques, replicas=1, max_surge=2)
    assert deleted(out) == ["llama-3-leader", "llama-3-worker"]
    # once gang 0 is back, every gang above `replicas` goes, highest first
    out = plan(gang(0) + gang(1, ready=False) + gang(2), replicas=1, max_surge=2)
    assert sorted(deleted(out)) == sorted(
        ["llama-1-leader", "llama-1-worker", "llama-2-leader", "llama-2-worker"]
    )


def test_partition_and_surge() -> None:
    # only gang 3 rolls: one surge gang, then gang 3
    out = plan(gangs(4), partition=3, max_surge=2)
    assert made_gangs(out) == [4] and template_patched(out) == []
    out = plan(gangs(4) + gang(4), partition=3)
    assert template_patched(out) == ["llama-3-leader", "llama-3-worker"]
    # every gang held: no roll, no surge gang
    out = plan(gangs(4), partition=4)
    assert made_gangs(out) == [] and template_patched(out) == []


def test_recreate_ignores_max_surge() -> None:
    out = plan(gangs(4), strategy="Recreate", max_unavailable=1)
    assert made_gangs(out) == []
    assert len(template_patched(out)) == 8


def test_percent_surge_in_the_planner() -> None:
    assert made_gangs(plan(gangs(4), max_surge="50%")) == [4, 5]
    assert made_gangs(plan(gangs(4), max_surge="1%")) == [4]


def test_without_surge_max_unavailable_0_still_rolls_one() -> None:
    out = plan(gangs(4), max_surge=0)
    assert made_gangs(out) == []
    assert template_patched(out) == ["llama-0-leader", "llama-0-worker"]


def test_the_status_counts_the_users_gangs_and_the_surge_apart() -> None:
    out = plan(gangs(4) + gang(4))
    assert out.status is not None
    assert (out.status.replicas, out.status.surge_replicas) == (4, 1)
    assert out.status.available_replicas == 4 and out.status.updated_replicas == 0
    # every gang done, the surge gang still standing in for gang 3
    out = plan(gang(0) + gang(1) + gang(2) + gang(3, ready=False) + gang(4))
    assert out.status is not None
    assert (out.status.replicas, out.status.surge_replicas) == (4, 1)
    cond = find_condition(out.status.conditions, CONDITION_PROGRESSING)
    assert cond is not None and (cond.status, cond.reason) == ("True", "RollingUpdate")
    assert "1 surge gang(s) stand in" in cond.message
