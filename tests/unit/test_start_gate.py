"""The start gate (controllers.start_gate): start order enforced after placement, as the
Clique planner, the pod builder and the CliqueSet planner use it."""

from __future__ import annotations

from typing import Any

from cliques.api import labels
from cliques.api.meta import find_condition
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import gang_apis, start_gate, workload
from tests.unit.planner_fixtures import NOW, clique, pod, set_snapshot
from tests.unit.test_gang_scheduling_plan import owned, with_backend

IMAGE = "registry.example/cliques:1"


def gated_worker(replicas: int = 2) -> Any:
    c = clique(0, "worker", replicas=replicas, starts_after=["llama-0-leader"])
    c.spec.start_gate = True
    c.status = None
    return c


def snap(c: Any, pods: list[Any], **kw: Any) -> CliqueSnapshot:
    kw.setdefault("template_hash", "h1")
    return CliqueSnapshot(clique=c, pods=pods, now=NOW, gate_image=IMAGE, **kw)


def gate_of(body: dict[str, Any]) -> str | None:
    return body["metadata"]["annotations"].get(labels.ANNOTATION_START_GATE)


def test_a_gated_clique_creates_its_pods_closed_while_it_waits() -> None:
    plan = clique_planner.plan(snap(gated_worker(), [], waiting_for=["llama-0-leader"]))
    assert [c.name for c in plan.creates] == ["llama-0-worker-0", "llama-0-worker-1"]
    for create in plan.creates:
        body = create.body
        assert gate_of(body) == start_gate.CLOSED
        assert body["metadata"]["annotations"][labels.ANNOTATION_STARTS_AFTER] == "llama-0-leader"
        first = body["spec"]["initContainers"][0]
        assert first["name"] == start_gate.CONTAINER and first["image"] == IMAGE
        assert first["command"][:2] == ["cliques", "start-gate"]
        assert first["resources"]["requests"] == first["resources"]["limits"]
        volume = next(v for v in body["spec"]["volumes"] if v["name"] == start_gate.VOLUME)
        paths = [i["fieldRef"]["fieldPath"] for i in volume["downwardAPI"]["items"]]
        assert f"metadata.annotations['{labels.ANNOTATION_START_GATE}']" in paths
    assert plan.status is not None
    started = find_condition(plan.status.conditions, "Started")
    assert started is not None and started.status == "False"
    assert "start gates open when llama-0-leader is Ready" in started.message
    assert not plan.patches  # nothing to open yet


def test_the_gates_open_once_the_dependencies_are_ready() -> None:
    c = gated_worker()
    closed = [pod(c, i, ready=False) for i in range(2)]
    for p in closed:
        p.metadata.annotations[labels.ANNOTATION_START_GATE] = start_gate.CLOSED
    plan = clique_planner.plan(snap(c, closed, waiting_for=[]))
    assert [(p.name, p.reason, p.patch) for p in plan.patches] == [
        (p.metadata.name, "OpenStartGate", start_gate.open_patch()) for p in closed
    ]
    assert not plan.creates
    started = find_condition(plan.status.conditions, "Started") if plan.status else None
    assert started is not None and started.status == "True"


def test_pods_created_after_the_dependencies_are_ready_start_open() -> None:
    plan = clique_planner.plan(snap(gated_worker(), [], waiting_for=[]))
    assert [gate_of(c.body) for c in plan.creates] == [start_gate.OPEN] * 2
    assert not plan.patches


def test_a_started_clique_recreates_a_lost_pod_open_even_if_its_dependency_is_down() -> None:
    c = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    c.spec.start_gate = True
    plan = clique_planner.plan(snap(c, [pod(c, 0)], waiting_for=["llama-0-leader"]))
    assert [(x.name, gate_of(x.body)) for x in plan.creates] == [
        ("llama-0-worker-1", start_gate.OPEN)
    ]


def test_open_or_deleting_pods_are_not_patched() -> None:
    c = gated_worker(3)
    pods = [pod(c, 0), pod(c, 1, deleting=True), pod(c, 2)]
    pods[0].metadata.annotations[labels.ANNOTATION_START_GATE] = start_gate.OPEN
    pods[1].metadata.annotations[labels.ANNOTATION_START_GATE] = start_gate.CLOSED
    plan = clique_planner.plan(snap(c, pods, waiting_for=[]))
    assert not plan.patches


