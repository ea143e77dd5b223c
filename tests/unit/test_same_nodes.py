"""Gang restarts on the same nodes (`controllers.features.same_nodes`), through the Clique
planner: the nodes the old pods leave are recorded on the Clique, the new pods prefer them,
and a pod taken away by a node problem or a disruption is not followed."""

from __future__ import annotations

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.pod import Pod, PodCondition
from cliques.controllers.clique import planner
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.features import same_nodes

from .planner_fixtures import NOW, clique, pod


def restarted(count: int, record: str | None = None, replicas: int = 2) -> Clique:
    notes = {labels.ANNOTATION_GANG_RESTARTS: str(count)}
    if record is not None:
        notes[labels.ANNOTATION_RESTART_NODES] = record
    return clique(0, "worker", replicas=replicas, annotations=notes)


def on_node(p: Pod, node: str, restarts: int = 0, disrupted: bool = False) -> Pod:
    annotations = {labels.ANNOTATION_GANG_RESTARTS: str(restarts)}
    conditions = list(p.status.conditions)
    if disrupted:
        conditions.append(PodCondition(type="DisruptionTarget", status="True"))
    return msgspec.structs.replace(
        p,
        metadata=msgspec.structs.replace(p.metadata, annotations=annotations),
        spec=msgspec.structs.replace(p.spec, node_name=node),
        status=msgspec.structs.replace(p.status, conditions=conditions),
    )


def snap(c: Clique, pods: list[Pod], **kw: object) -> CliqueSnapshot:
    return CliqueSnapshot(clique=c, pods=pods, now=NOW, template_hash="h1", **kw)  # type: ignore[arg-type]


def record_of(plan: planner.Plan) -> str | None:
    for p in plan.patches:
        if p.reason == "RestartNodes":
            value: str = p.patch["metadata"]["annotations"][labels.ANNOTATION_RESTART_NODES]
            return value
    return None


def preferred(body: dict[str, object]) -> list[object]:
    spec = body.get("spec") or {}
    affinity = spec.get("affinity") or {}  # type: ignore[union-attr]
    node = affinity.get("nodeAffinity") or {}
    return list(node.get("preferredDuringSchedulingIgnoredDuringExecution") or [])


def test_the_nodes_a_restart_leaves_are_recorded_for_that_restart() -> None:
    c = restarted(1)
    pods = [on_node(pod(c, 0), "gpu-b"), on_node(pod(c, 1), "gpu-a")]
    plan = planner.plan(snap(c, pods))
    assert sorted(d.name for d in plan.deletes) == [p.metadata.name for p in pods]
    assert record_of(plan) == "1:0=gpu-b,1=gpu-a"


def test_a_disrupted_pod_or_one_never_placed_is_not_followed() -> None:
    c = restarted(1)
    pods = [on_node(pod(c, 0), "gpu-a", disrupted=True), on_node(pod(c, 1), "")]
    assert record_of(planner.plan(snap(c, pods))) is None
    pods = [on_node(pod(c, 0), "gpu-a", disrupted=True), on_node(pod(c, 1), "gpu-b")]
    assert record_of(planner.plan(snap(c, pods))) == "1:1=gpu-b"


def test_a_restart_done_over_several_reconciles_adds_to_its_record_and_no_more() -> None:
    c = restarted(1, "1:0=gpu-a")
    plan = planner.plan(snap(c, [on_node(pod(c, 1), "gpu-b")]))
    assert record_of(plan) == "1:0=gpu-a,1=gpu-b"
    # nothing new: no write
    c = restarted(1, "1:0=gpu-a,1=gpu-b")
    assert record_of(planner.plan(snap(c, [on_node(pod(c, 1), "gpu-b")]))) is None
    # an older restart's record is replaced, not added to
    c = restarted(2, "1:0=gpu-a")
    assert record_of(planner.plan(snap(c, [on_node(pod(c, 1), "gpu-c", 1)]))) == "2:1=gpu-c"


def test_the_pods_of_the_restart_prefer_its_nodes_and_keep_the_templates_terms() -> None:
    c = restarted(1, "1:0=gpu-b,1=gpu-a", replicas=1)
    own = {
        "weight": 5,
        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]},
    }
    template = {
        **c.spec.template,
        "spec": {
            **c.spec.template.get("spec", {}),
            "affinity": {
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [own]}
            },
        },
    }
    c = msgspec.structs.replace(c, spec=msgspec.structs.replace(c.spec, template=template))
    (create,) = planner.plan(snap(c, [])).creates
    assert preferred(create.body) == [
        own,
        {
            "weight": same_nodes.WEIGHT,
            "preference": {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-b"]}]
            },
        },
    ]
    assert template["spec"]["affinity"]["nodeAffinity"][  # the template is untouched
        "preferredDuringSchedulingIgnoredDuringExecution"
    ] == [own]


@pytest.mark.parametrize(
    ("count", "record", "on"),
    [(0, None, True), (2, "1:0=gpu-a", True), (1, "1:0=gpu-a", False), (1, "1:1=gpu-a", True)],
    ids=["never-restarted", "older-record", "turned-off", "another-index"],
)
def test_no_preference_without_a_record_of_this_restart(
    count: int, record: str | None, on: bool
) -> None:
    c = restarted(count, record, replicas=1)
    (create,) = planner.plan(snap(c, [], same_nodes=on)).creates
    assert preferred(create.body) == []


def test_turned_off_nothing_is_recorded() -> None:
    c = restarted(1)
    plan = planner.plan(snap(c, [on_node(pod(c, 0), "gpu-a")], same_nodes=False))
    assert plan.deletes and record_of(plan) is None


def test_a_gang_moved_off_a_drained_node_records_and_prefers_nothing() -> None:
    """A move (`drain.move_annotations`) closes its restart's record: the pods it deletes
    add no node, and the pods made for it prefer none."""
    from cliques.controllers.features import drain

    c = restarted(1)
    marks, count = drain.move_annotations({"worker": c}, NOW)[c.metadata.name]
    assert count == "2"
    moved = restarted(2, marks[labels.ANNOTATION_RESTART_NODES])
    plan = planner.plan(snap(moved, [on_node(pod(moved, 0), "cordoned", 1)]))
    assert plan.deletes and record_of(plan) is None
    # the next crash restart records again
    crashed = restarted(3, marks[labels.ANNOTATION_RESTART_NODES])
    plan = planner.plan(snap(crashed, [on_node(pod(crashed, 0), "gpu-a", 2)]))
    assert record_of(plan) == "3:0=gpu-a"
    (create,) = planner.plan(
        snap(restarted(2, marks[labels.ANNOTATION_RESTART_NODES], 1), [])
    ).creates
    assert preferred(create.body) == []
