"""The scale benchmark's pure parts: shapes, manifests, and how phases are judged."""

import pytest

from cliques import hashing
from cliques_lab.bench import workload


def test_shape_parse_and_desired_pods() -> None:
    shape = workload.Shape.parse("2x3x4")
    assert (shape.sets, shape.gangs, shape.pods, shape.total_pods) == (2, 3, 4, 24)
    pods = shape.desired_pods()
    assert len(pods) == 24
    assert {"bench-0-0-leader-0", "bench-1-2-worker-2"} <= pods
    with pytest.raises(ValueError, match="SETSxGANGSxPODS"):
        workload.Shape.parse("500x2")
    with pytest.raises(ValueError, match=">= 1"):
        workload.Shape.parse("1x0x2")


def test_reordered_manifest_is_the_same_desired_state() -> None:
    body = workload.manifest("bench-0", workload.Shape(1, 5, 3))
    again = workload.reordered(body)
    assert again != body
    by_name = {c["name"]: c for c in again["spec"]["template"]["cliques"]}
    for clique in body["spec"]["template"]["cliques"]:
        assert hashing.template_hash(clique["template"]) == hashing.template_hash(
            by_name[clique["name"]]["template"]
        )


def test_judge_counts_only_what_a_correct_operator_would_not_do() -> None:
    desired = {"a", "b"}
    ok = workload.judge("pods-ready", ["a", "b"], [], desired)
    assert (ok.spurious_creates, ok.spurious_deletes) == (0, 0)
    bad = workload.judge("pods-ready", ["a", "b", "b", "x"], ["a"], desired)
    assert (bad.spurious_creates, bad.spurious_deletes) == (2, 1)
    roll = workload.judge("rolling-update", ["a", "b"], ["a", "b"], desired)
    assert (roll.spurious_creates, roll.spurious_deletes, roll.replaced) == (0, 0, 2)
    reorder = workload.judge("reorder-apply", ["a"], ["a"], desired)
    assert (reorder.replaced, reorder.spurious_creates, reorder.spurious_deletes) == (1, 1, 1)


def test_the_gang_scheduling_backend_is_pod_by_pod_unless_asked() -> None:
    shape = workload.Shape.parse("1x2x2")
    assert workload.manifest("s", shape)["spec"]["gangScheduling"] == {"backend": "None"}
    body = workload.manifest("s", shape, gang_scheduling="Workload")
    assert body["spec"]["gangScheduling"] == {"backend": "Workload"}


def test_the_subdomain_policy_is_left_out_unless_asked() -> None:
    shape = workload.Shape.parse("1x2x2")
    assert "subdomainPolicy" not in workload.manifest("s", shape)["spec"]
    body = workload.manifest("s", shape, subdomain_policy="UniquePerGang")
    assert body["spec"]["subdomainPolicy"] == "UniquePerGang"


def test_pod_readiness_is_left_out_unless_asked_and_does_not_touch_the_manifest() -> None:
    body = workload.manifest("s", workload.Shape.parse("1x2x2"))
    assert workload.with_pod_readiness(body, "") is body
    gang = workload.with_pod_readiness(body, "Gang")
    assert gang["spec"]["podReadiness"] == "Gang"
    assert "podReadiness" not in body["spec"]
    assert {k: v for k, v in gang["spec"].items() if k != "podReadiness"} == body["spec"]
