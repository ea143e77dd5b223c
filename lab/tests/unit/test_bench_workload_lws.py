"""The LWS workload of the scale benchmark: the LeaderWorkerSets, the pods LWS names, and
the pod templates that must be the CliqueSets' own for a run to compare the operators."""

from __future__ import annotations

import copy

import pytest

from cliques import hashing
from cliques_lab.bench import kinds, workload, workload_lws
from cliques_lab.bench.workload import Shape


def test_a_shape_becomes_leaderworkersets_of_groups() -> None:
    body = workload_lws.manifest("bench-3", Shape(1, 500, 2))
    spec = body["spec"]
    assert (body["apiVersion"], body["kind"]) == (
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
    )
    assert (spec["replicas"], spec["leaderWorkerTemplate"]["size"]) == (500, 2)
    assert spec["startupPolicy"] == "LeaderCreated"
    # Rolled as many groups at a time as the CliqueSets roll gangs.
    cqs = workload.manifest("bench-3", Shape(1, 500, 2))
    assert (
        spec["rolloutStrategy"]["rollingUpdateConfiguration"]["maxUnavailable"]
        == cqs["spec"]["updateStrategy"]["maxUnavailable"]
        == 50
    )


def test_the_pods_are_named_after_the_statefulsets() -> None:
    assert workload_lws.desired_pods(Shape(2, 2, 3)) == {
        "bench-0-0",
        "bench-0-0-1",
        "bench-0-0-2",
        "bench-0-1",
        "bench-0-1-1",
        "bench-0-1-2",
        "bench-1-0",
        "bench-1-0-1",
        "bench-1-0-2",
        "bench-1-1",
        "bench-1-1-1",
        "bench-1-1-2",
    }
    assert len(workload_lws.desired_pods(Shape(100, 5, 2))) == Shape(100, 5, 2).total_pods


@pytest.mark.parametrize("text", ["1x50x2", "1x500x2", "100x5x2", "1x2500x2", "1x5000x2"])
def test_the_pod_templates_are_the_cliquesets_own(text: str) -> None:
    shape = Shape.parse(text)
    for image in (kinds.FIRST_IMAGE, kinds.NEXT_IMAGE):
        lws = workload_lws.pod_templates(workload_lws.manifest("s", shape, image))
        cqs = workload.pod_templates(workload.manifest("s", shape, image))
        assert lws.keys() == cqs.keys() == {"leader", "worker"}
        for role in lws:
            assert hashing.template_hash(lws[role]) == hashing.template_hash(cqs[role])
    assert kinds.LEADERWORKERSET.template_hash(shape, "None") == kinds.CLIQUESET.template_hash(
        shape, "None"
    )


def test_a_group_of_one_pod_is_its_leader() -> None:
    body = workload_lws.manifest("s", Shape(1, 3, 1))
    assert "leaderTemplate" not in body["spec"]["leaderWorkerTemplate"]
    assert workload_lws.desired_pods(Shape(1, 3, 1)) == {"bench-0-0", "bench-0-1", "bench-0-2"}
    assert kinds.LEADERWORKERSET.template_hash(Shape(1, 3, 1), "None") == (
        kinds.CLIQUESET.template_hash(Shape(1, 3, 1), "None")
    )


def test_the_template_hash_sees_a_different_pod_but_not_a_respelled_one() -> None:
    body = workload_lws.manifest("s", Shape(1, 2, 2))
    again = workload_lws.reordered(body)
    assert again != body
    templates = workload_lws.pod_templates(body)
    assert workload.templates_hash(workload_lws.pod_templates(again)) == workload.templates_hash(
        templates
    )
    changed = copy.deepcopy(templates)
    changed["worker"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m"
    assert workload.templates_hash(changed) != workload.templates_hash(templates)
    swapped = {"leader": templates["worker"], "worker": templates["leader"]}
    assert workload.templates_hash(swapped) != workload.templates_hash(templates)


@pytest.mark.parametrize("text", ["1x2500x2", "1x5000x2", "1000x5x2"])
def test_the_cost_curve_shapes_parse(text: str) -> None:
    shape = Shape.parse(text)
    assert str(shape) == text
    assert shape.total_pods == {"1x2500x2": 5000, "1x5000x2": 10000, "1000x5x2": 10000}[text]
