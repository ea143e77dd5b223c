"""The bounds of a CliqueSet count what the operator makes (`api.sizes`,
`controllers.base.bounds`): a clique of a scaling group once per instance, an instance
count and a clique's pods at their autoscaling maxReplicas where that is higher. A set
past a bound is an InvalidSpec before any object is made. The CRD's side (the same counts
in CEL) is in tests/integration/test_crd_validation.py."""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api import sizes
from cliques.api.cliqueset import MAX_GANG_PODS, MAX_SET_CLIQUES, MAX_SET_PODS, CliqueSet
from cliques.api.cliqueset_status import REASON_INVALID_SPEC
from cliques.api.meta import find_condition
from cliques.controllers.base import bounds
from cliques.controllers.cliqueset import planner
from tests.unit.planner_fixtures import set_snapshot
from tests.unit.test_bounds import controller

POD = {"spec": {"containers": [{"name": "m", "image": "i"}]}}


def clique(name: str, replicas: int = 1, autoscale: int | None = None) -> dict[str, Any]:
    """A clique template of `replicas` pods, autoscaled up to `autoscale` pods if given."""
    out: dict[str, Any] = {"name": name, "replicas": replicas, "template": POD}
    if autoscale is not None:
        out["autoscaling"] = {"minReplicas": 1, "maxReplicas": autoscale}
    return out


def group(
    name: str, cliques: list[str], replicas: int = 1, autoscale: int | None = None
) -> dict[str, Any]:
    """A scaling group of `replicas` instances, autoscaled up to `autoscale` if given."""
    out: dict[str, Any] = {"name": name, "cliques": cliques, "replicas": replicas}
    if autoscale is not None:
        out["autoscaling"] = {"minReplicas": 1, "maxReplicas": autoscale}
    return out


