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
from cliques.api.meta import ObjectMeta, find_condition
from cliques.api.scalinggroup import CliqueScalingGroup, CliqueScalingGroupSpec
from cliques.controllers.base import bounds
from cliques.controllers.cliqueset import planner
from cliques.controllers.cliqueset.snapshot import CliqueSetSnapshot
from cliques.controllers.features import scaling
from tests.support import set_shapes as shapes
from tests.unit.planner_fixtures import set_snapshot
from tests.unit.test_bounds import controller


def cliqueset(
    replicas: int, cliques: list[dict[str, Any]], groups: list[dict[str, Any]] | None = None
) -> CliqueSet:
    return decoded(shapes.manifest(replicas, cliques, groups))


def decoded(manifest: dict[str, Any]) -> CliqueSet:
    """`manifest` as the operator reads it, with the metadata the API server adds."""
    manifest["metadata"].update(namespace="ns", uid="u", generation=1)
    return msgspec.convert(manifest, CliqueSet)


def counts(cqs: CliqueSet) -> tuple[int, int]:
    """(Cliques, pods) of one gang of `cqs`."""
    t = cqs.spec.template
    return sizes.gang_cliques(t.cliques, t.scaling_groups), sizes.gang_pods(
        t.cliques, t.scaling_groups
    )


def million() -> CliqueSet:
    return decoded(shapes.million())


# ---- counting -------------------------------------------------------------------------------


def test_a_clique_outside_the_groups_is_one_clique_of_its_replicas() -> None:
    assert counts(cliqueset(1, [shapes.clique("a", 3), shapes.clique("b", 0)])) == (2, 3)


def test_an_autoscaled_clique_counts_the_higher_of_replicas_and_max_replicas() -> None:
    assert counts(cliqueset(1, [shapes.clique("a", 2, autoscale=1_000)])) == (1, 1_000)
    # maxReplicas below replicas (the HPA scales it down; replicas is what is made first)
    assert counts(cliqueset(1, [shapes.clique("a", 7, autoscale=3)])) == (1, 7)


def test_a_group_repeats_its_cliques_once_per_instance() -> None:
    cqs = cliqueset(
        1,
        [shapes.clique("lead"), shapes.clique("p", 2), shapes.clique("q", 3)],
        [shapes.group("g", ["p", "q"], 4)],
    )
    assert counts(cqs) == (1 + 4 * 2, 1 + 4 * (2 + 3))


def test_an_autoscaled_group_counts_the_higher_of_replicas_and_max_replicas() -> None:
    up = cliqueset(
        1, [shapes.clique("p", 2)], [shapes.group("g", ["p"], replicas=1, autoscale=100)]
    )
    assert counts(up) == (100, 200)
    down = cliqueset(
        1, [shapes.clique("p", 2)], [shapes.group("g", ["p"], replicas=5, autoscale=2)]
    )
    assert counts(down) == (5, 10)


def test_a_group_of_no_instances_makes_none_of_its_cliques() -> None:
    cqs = cliqueset(
        1, [shapes.clique("lead"), shapes.clique("p", 2)], [shapes.group("g", ["p"], replicas=0)]
    )
    assert counts(cqs) == (1, 1)


def test_templates_the_crd_refuses_count_as_the_operator_lays_them_out() -> None:
    """A clique named by two groups belongs to the first; an unknown name makes nothing;
    a clique of a group is not autoscaled (the operator keeps no HPA for it)."""
    cqs = cliqueset(
        1,
        [shapes.clique("p", 2, autoscale=50)],
        [shapes.group("g", ["p", "nope"], replicas=3), shapes.group("h", ["p"], replicas=10)],
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
    at, past = decoded(shapes.gang_pods(0)), decoded(shapes.gang_pods(1))
    assert counts(at)[1] == MAX_GANG_PODS
    assert bounds.counts_invalid(at) == ""
    assert counts(past)[1] == MAX_GANG_PODS + 1
    message = bounds.counts_invalid(past)
    assert message.startswith(
        "a gang of this CliqueSet would have 5,001 pods, more than the 5,000 one gang may have"
    ), message
    assert "autoscaling.maxReplicas" in message and "once per instance" in message


def test_cliques_per_set_at_the_limit_and_one_past() -> None:
    at, past = decoded(shapes.set_cliques(False)), decoded(shapes.set_cliques(True))
    assert at.spec.replicas * counts(at)[0] == MAX_SET_CLIQUES
    assert bounds.counts_invalid(at) == ""
    assert past.spec.replicas * counts(past)[0] == MAX_SET_CLIQUES + 1
    assert bounds.counts_invalid(past).startswith(
        "this CliqueSet would have 10,001 Cliques (137 gangs x 73 Cliques per gang), more "
        "than the 10,000 one CliqueSet may have"
    )


def test_pods_per_set_at_the_limit_and_one_past() -> None:
    """No set has 100,001 pods: one past is the next count a set can have, 100,002."""
    at, past = decoded(shapes.set_pods(False)), decoded(shapes.set_pods(True))
    assert at.spec.replicas * counts(at)[1] == MAX_SET_PODS
    assert bounds.counts_invalid(at) == ""
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
    one = len(msgspec.json.encode(shapes.POD))
    cqs = cliqueset(
        3, [shapes.clique("lead"), shapes.clique("p")], [shapes.group("g", ["p"], 2, autoscale=10)]
    )
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
        [shapes.clique(f"c{i}", 10) for i in range(16)],
        [shapes.group(f"g{i}", [f"c{2 * i}", f"c{2 * i + 1}"], replicas=1) for i in range(8)],
    )
    assert ctl.snapshot(fewer).invalid == ""
    assert ctl._plan(fewer).writes > 0


