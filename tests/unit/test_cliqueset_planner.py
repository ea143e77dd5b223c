"""Table tests of the CliqueSet planner's plan of actions: gangs, services, resizes, invalid
specs. Rollouts are in test_cliqueset_rollout, the status in test_cliqueset_status."""

from __future__ import annotations

from cliques.api import labels
from cliques.controllers.cliqueset import planner as cliqueset_planner

from .planner_fixtures import cliqueset, gangs, services, template_patched
from .planner_fixtures import set_snapshot as snap


def test_new_cliqueset_creates_every_clique_and_service() -> None:
    # One Service per gang (the shared layout is in test_subdomains).
    cqs = cliqueset(replicas=2, startup="InOrder", subdomain_policy="UniquePerGang")
    plan = cliqueset_planner.plan(snap(cqs, []))
    cliques = [c for c in plan.creates if c.resource.kind == "Clique"]
    svcs = [c for c in plan.creates if c.resource.kind == "Service"]
    assert sorted(c.name for c in cliques) == [
        "llama-0-leader",
        "llama-0-worker",
        "llama-1-leader",
        "llama-1-worker",
    ]
    assert sorted(s.name for s in svcs) == ["llama-0", "llama-1"]
    worker = next(c for c in cliques if c.name == "llama-1-worker").body
    assert worker["spec"]["startsAfter"] == ["llama-1-leader"]
    assert worker["spec"]["replicas"] == 2 and worker["spec"]["minAvailable"] == 2
    lab = worker["metadata"]["labels"]
    assert lab[labels.LABEL_TEMPLATE_HASH] == "h1"
    assert lab[labels.LABEL_GANG_INDEX] == "1"
    assert lab[labels.LABEL_BUCKET].isdigit()
    ann = worker["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_LEADER_ADDRESS] == "leader-0.llama-1.ns.svc"
    assert ann[labels.ANNOTATION_SUBDOMAIN] == "llama-1"
    svc = next(s for s in svcs if s.name == "llama-0").body
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {
        labels.LABEL_CLIQUESET: "llama",
        labels.LABEL_GANG_INDEX: "0",
    }


def test_steady_state_is_a_no_op() -> None:
    cqs = cliqueset(replicas=2)
    first = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert first.writes == 0
    cqs.status = first.status
    second = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert second.writes == 0 and second.status is None and second.events == []


def test_scale_down_deletes_highest_gangs() -> None:
    cqs = cliqueset(replicas=1)
    plan = cliqueset_planner.plan(snap(cqs, gangs(3), services=services(3)))
    deleted = sorted(d.name for d in plan.deletes)
    assert deleted == [
        "llama-1",
        "llama-1-leader",
        "llama-1-worker",
        "llama-2",
        "llama-2-leader",
        "llama-2-worker",
    ]
    assert plan.creates == []


def test_replica_change_resizes_in_place_without_roll() -> None:
    cqs = cliqueset(replicas=2, roles=(("leader", 1), ("worker", 5)))
    plan = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert template_patched(plan) == []
    resized = sorted(p.name for p in plan.patches)
    assert resized == ["llama-0-worker", "llama-1-worker"]
    body = plan.patches[0].patch
    assert body["spec"] == {"replicas": 5, "minAvailable": 5}
    assert body["metadata"]["resourceVersion"] == "5"


def test_startup_cycle_is_invalid_spec_and_creates_nothing() -> None:
    cqs = cliqueset(replicas=2, startup="Explicit")
    cqs.spec.template.cliques[0].starts_after = ["worker"]
    cqs.spec.template.cliques[1].starts_after = ["leader"]
    plan = cliqueset_planner.plan(snap(cqs, []))
    assert plan.writes == 0
    degraded = next(c for c in plan.status.conditions if c.type == "Degraded")
    assert degraded.status == "True" and degraded.reason == "InvalidSpec"
    assert "leader -> worker -> leader" in degraded.message
    assert plan.events and plan.events[0].type == "Warning"


def test_pending_expectations_block_creates_deletes_and_rollouts() -> None:
    cqs = cliqueset(replicas=3)
    hashes = {"leader": "h2", "worker": "h2"}
    plan = cliqueset_planner.plan(
        snap(cqs, gangs(1), services=services(5), hashes=hashes, expectations_satisfied=False)
    )
    assert plan.creates == [] and plan.deletes == [] and template_patched(plan) == []


def test_an_invalid_template_is_invalid_spec_and_creates_nothing() -> None:
    cqs = cliqueset(replicas=2)
    message = "invalid pod template: containers must be a list"
    plan = cliqueset_planner.plan(snap(cqs, [], hashes={}, invalid=message))
    assert plan.writes == 0
    assert plan.status is not None
    conds = {c.type: c for c in plan.status.conditions}
    assert [
        (conds[t].status, conds[t].reason) for t in ("Available", "Progressing", "Degraded")
    ] == [
        ("False", "InvalidSpec"),
        ("False", "InvalidSpec"),
        ("True", "InvalidSpec"),
    ]
    assert conds["Degraded"].message == message
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "InvalidSpec", message)
    ]
    cqs.status = plan.status
    again = cliqueset_planner.plan(snap(cqs, [], hashes={}, invalid=message))
    assert again.status is None and again.events == []  # one Event, while the status changes


def test_a_roll_sets_annotations_one_by_one_and_keeps_the_clique_controllers() -> None:
    """The template patch is not resourceVersion-guarded, so it must not replace the
    annotation map: what the Clique controller wrote meanwhile would be lost."""
    cqs = cliqueset(replicas=1)
    cliques = gangs(1, hash_="h0")
    for c in cliques:
        c.metadata.annotations[labels.ANNOTATION_FINISHED_PODS] = "0:2"
        c.metadata.annotations[labels.ANNOTATION_PREVIOUS_HASHES] = "old"
    plan = cliqueset_planner.plan(snap(cqs, cliques, services=services(1)))
    rolled = [p for p in plan.patches if p.patch_type == "json"]
    assert rolled
    for patch in rolled:
        paths = {op["path"]: op for op in patch.patch}
        assert "/metadata/annotations" not in paths
        algorithm = "/metadata/annotations/cliques.dev~1hash-algorithm"
        assert paths[algorithm]["op"] == "add"
        previous = "/metadata/annotations/cliques.dev~1previous-template-hashes"
        assert paths[previous] == {"op": "remove", "path": previous}
        assert not any("finished-pods" in path for path in paths)