def cliqueset(
    replicas: int,
    cliques: list[dict[str, Any]],
    groups: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> CliqueSet:
    return msgspec.convert(
        {
            "metadata": {"name": "big", "namespace": "ns", "uid": "u", "generation": 1},
            "spec": {
                "replicas": replicas,
                "template": {"cliques": cliques, "scalingGroups": list(groups)},
            },
        },
        CliqueSet,
    )


def counts(cqs: CliqueSet) -> tuple[int, int]:
    """(Cliques, pods) of one gang of `cqs`."""
    t = cqs.spec.template
    return sizes.gang_cliques(t.cliques, t.scaling_groups), sizes.gang_pods(
        t.cliques, t.scaling_groups
    )


def million() -> CliqueSet:
    """625 gangs of 16 cliques of 10 pods in 8 scaling groups of 100 instances: the CRD
    before it counted scaling groups took it (10,000 Cliques, 100,000 pods, 160 pods a
    gang as it counted), and it asks for 1,000,000 Cliques and 10,000,000 pods."""
    return cliqueset(
        625,
        [clique(f"c{i}", 10) for i in range(16)],
        [group(f"g{i}", [f"c{2 * i}", f"c{2 * i + 1}"], replicas=100) for i in range(8)],
    )


# ---- counting -------------------------------------------------------------------------------


def test_a_clique_outside_the_groups_is_one_clique_of_its_replicas() -> None:
    assert counts(cliqueset(1, [clique("a", 3), clique("b", 0)])) == (2, 3)


def test_an_autoscaled_clique_counts_the_higher_of_replicas_and_max_replicas() -> None:
    assert counts(cliqueset(1, [clique("a", 2, autoscale=1_000)])) == (1, 1_000)
    # maxReplicas below replicas (the HPA scales it down; replicas is what is made first)
    assert counts(cliqueset(1, [clique("a", 7, autoscale=3)])) == (1, 7)


def test_a_group_repeats_its_cliques_once_per_instance() -> None:
    cqs = cliqueset(
        1, [clique("lead"), clique("p", 2), clique("q", 3)], [group("g", ["p", "q"], 4)]
    )
    assert counts(cqs) == (1 + 4 * 2, 1 + 4 * (2 + 3))


def test_an_autoscaled_group_counts_the_higher_of_replicas_and_max_replicas() -> None:
    up = cliqueset(1, [clique("p", 2)], [group("g", ["p"], replicas=1, autoscale=100)])
    assert counts(up) == (100, 200)
    down = cliqueset(1, [clique("p", 2)], [group("g", ["p"], replicas=5, autoscale=2)])
    assert counts(down) == (5, 10)


def test_a_group_of_no_instances_makes_none_of_its_cliques() -> None:
    cqs = cliqueset(1, [clique("lead"), clique("p", 2)], [group("g", ["p"], replicas=0)])
    assert counts(cqs) == (1, 1)


def test_templates_the_crd_refuses_count_as_the_operator_lays_them_out() -> None:
    """A clique named by two groups belongs to the first; an unknown name makes nothing;
    a clique of a group is not autoscaled (the operator keeps no HPA for it)."""
    cqs = cliqueset(
        1,
        [clique("p", 2, autoscale=50)],
        [group("g", ["p", "nope"], replicas=3), group("h", ["p"], replicas=10)],
    )
    assert counts(cqs) == (3, 6)


def test_the_cel_count_is_the_python_count_spelled_in_cel() -> None:
    """The CRD's expressions walk the same fields with the same defaults (the API server
    evaluates them in tests/integration/test_crd_validation.py)."""
    pods = sizes.cel_gang_pods("self")
    for field in ("c.replicas", "c.autoscaling.maxReplicas", "g.replicas", "g.cliques"):
        assert field in pods, field
    assert "g.autoscaling.maxReplicas" in sizes.cel_gang_cliques("self.template")


def test_the_million_clique_set_counts_a_million_cliques() -> None:
    cqs = million()
    assert counts(cqs) == (1_600, 16_000)
    assert cqs.spec.replicas * 1_600 == 1_000_000
    # What the CRD counted before: every clique once per gang.
    assert cqs.spec.replicas * len(cqs.spec.template.cliques) == MAX_SET_CLIQUES


# ---- each bound at its limit and one past it ------------------------------------------------


def test_pods_per_gang_at_the_limit_and_one_past() -> None:
    """An HPA's maxReplicas on a clique and a group's: 1,000 + 50 x 80 + 0 or 1."""

    def shape(one: int) -> CliqueSet:
        return cliqueset(
            1,
            [clique("auto", 1, autoscale=1_000), clique("p", 50), clique("one", one)],
            [group("g", ["p"], replicas=1, autoscale=80)],
        )

    assert counts(shape(0))[1] == MAX_GANG_PODS
    assert bounds.counts_invalid(shape(0)) == ""
    assert counts(shape(1))[1] == MAX_GANG_PODS + 1
    message = bounds.counts_invalid(shape(1))
    assert message.startswith(
        "a gang of this CliqueSet would have 5,001 pods, more than the 5,000 one gang may have"
    ), message
    assert "autoscaling.maxReplicas" in message and "once per instance" in message


def test_cliques_per_set_at_the_limit_and_one_past() -> None:
    """100 gangs of 100 Cliques (a clique and a group of 99 instances at maxReplicas), and
    137 gangs of 73 (10,001 = 137 x 73)."""
    at = cliqueset(100, [clique("a", 0), clique("b", 0)], [group("h", ["b"], autoscale=99)])
    assert at.spec.replicas * counts(at)[0] == MAX_SET_CLIQUES
    assert bounds.counts_invalid(at) == ""
    past = cliqueset(137, [clique("a", 0), clique("b", 0)], [group("h", ["b"], replicas=72)])
    assert past.spec.replicas * counts(past)[0] == MAX_SET_CLIQUES + 1
    assert bounds.counts_invalid(past).startswith(
        "this CliqueSet would have 10,001 Cliques (137 gangs x 73 Cliques per gang), more "
        "than the 10,000 one CliqueSet may have"
    )


def pods_shape(gangs: int, rest: int) -> CliqueSet:
    """`gangs` gangs of 1,000 (an HPA's maxReplicas) + 1,300 (13 pods x 100 instances) +
    `rest` pods."""
    return cliqueset(
        gangs,
        [clique("auto", 1, autoscale=1_000), clique("q", 13), clique("r", rest)],
        [group("g", ["q"], replicas=100)],
    )


def test_pods_per_set_at_the_limit_and_one_past() -> None:
    """40 gangs of 2,500 pods; no set has 100,001 pods (11 x 9,091, past the gang bound),
    so one past is the next count one can have: 42 gangs of 2,381 (100,002)."""
    at = pods_shape(40, 200)
    assert at.spec.replicas * counts(at)[1] == MAX_SET_PODS
    assert bounds.counts_invalid(at) == ""
    past = pods_shape(42, 81)
    assert past.spec.replicas * counts(past)[1] == MAX_SET_PODS + 2
    assert bounds.counts_invalid(past).startswith(
        "this CliqueSet would have 100,002 pods (42 gangs x 2,381 pods per gang), more than "
        "the 100,000 one CliqueSet may have"
    )


def test_every_bound_passed_is_named() -> None:
    message = bounds.counts_invalid(million())
    assert "a gang of this CliqueSet would have 16,000 pods" in message
    assert "this CliqueSet would have 1,000,000 Cliques (625 gangs x 1,600 Cliques per gang)" in (
        message
    )
    assert "this CliqueSet would have 10,000,000 pods (625 gangs x 16,000 pods per gang)" in (
        message
    )
    assert message.count("more than the") == 3


def test_template_bytes_count_every_instance() -> None:
    one = len(msgspec.json.encode(POD))
    cqs = cliqueset(3, [clique("lead"), clique("p")], [group("g", ["p"], 2, autoscale=10)])
    assert bounds.template_bytes(cqs) == (11 * one, 3 * 11 * one)
    assert bounds.template_bytes_invalid(cqs, limit=33 * one) == ""
    message = bounds.template_bytes_invalid(cqs, limit=33 * one - 1)
    assert f"would store {33 * one:,} bytes of pod templates" in message
    assert "a clique of a scaling group once per instance" in message


# ---- the planner ---------------------------------------------------------------------------


def test_the_million_clique_set_is_an_invalid_spec_that_plans_no_create() -> None:
    cqs = million()
    plan = planner.plan(set_snapshot(cqs, [], hashes={f"c{i}": "h" for i in range(16)}))
    assert plan.writes == 0
    assert plan.creates == [] and plan.patches == [] and plan.deletes == []
    assert plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None and degraded.reason == REASON_INVALID_SPEC
    assert "1,000,000 Cliques" in degraded.message
    assert [e.reason for e in plan.events] == [REASON_INVALID_SPEC]


def test_the_controller_refuses_the_million_clique_set_before_hashing() -> None:
    ctl = controller()
    cqs = million()
    snap = ctl.snapshot(cqs)
    assert snap.invalid == bounds.invalid(cqs) != ""
    assert snap.hashes == {}
    plan = ctl._plan(cqs)
    assert plan.writes == 0
    # A set at the bounds is planned: 6 gangs of the same template with 1 instance each
    # (96 Cliques), its first burst of creates.
    fewer = cliqueset(
        6,
        [clique(f"c{i}", 10) for i in range(16)],
        [group(f"g{i}", [f"c{2 * i}", f"c{2 * i + 1}"], replicas=1) for i in range(8)],
    )
    assert ctl.snapshot(fewer).invalid == ""
    assert ctl._plan(fewer).writes > 0


def test_an_autoscaled_clique_past_the_gang_bound_is_an_invalid_spec() -> None:
    """An HPA on a clique outside the groups could scale it to 1,000 pods: with 4,001 pods
    in the other cliques that is past the 5,000 of a gang, whatever its replicas now."""
    cqs = cliqueset(
        1,
        [clique("auto", 1, autoscale=1_000), clique("rest", 1_000)]
        + [clique(f"r{i}", 1_000) for i in range(3)]
        + [clique("one", 1)],
    )
    plan = planner.plan(set_snapshot(cqs, [], hashes={}))
    assert plan.writes == 0
    assert plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None
    assert degraded.message.startswith("a gang of this CliqueSet would have 5,001 pods")