def test_an_autoscaled_clique_past_the_gang_bound_is_an_invalid_spec() -> None:
    """An HPA on a clique outside the groups could scale it to 1,000 pods: with 4,001 pods
    in the other cliques that is past the 5,000 of a gang, whatever its replicas now."""
    cqs = cliqueset(
        1,
        [shapes.clique("auto", 1, autoscale=1_000), shapes.clique("rest", 1_000)]
        + [shapes.clique(f"r{i}", 1_000) for i in range(3)]
        + [shapes.clique("one", 1)],
    )
    plan = planner.plan(set_snapshot(cqs, [], hashes={}))
    assert plan.writes == 0
    assert plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None
    assert degraded.message.startswith("a gang of this CliqueSet would have 5,001 pods")


# ---- groups scaled by hand -----------------------------------------------------------------


def scaled(
    gangs: int, one: int, replicas: int, applied: str = "1", pods: int = 50
) -> CliqueSetSnapshot:
    """`gangs` gangs of a group `g` of a clique of `pods` (1 instance in the template) and a
    clique of `one` pods, each gang's CliqueScalingGroup scaled to `replicas` by hand
    (`applied`: the template replicas last applied to it)."""
    cqs = cliqueset(
        gangs,
        [shapes.clique("one", one), shapes.clique("p", pods)],
        [shapes.group("g", ["p"], replicas=1)],
    )
    objects = [
        CliqueScalingGroup(
            metadata=ObjectMeta(
                name=f"big-{gang}-g",
                namespace="ns",
                uid=f"u-{gang}",
                annotations={scaling.ANNOTATION_TEMPLATE_REPLICAS: applied},
            ),
            spec=CliqueScalingGroupSpec(group_name="g", gang_index=gang, replicas=replicas),
        )
        for gang in range(gangs)
    ]
    return set_snapshot(cqs, [], hashes={"one": "h", "p": "h"}, scaling_groups=objects)


def test_a_group_scaled_by_hand_past_the_gang_bound_is_an_invalid_spec() -> None:
    """The template counts 51 pods a gang; `kubectl scale cqsg` to 100 instances asks for
    5,000 + `one`: at the limit planned, one past an InvalidSpec with no create."""
    assert planner.plan(scaled(1, 0, 100)).creates
    plan = planner.plan(scaled(1, 1, 100))
    assert plan.writes == 0
    assert plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None and degraded.reason == REASON_INVALID_SPEC
    assert degraded.message.startswith(
        "with the instances their CliqueScalingGroups ask for (spec.replicas), gang 0 would "
        "have 5,001 pods, more than the 5,000 one gang may have"
    ), degraded.message
    assert "kubectl scale cliquescalinggroup/big-<gang>-<group>" in degraded.message


def test_groups_scaled_by_hand_past_the_set_bounds_are_an_invalid_spec() -> None:
    """100 gangs of 1 + 99 Cliques (10,000) are planned; 100 instances a gang (10,100) not,
    nor 100 gangs of 1,001 pods (20 instances of 50, and 1)."""
    assert planner.plan(scaled(100, 0, 99, pods=1)).creates
    plan = planner.plan(scaled(100, 0, 100, pods=1))
    assert plan.writes == 0
    assert plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None
    assert "the gangs would have 10,100 Cliques, more than the 10,000" in degraded.message
    assert planner.plan(scaled(100, 0, 20)).creates  # 100,000 pods
    plan = planner.plan(scaled(100, 1, 20))
    assert plan.writes == 0 and plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None
    assert "the gangs would have 100,100 pods, more than the 100,000" in degraded.message


def test_a_template_change_brings_groups_scaled_by_hand_back_under_the_bounds() -> None:
    """The template's replicas, changed, is applied to every gang's group in the same plan:
    the counts it leads to are the ones bounded, so the plan goes ahead and patches."""
    plan = planner.plan(scaled(100, 0, 100, applied="0"))  # the template's 1 not applied yet
    assert plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None and degraded.reason != REASON_INVALID_SPEC
    back = [p for p in plan.patches if p.patch.get("spec", {}).get("replicas") == 1]
    assert len(back) == 100


def test_the_gang_of_the_limits_documentation() -> None:
    """docs/operator.md#limits: a 1-pod leader and a group of 2 instances (autoscaled up to
    8) of prefill (4 pods) and decode (2 pods): 17 Cliques and 49 pods."""
    cqs = cliqueset(
        1,
        [shapes.clique("leader"), shapes.clique("prefill", 4), shapes.clique("decode", 2)],
        [shapes.group("g", ["prefill", "decode"], replicas=2, autoscale=8)],
    )
    assert counts(cqs) == (17, 49)