def test_without_start_gate_the_pods_are_held_back_and_carry_no_gate() -> None:
    c = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    c.status = None
    assert not clique_planner.plan(snap(c, [], waiting_for=["llama-0-leader"])).creates
    plan = clique_planner.plan(snap(c, [], waiting_for=[]))
    for create in plan.creates:
        assert labels.ANNOTATION_START_GATE not in create.body["metadata"]["annotations"]
        assert not create.body["spec"].get("initContainers")


def test_a_clique_that_starts_after_nothing_has_no_gate() -> None:
    c = clique(0, "leader", replicas=1)
    c.spec.start_gate = True
    c.status = None
    plan = clique_planner.plan(snap(c, [], waiting_for=[]))
    assert not plan.creates[0].body["spec"].get("initContainers")


def test_the_gate_goes_before_the_templates_own_init_containers() -> None:
    c = gated_worker(1)
    c.spec.template["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    c.spec.template["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    body = clique_planner.plan(snap(c, [], waiting_for=["x"])).creates[0].body
    assert [i["name"] for i in body["spec"]["initContainers"]] == [start_gate.CONTAINER, "fetch"]
    assert [v["name"] for v in body["spec"]["volumes"]] == ["data", start_gate.VOLUME]
    # the template itself is left as it was
    assert [i["name"] for i in c.spec.template["spec"]["initContainers"]] == ["fetch"]


def test_in_order_with_workload_gates_the_cliques_that_start_after_others() -> None:
    cqs = with_backend("Workload", replicas=1, startup="InOrder")
    name = workload.workload_name(cqs)
    plan = cliqueset_planner.plan(
        set_snapshot(cqs, [], gang_api=gang_apis.of("v1alpha1"), workloads=[owned(name)])
    )
    cliques = {c.name: c.body["spec"] for c in plan.creates if c.resource.kind == "Clique"}
    assert cliques["llama-0-leader"]["startsAfter"] == []
    assert "startGate" not in cliques["llama-0-leader"]
    assert cliques["llama-0-worker"]["startsAfter"] == ["llama-0-leader"]
    assert cliques["llama-0-worker"]["startGate"] is True
    assert plan.status is not None
    cond = next(c for c in plan.status.conditions if c.type == "GangScheduling")
    assert "enforced after placement" in cond.message
    # without the Workload backend the order is kept by holding pods back, with no gate
    plain = cliqueset_planner.plan(
        set_snapshot(with_backend("None", replicas=1, startup="InOrder"), [])
    )
    worker = next(c for c in plain.creates if c.name.endswith("worker"))
    assert worker.body["spec"]["startsAfter"] == ["llama-0-leader"]
    assert "startGate" not in worker.body["spec"]


def test_turning_the_gate_on_is_in_place_never_a_roll() -> None:
    cqs = with_backend("Workload", replicas=1, startup="InOrder")
    name = workload.workload_name(cqs)
    annotations = {labels.ANNOTATION_WORKLOAD: name}
    leader = clique(0, "leader", annotations=annotations)
    worker = clique(
        0, "worker", replicas=2, starts_after=["llama-0-leader"], annotations=annotations
    )
    plan = cliqueset_planner.plan(
        set_snapshot(
            cqs, [leader, worker], gang_api=gang_apis.of("v1alpha1"), workloads=[owned(name)]
        )
    )
    patches = [p for p in plan.patches if p.resource.kind == "Clique"]
    assert [(p.name, p.reason, p.patch["spec"]) for p in patches] == [
        ("llama-0-worker", "Resize", {"startGate": True})
    ]
    assert not plan.deletes and not [c for c in plan.creates if c.resource.kind == "Clique"]


def test_the_shipped_deployments_give_the_gate_their_own_image() -> None:
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2] / "deploy"
    for path in (root / "operator" / "deployment.yaml", root / "namespaced" / "deployment.yaml"):
        deployment = next(
            d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "Deployment"
        )
        main = deployment["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in main["env"]}
        assert env["CLIQUES_START_GATE_IMAGE"] == main["image"], path
    assert start_gate.default_image() == main["image"]


def test_the_operator_flag_then_the_environment_then_the_default(monkeypatch: Any) -> None:
    from cliques.cli import operator_cmd

    monkeypatch.delenv("CLIQUES_START_GATE_IMAGE", raising=False)
    assert operator_cmd.gate_image(None) == start_gate.default_image()
    monkeypatch.setenv("CLIQUES_START_GATE_IMAGE", "mirror.example/cliques:1")
    assert operator_cmd.gate_image(None) == "mirror.example/cliques:1"
    assert operator_cmd.gate_image("flag.example/c:2") == "flag.example/c:2"
