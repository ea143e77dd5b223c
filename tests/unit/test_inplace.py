"""In-place updates, planned: which rolls keep the pods (`updateStrategy.inPlace:
IfPossible` and only container images changed, decided per gang), the pod patch, when a
pod updated in place counts as ready again (its containers report the new images), and
what the set and its Cliques say (the update annotation, the counts, ContainersWaiting)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.pod import (
    ContainerImage,
    ContainerState,
    ContainerStatus,
    Pod,
    PodCondition,
    PodSpec,
    PodStatus,
    Waiting,
)
from cliques.api.policies import UpdateStrategy
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import inplace
from tests.unit.planner_fixtures import NOW, clique, cliqueset, gangs, pod, set_snapshot

TEMPLATE = {"spec": {"containers": [{"name": "m", "image": "vllm:1"}]}}


def with_image(image: str, env: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "m", "image": image}
    if env:
        container["env"] = [{"name": "A", "value": "1"}]
    return {"spec": {"containers": [container]}}


# --- the decision and the annotation -------------------------------------------------------


def test_only_an_image_change_is_in_place() -> None:
    assert inplace.can_update_in_place(TEMPLATE, with_image("vllm:2"))
    assert not inplace.can_update_in_place(TEMPLATE, with_image("vllm:2", env=True))
    assert not inplace.can_update_in_place(TEMPLATE, TEMPLATE)  # no change at all


def test_the_update_annotation_chains_hashes_of_in_place_rolls() -> None:
    c = clique(0, "worker", hash_="h1")
    assert inplace.annotation(c, "h1", False) == "Replace"
    assert inplace.annotation(c, "h1", True) == "InPlace:h1"
    chained = clique(0, "worker", hash_="h2", annotations={labels.ANNOTATION_UPDATE: "InPlace:h1"})
    assert inplace.from_hashes(chained) == ["h1"]
    assert inplace.annotation(chained, "h2", True) == "InPlace:h2,h1"
    replaced = clique(0, "worker", annotations={labels.ANNOTATION_UPDATE: "Replace"})
    assert inplace.from_hashes(replaced) == []


# --- the pod patch ---------------------------------------------------------------------------


def slim(
    containers: list[tuple[str, str]],
    inits: list[tuple[str, str]] = (),  # type: ignore[assignment]
    *,
    hash_: str = "h0",
    in_place: str = "",
    statuses: list[tuple[str, str]] | None = None,
    ready: bool = True,
    waiting: str = "",
) -> Pod:
    annotations = {labels.ANNOTATION_IN_PLACE: in_place} if in_place else {}
    return msgspec.convert(
        {
            "metadata": {
                "name": "llama-0-worker-0",
                "uid": "u0",
                "labels": {labels.LABEL_TEMPLATE_HASH: hash_, labels.LABEL_POD_INDEX: "0"},
                "annotations": annotations,
            },
            "spec": {
                "containers": [{"name": n, "image": i} for n, i in containers],
                "initContainers": [{"name": n, "image": i} for n, i in inits],
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                "containerStatuses": [
                    {
                        "name": n,
                        "image": i,
                        "ready": ready,
                        "state": {"waiting": {"reason": waiting}} if waiting else {},
                    }
                    for n, i in (statuses if statuses is not None else containers)
                ],
            },
        },
        Pod,
    )


def test_the_pod_patch_replaces_the_changed_images_at_their_indices() -> None:
    template = {
        "spec": {
            "initContainers": [{"name": "fetch", "image": "fetch:2"}],
            "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}],
        }
    }
    p = slim(
        [("a", "a:1"), ("b", "b:1")], [("cliques-start-gate", "cliques:1"), ("fetch", "fetch:1")]
    )
    ops = inplace.pod_patch(p, template, "h1", 1)
    assert ops == [
        {"op": "test", "path": "/metadata/uid", "value": "u0"},
        {"op": "test", "path": "/spec/containers/1/name", "value": "b"},
        {"op": "replace", "path": "/spec/containers/1/image", "value": "b:2"},
        {"op": "test", "path": "/spec/initContainers/1/name", "value": "fetch"},
        {"op": "replace", "path": "/spec/initContainers/1/image", "value": "fetch:2"},
        {"op": "add", "path": "/metadata/labels/cliques.dev~1template-hash", "value": "h1"},
        {"op": "add", "path": "/metadata/annotations/cliques.dev~1hash-algorithm", "value": "1"},
        {"op": "add", "path": "/metadata/annotations/cliques.dev~1in-place-update", "value": "h1"},
    ]


def test_a_pod_whose_containers_are_not_the_templates_gets_no_patch() -> None:
    template = {"spec": {"containers": [{"name": "a", "image": "a:2"}]}}
    assert inplace.pod_patch(slim([("a", "a:1"), ("extra", "x:1")]), template, "h1", 1) is None
    assert inplace.pod_patch(slim([("other", "a:1")]), template, "h1", 1) is None


@pytest.mark.parametrize(
    ("spec", "status", "image_id", "same"),
    [
        ("busybox:1.36", "docker.io/library/busybox:1.36", "", True),
        ("busybox", "docker.io/library/busybox:latest", "", True),
        ("ghcr.io/x/vllm:2", "ghcr.io/x/vllm:2", "", True),
        ("ghcr.io/x/vllm:2", "ghcr.io/x/vllm:1", "", False),
        ("repo/x@sha256:abc", "repo/x:1", "repo/x@sha256:abc", True),
        ("repo/x@sha256:abc", "repo/x:1", "repo/x@sha256:def", False),
        ("vllm:2", "", "", False),
    ],
)
def test_image_matches(spec: str, status: str, image_id: str, same: bool) -> None:
    assert inplace.image_matches(spec, status, image_id) is same


def test_a_pod_updated_in_place_settles_when_its_containers_run_the_new_images() -> None:
    assert inplace.settled(slim([("a", "a:1")]))  # never updated in place
    moving = slim([("a", "a:2")], hash_="h1", in_place="h1", statuses=[("a", "a:1")])
    assert not inplace.settled(moving)
    assert inplace.settled(slim([("a", "a:2")], hash_="h1", in_place="h1"))
    # an annotation for another hash than the pod's label says nothing
    assert inplace.settled(slim([("a", "a:2")], hash_="h2", in_place="h1", statuses=[("a", "x")]))


# --- the Clique planner ----------------------------------------------------------------------


def rolled_clique(update: str, replicas: int = 2) -> Clique:
    c = clique(0, "worker", replicas=replicas, hash_="h1", image="vllm:2", status_hash="h0")
    meta = msgspec.structs.replace(
        c.metadata, annotations={**c.metadata.annotations, labels.ANNOTATION_UPDATE: update}
    )
    return msgspec.structs.replace(c, metadata=meta)


def old_pod(c: Clique, index: int, hash_: str = "h0") -> Pod:
    p = pod(c, index, hash_=hash_)
    spec = PodSpec(containers=[ContainerImage(name="m", image="vllm:1")])
    status = msgspec.structs.replace(
        p.status, container_statuses=[ContainerStatus(name="m", image="vllm:1", ready=True)]
    )
    return msgspec.structs.replace(p, spec=spec, status=status)


def test_the_clique_patches_pods_of_a_hash_it_may_update_in_place_from() -> None:
    c = rolled_clique("InPlace:h0")
    pods = [old_pod(c, 0), old_pod(c, 1, hash_="older")]
    out = clique_planner.plan(CliqueSnapshot(clique=c, pods=pods, template_hash="h1", now=NOW))
    patched = [p for p in out.patches if p.reason == "InPlaceUpdate"]
    assert [p.name for p in patched] == ["llama-0-worker-0"]
    assert patched[0].patch_type == "json"
    assert {"op": "replace", "path": "/spec/containers/0/image", "value": "vllm:2"} in patched[
        0
    ].patch
    # a pod of a hash it may not update from is replaced, as before
    assert [(d.name, d.reason) for d in out.deletes] == [("llama-0-worker-1", "TemplateChanged")]
    # a Clique rolled by replacement replaces both
    out = clique_planner.plan(
        CliqueSnapshot(clique=rolled_clique("Replace"), pods=pods, template_hash="h1", now=NOW)
    )
    assert not [p for p in out.patches if p.reason == "InPlaceUpdate"]
    assert len(out.deletes) == 2
    # nothing is patched while creates or deletes are unobserved
    out = clique_planner.plan(
        CliqueSnapshot(
            clique=c, pods=pods, template_hash="h1", now=NOW, expectations_satisfied=False
        )
    )
    assert not out.patches and not out.deletes


def test_a_pod_updated_in_place_is_not_ready_until_it_runs_the_new_image() -> None:
    c = rolled_clique("InPlace:h0", replicas=1)
    p = old_pod(c, 0, hash_="h1")
    meta = msgspec.structs.replace(p.metadata, annotations={labels.ANNOTATION_IN_PLACE: "h1"})
    moving = msgspec.structs.replace(
        p, metadata=meta, spec=PodSpec(containers=[ContainerImage(name="m", image="vllm:2")])
    )
    out = clique_planner.plan(CliqueSnapshot(clique=c, pods=[moving], template_hash="h1", now=NOW))
    assert out.status is not None and out.status.ready_replicas == 0
    ready = next(x for x in out.status.conditions if x.type == "Ready")
    assert ready.status == "False"
    done = msgspec.structs.replace(
        moving,
        status=msgspec.structs.replace(
            moving.status,
            container_statuses=[
                ContainerStatus(name="m", image="docker.io/library/vllm:2", ready=True)
            ],
        ),
    )
    out = clique_planner.plan(CliqueSnapshot(clique=c, pods=[done], template_hash="h1", now=NOW))
    assert out.status is not None and out.status.ready_replicas == 1
    assert not clique_planner.same_to_planner(moving, done)


def test_containers_that_wait_are_named_on_the_clique() -> None:
    c = rolled_clique("InPlace:h0", replicas=1)
    p = old_pod(c, 0, hash_="h1")
    stuck = msgspec.structs.replace(
        p,
        status=PodStatus(
            phase="Running",
            conditions=[PodCondition(type="Ready", status="False")],
            container_statuses=[
                ContainerStatus(
                    name="m",
                    image="vllm:1",
                    state=ContainerState(waiting=Waiting(reason="ImagePullBackOff")),
                )
            ],
        ),
    )
    out = clique_planner.plan(CliqueSnapshot(clique=c, pods=[stuck], template_hash="h1", now=NOW))
    assert out.status is not None
    cond = next(x for x in out.status.conditions if x.type == "ContainersWaiting")
    assert (
        cond.reason == "ImagePullBackOff" and "llama-0-worker-0 (ImagePullBackOff)" in cond.message
    )


# --- the CliqueSet planner -------------------------------------------------------------------


def set_with(image: str, in_place: str = "IfPossible", env: bool = False) -> CliqueSet:
    cqs = cliqueset(replicas=2, image=image)
    cliques = []
    for c in cqs.spec.template.cliques:
        tmpl = dict(c.template)
        if env:
            spec = dict(tmpl["spec"])
            spec["containers"] = [{**spec["containers"][0], "env": [{"name": "A", "value": "1"}]}]
            tmpl["spec"] = spec
        cliques.append(msgspec.structs.replace(c, template=tmpl))
    strategy = UpdateStrategy(in_place=in_place)  # type: ignore[arg-type]
    spec = msgspec.structs.replace(
        cqs.spec,
        update_strategy=strategy,
        template=msgspec.structs.replace(cqs.spec.template, cliques=cliques),
    )
    return msgspec.structs.replace(cqs, spec=spec)


def roll(cqs: CliqueSet, cliques: list[Clique] | None = None) -> Any:
    snap = set_snapshot(
        cqs, cliques if cliques is not None else gangs(2), hashes={"leader": "h2", "worker": "h2"}
    )
    return cliqueset_planner.plan(snap)


def updates(out: Any) -> dict[str, str]:
    found = {}
    for p in out.patches:
        if p.reason != "RollingUpdate":
            continue
        for op in p.patch:
            if op["path"].endswith("cliques.dev~1update"):
                found[p.name] = op["value"]
    return found


def test_an_image_change_rolls_a_gang_in_place() -> None:
    out = roll(set_with("vllm:2"))
    assert updates(out) == {"llama-0-leader": "InPlace:h1", "llama-0-worker": "InPlace:h1"}
    event = next(e for e in out.events if e.reason == "RollingUpdate")
    assert "1 in place, 0 replacing pods" in event.message


@pytest.mark.parametrize(
    ("cqs", "why"),
    [
        (set_with("vllm:2", env=True), "an env change"),
        (set_with("vllm:2", in_place="Never"), "inPlace Never"),
    ],
)
def test_anything_else_replaces_the_gangs_pods(cqs: CliqueSet, why: str) -> None:
    out = roll(cqs)
    assert updates(out) == {"llama-0-leader": "Replace", "llama-0-worker": "Replace"}, why


def test_one_clique_that_cannot_makes_the_whole_gang_replace() -> None:
    cqs = set_with("vllm:2")
    live = gangs(2)
    worker = live[1]
    tmpl = {"spec": {"containers": [{"name": "m", "image": "vllm:1", "args": ["x"]}]}}
    live[1] = msgspec.structs.replace(
        worker, spec=msgspec.structs.replace(worker.spec, template=tmpl)
    )
    out = roll(cqs, live)
    assert updates(out) == {"llama-0-leader": "Replace", "llama-0-worker": "Replace"}


def test_the_set_counts_gangs_updated_in_place_and_by_replacement() -> None:
    cqs = set_with("vllm:2")
    live = [
        clique(0, "leader", hash_="h2", annotations={labels.ANNOTATION_UPDATE: "InPlace:h1"}),
        clique(
            0,
            "worker",
            replicas=2,
            hash_="h2",
            annotations={labels.ANNOTATION_UPDATE: "InPlace:h1"},
        ),
        clique(1, "leader", hash_="h2", annotations={labels.ANNOTATION_UPDATE: "Replace"}),
        clique(
            1,
            "worker",
            replicas=2,
            hash_="h2",
            annotations={labels.ANNOTATION_UPDATE: "InPlace:h1"},
        ),
    ]
    out = roll(cqs, live)
    assert out.status is not None
    assert (out.status.updated_in_place, out.status.updated_by_replacement) == (1, 1)


def test_the_set_says_which_cliques_have_containers_waiting() -> None:
    from cliques.api.meta import Condition

    live = gangs(2, hash_="h2")
    worker = live[1]
    assert worker.status is not None
    cond = Condition(
        type="ContainersWaiting",
        status="True",
        reason="ImagePullBackOff",
        message="1 pod(s) have containers that wait: llama-0-worker-0 (ImagePullBackOff)",
        last_transition_time=NOW,
    )
    status = msgspec.structs.replace(worker.status, conditions=[*worker.status.conditions, cond])
    live[1] = msgspec.structs.replace(worker, status=status)
    out = roll(set_with("vllm:2"), live)
    assert out.status is not None
    available = next(c for c in out.status.conditions if c.type == "Available")
    assert "containers wait in 0/worker (ImagePullBackOff)" in available.message
