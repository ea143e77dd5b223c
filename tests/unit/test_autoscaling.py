"""The HPAs of a CliqueSet's gangs, pure (`controllers.autoscaling`): one per gang and
autoscaled clique or group, their specs as the template asks, kept by a hash of what the
operator wrote (never fought over the server's defaults), the unused ones deleted."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.policies import Autoscaling
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import autoscaling, scaling

from .planner_fixtures import NOW
from .planner_fixtures import set_snapshot as snap
from .test_scaling import HASHES, OWNER, prefill_set

CPU = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
    }
]
BEHAVIOR = {"scaleDown": {"stabilizationWindowSeconds": 120}}


def _targets(cqs: Any) -> list[autoscaling.Target]:
    return autoscaling.targets(cqs, scaling.layout(cqs.spec))


def hpa_of(
    cqs: Any,
    target_name: str,
    *,
    spec: dict[str, Any] | None = None,
    deleting: bool = False,
) -> HorizontalPodAutoscaler:
    """The HPA the operator made for `target_name` under `cqs`, with the hash of what it
    wrote, as the API server returns it: with `spec` (defaults filled in) if given."""
    target = next(t for t in _targets(cqs) if t.name == target_name)
    body = autoscaling.body(cqs, target, "7", OWNER)
    if spec is not None:
        body["spec"] = spec
    hpa = msgspec.convert(body, HorizontalPodAutoscaler)
    hpa.metadata.uid = f"uid-{target_name}"
    hpa.metadata.resource_version = "3"
    if deleting:
        hpa.metadata.deletion_timestamp = NOW
    return hpa


def test_targets_one_per_gang_and_autoscaled_clique_or_group() -> None:
    cqs = prefill_set(replicas=2, group_autoscaling=Autoscaling(min_replicas=1, max_replicas=6))
    got = [(t.kind, t.name, t.gang) for t in _targets(cqs)]
    assert got == [
        ("Clique", "llama-0-decode", 0),
        ("CliqueScalingGroup", "llama-0-prefill", 0),
        ("Clique", "llama-1-decode", 1),
        ("CliqueScalingGroup", "llama-1-prefill", 1),
    ]


def test_no_targets_without_autoscaling_nor_for_a_clique_of_a_group() -> None:
    cqs = prefill_set()
    cqs.spec.template.cliques[3].autoscaling = None
    assert _targets(cqs) == []
    # (refused by the CRD) a clique of a group is scaled through its group only
    cqs.spec.template.cliques[2].autoscaling = Autoscaling(max_replicas=3)
    assert _targets(cqs) == []


def test_spec_of_a_clique_target() -> None:
    target = autoscaling.Target(
        "Clique", "llama-0-decode", 0, Autoscaling(min_replicas=2, max_replicas=4)
    )
    assert autoscaling.spec_of(target) == {
        "scaleTargetRef": {
            "apiVersion": "cliques.dev/v1alpha1",
            "kind": "Clique",
            "name": "llama-0-decode",
        },
        "minReplicas": 2,
        "maxReplicas": 4,
    }


def test_spec_of_min_replicas_at_least_1_and_metrics_behavior_passed_through() -> None:
    auto = Autoscaling(min_replicas=0, max_replicas=5, metrics=CPU, behavior=BEHAVIOR)
    target = autoscaling.Target("CliqueScalingGroup", "llama-1-prefill", 1, auto)
    spec = autoscaling.spec_of(target)
    assert spec["minReplicas"] == 1
    assert spec["maxReplicas"] == 5
    assert spec["metrics"] == CPU
    assert spec["behavior"] == BEHAVIOR
    assert spec["scaleTargetRef"]["kind"] == "CliqueScalingGroup"
    bare = autoscaling.spec_of(autoscaling.Target("Clique", "x", 0, Autoscaling(max_replicas=3)))
    assert "metrics" not in bare and "behavior" not in bare  # the server's defaults


def test_spec_hash_ignores_key_order_and_sees_every_change() -> None:
    a = {"minReplicas": 1, "maxReplicas": 4, "scaleTargetRef": {"kind": "Clique", "name": "x"}}
    b = {"scaleTargetRef": {"name": "x", "kind": "Clique"}, "maxReplicas": 4, "minReplicas": 1}
    assert autoscaling.spec_hash(a) == autoscaling.spec_hash(b)
    assert len(autoscaling.spec_hash(a)) == 16
    assert autoscaling.spec_hash({**a, "maxReplicas": 5}) != autoscaling.spec_hash(a)


def test_body_is_labelled_owned_and_records_its_spec_hash() -> None:
    cqs = prefill_set(replicas=2)
    (target, _) = _targets(cqs)
    body = autoscaling.body(cqs, target, "7", OWNER)
    assert body["apiVersion"] == "autoscaling/v2"
    assert body["kind"] == "HorizontalPodAutoscaler"
    meta = body["metadata"]
    assert meta["name"] == "llama-0-decode" and meta["namespace"] == "ns"
    assert meta["labels"] == {
        labels.LABEL_CLIQUESET: "llama",
        labels.LABEL_GANG_INDEX: "0",
        labels.LABEL_BUCKET: "7",
    }
    assert meta["ownerReferences"] == [OWNER]
    assert body["spec"] == autoscaling.spec_of(target)
    assert meta["annotations"] == {autoscaling.ANNOTATION_SPEC: autoscaling.spec_hash(body["spec"])}


def test_plan_creates_the_missing_hpas() -> None:
    cqs = prefill_set(replicas=2)
    out = autoscaling.plan(cqs, scaling.layout(cqs.spec), [], "7", OWNER)
    assert [n for n, _ in out.creates] == ["llama-0-decode", "llama-1-decode"]
    assert out.patches == [] and out.deletes == []


def test_plan_keeps_an_hpa_whose_server_defaults_differ_from_what_was_written() -> None:
    cqs = prefill_set(replicas=1)
    defaulted = {
        "scaleTargetRef": {
            "apiVersion": "cliques.dev/v1alpha1",
            "kind": "Clique",
            "name": "llama-0-decode",
        },
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ],
        "behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max"},
            "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100}]},
        },
    }
    live = hpa_of(cqs, "llama-0-decode", spec=defaulted)
    assert live.spec.metrics  # the server filled in what the operator left out
    out = autoscaling.plan(cqs, scaling.layout(cqs.spec), [live], "7", OWNER)
    assert out.creates == [] and out.patches == [] and out.deletes == []


def test_plan_replaces_the_spec_when_the_template_changes() -> None:
    old = prefill_set(replicas=1)
    live = hpa_of(old, "llama-0-decode")
    new = prefill_set(replicas=1, decode_autoscaling=Autoscaling(min_replicas=1, max_replicas=8))
    out = autoscaling.plan(new, scaling.layout(new.spec), [live], "7", OWNER)
    assert out.creates == [] and out.deletes == []
    ((name, ops),) = out.patches
    assert name == "llama-0-decode"
    (target,) = _targets(new)
    spec = autoscaling.spec_of(target)
    assert spec["maxReplicas"] == 8
    assert ops == [
        {"op": "test", "path": "/metadata/uid", "value": "uid-llama-0-decode"},
        {"op": "replace", "path": "/spec", "value": spec},
        {
            "op": "add",
            "path": "/metadata/annotations/cliques.dev~1hpa-spec",
            "value": autoscaling.spec_hash(spec),
        },
    ]


def test_plan_patches_an_hpa_without_the_hash_annotation() -> None:
    cqs = prefill_set(replicas=1)
    live = hpa_of(cqs, "llama-0-decode")
    del live.metadata.annotations[autoscaling.ANNOTATION_SPEC]
    out = autoscaling.plan(cqs, scaling.layout(cqs.spec), [live], "7", OWNER)
    assert [n for n, _ in out.patches] == ["llama-0-decode"]


def test_plan_deletes_the_unused_and_leaves_those_being_deleted() -> None:
    cqs = prefill_set(replicas=2)
    wider = prefill_set(replicas=4)
    live = [
        hpa_of(cqs, "llama-0-decode"),
        hpa_of(cqs, "llama-1-decode", deleting=True),  # going: not patched, not made again
        hpa_of(wider, "llama-3-decode"),  # gang 3 is gone
        hpa_of(wider, "llama-2-decode", deleting=True),
    ]
    out = autoscaling.plan(cqs, scaling.layout(cqs.spec), live, "7", OWNER)
    assert out.creates == [] and out.patches == []
    assert out.deletes == [("llama-3-decode", "uid-llama-3-decode")]
    # autoscaling removed: every HPA goes
    off = prefill_set(replicas=2)
    off.spec.template.cliques[3].autoscaling = None
    out = autoscaling.plan(off, scaling.layout(off.spec), live[:1], "7", OWNER)
    assert out.deletes == [("llama-0-decode", "uid-llama-0-decode")]


@pytest.mark.parametrize(
    ("clique_min", "group_min"),
    [
        pytest.param(2, 1, id="clique-min-available-2"),
        pytest.param(1, 2, id="group-min-available-2"),
    ],
)
def test_an_hpa_never_asks_for_less_than_its_target_must_keep(
    clique_min: int, group_min: int
) -> None:
    """The API server refuses a Clique below its minAvailable and a CliqueScalingGroup
    below its minAvailable (CEL, the scale subresource included): an HPA whose minReplicas
    is lower is refused each time it scales down that far (FailedRescale), and stays where
    it is instead of going down to the lowest count the target accepts."""
    cqs = prefill_set(
        replicas=1,
        group_replicas=3,
        min_available=group_min,
        group_autoscaling=Autoscaling(min_replicas=1, max_replicas=6),
    )
    decode = cqs.spec.template.cliques[3]
    decode.replicas = 2
    decode.min_available = clique_min  # the default is replicas: 2
    decode.autoscaling = Autoscaling(min_replicas=1, max_replicas=8)
    plan = cliqueset_planner.plan(snap(cqs, [], hashes=dict(HASHES)))
    made = {(c.resource.kind, c.name): c.body for c in plan.creates}
    clique_body = made["Clique", "llama-0-decode"]
    group_body = made["CliqueScalingGroup", "llama-0-prefill"]
    hpas = {
        body["spec"]["scaleTargetRef"]["kind"]: body["spec"]
        for (kind, _), body in made.items()
        if kind == "HorizontalPodAutoscaler"
    }
    assert hpas["Clique"]["minReplicas"] >= clique_body["spec"]["minAvailable"]
    assert hpas["CliqueScalingGroup"]["minReplicas"] >= group_body["spec"]["minAvailable"]
