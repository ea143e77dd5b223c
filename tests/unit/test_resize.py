"""In-place resizes, planned: which CPU and memory changes the API server lets a running pod
take (`cliques.resize`: no request or limit removed, the same QoS class), the set's decision
(only where the server serves `pods/resize`), the Clique's `resize` patch that goes before
the image and hash patch, when a resized pod counts as ready again (its statuses report the
new values, no resize pending or in progress). (The dev cluster's KWOK stages that play the
kubelet: lab/tests/unit/test_kwok_resize.py.)"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques import _core, hashing, resize
from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import find_condition
from cliques.api.pod import (
    ContainerImage,
    ContainerStatus,
    Pod,
    PodCondition,
    PodSpec,
    Resources,
)
from cliques.api.policies import UpdateStrategy
from cliques.controllers.base import failures
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import inplace
from tests.unit.planner_fixtures import NOW, clique, cliqueset, gangs, pod, set_snapshot


def template(image: str = "vllm:1", **resources: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "m", "image": image, "resources": resources}]}}


BURSTABLE = template(requests={"cpu": "1", "memory": "1Gi"})


# --- what the server allows ------------------------------------------------------------------


def test_quantities_compare_by_meaning() -> None:
    assert resize.differing({"cpu": "1"}, {"cpu": "1000m"}) == []
    assert resize.differing({"cpu": "1", "memory": "1Gi"}, {"cpu": "2"}) == ["cpu", "memory"]


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "0"}}, "BestEffort"),
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "1000m"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Burstable"),
        ({"limits": {"cpu": "1"}}, "Burstable"),
        # a zero limit is no limit to the API server: not Guaranteed
        ({"limits": {"cpu": "0", "memory": "1Gi"}}, "Burstable"),
        ({"requests": {"cpu": "0"}, "limits": {"cpu": "0m", "memory": "1Gi"}}, "Burstable"),
        ({"limits": {"cpu": "0", "memory": "0"}}, "BestEffort"),
        # a zero request with a limit is below it
        ({"requests": {"cpu": "0"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Burstable"),
    ],
)
def test_the_qos_class_is_the_servers(resources: dict[str, Any], qos: str) -> None:
    assert resize.qos_class(template(**resources)) == qos


def test_a_resize_keeps_the_qos_class_and_removes_nothing() -> None:
    assert resize.allowed(BURSTABLE, template(requests={"cpu": "2", "memory": "2Gi"}))
    # a limit added keeps the pod Burstable
    assert resize.allowed(
        BURSTABLE, template(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "4"})
    )
    # a request removed, Burstable to Guaranteed, Guaranteed to Burstable: refused
    assert not resize.allowed(BURSTABLE, template(requests={"cpu": "2"}))
    guaranteed = template(limits={"cpu": "1", "memory": "1Gi"})
    assert not resize.allowed(BURSTABLE, guaranteed)
    assert resize.allowed(guaranteed, template(limits={"cpu": "2", "memory": "2Gi"}))
    assert not resize.allowed(
        guaranteed, template(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})
    )
    # a zero CPU limit made a real one: Burstable to Guaranteed, which the server refuses
    zero = template(limits={"cpu": "0", "memory": "1Gi"})
    assert not resize.allowed(zero, template(limits={"cpu": "1", "memory": "1Gi"}))
    assert resize.allowed(zero, template(limits={"cpu": "0", "memory": "2Gi"}))
    # pod-level resources need a gate the operator does not ask for
    pod_level = {"spec": {**BURSTABLE["spec"], "resources": {"limits": {"cpu": "4"}}}}
    assert not resize.allowed(pod_level, pod_level)


def test_the_set_resizes_in_place_only_where_the_server_serves_it() -> None:
    bigger = template(requests={"cpu": "2", "memory": "1Gi"})
    assert not inplace.can_update_in_place(BURSTABLE, bigger)
    assert inplace.can_update_in_place(BURSTABLE, bigger, resizes=True)
    both = template("vllm:2", requests={"cpu": "2", "memory": "1Gi"})
    assert inplace.can_update_in_place(BURSTABLE, both, resizes=True)
    gpu = template(requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})
    assert not inplace.can_update_in_place(BURSTABLE, gpu, resizes=True)
    assert not inplace.can_update_in_place(BURSTABLE, template(requests={"cpu": "2"}), True)


def test_the_core_names_resize_paths_and_the_hashing_module_takes_them() -> None:
    paths = hashing.changed_paths(BURSTABLE, template(requests={"cpu": "2", "memory": "1Gi"}))
    assert paths == ["spec.containers[name=m].resources.requests.cpu"]
    assert _core.resize_path(paths[0])
    assert not hashing.in_place(paths) and hashing.in_place(paths, resize=True)


def resource_set(cpu: str, in_place: str = "IfPossible") -> CliqueSet:
    cqs = cliqueset(replicas=2)
    cliques = []
    for c in cqs.spec.template.cliques:
        tmpl = dict(c.template)
        spec = dict(tmpl["spec"])
        spec["containers"] = [
            {**spec["containers"][0], "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
        ]
        tmpl["spec"] = spec
        cliques.append(msgspec.structs.replace(c, template=tmpl))
    spec = msgspec.structs.replace(
        cqs.spec,
        update_strategy=UpdateStrategy(in_place=in_place),  # type: ignore[arg-type]
        template=msgspec.structs.replace(cqs.spec.template, cliques=cliques),
    )
    return msgspec.structs.replace(cqs, spec=spec)


def live_gangs(cpu: str) -> list[Clique]:
    out = []
    for c in gangs(2):
        tmpl = dict(c.spec.template)
        spec = dict(tmpl["spec"])
        spec["containers"] = [
            {**spec["containers"][0], "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
        ]
        tmpl["spec"] = spec
        out.append(msgspec.structs.replace(c, spec=msgspec.structs.replace(c.spec, template=tmpl)))
    return out


@pytest.mark.parametrize(("served", "update"), [(True, "InPlace:h1"), (False, "Replace")])
def test_a_cpu_change_rolls_in_place_where_pods_resize(served: bool, update: str) -> None:
    snap = set_snapshot(
        resource_set("2"),
        live_gangs("1"),
        hashes={"leader": "h2", "worker": "h2"},
        resize_served=served,
    )
    out = cliqueset_planner.plan(snap)
    found = {
        p.name: op["value"]
        for p in out.patches
        if p.reason == "RollingUpdate"
        for op in p.patch
        if op["path"].endswith("cliques.dev~1update")
    }
    assert found == {"llama-0-leader": update, "llama-0-worker": update}


# --- the Clique: resize first, then images and the hash ---------------------------------------


def resized_clique(cpu: str = "2") -> Clique:
    c = clique(0, "worker", replicas=1, hash_="h1", image="vllm:2", status_hash="h0")
    tmpl = {
        "spec": {
            "containers": [
                {"name": "m", "image": "vllm:2", "resources": {"limits": {"cpu": cpu}}},
            ]
        }
    }
    meta = msgspec.structs.replace(
        c.metadata, annotations={**c.metadata.annotations, labels.ANNOTATION_UPDATE: "InPlace:h0"}
    )
    return msgspec.structs.replace(
        c, metadata=meta, spec=msgspec.structs.replace(c.spec, template=tmpl)
    )


def running(c: Clique, cpu: str, *, hash_: str = "h0", image: str = "vllm:1") -> Pod:
    p = pod(c, 0, hash_=hash_)
    res = Resources(requests={"cpu": cpu}, limits={"cpu": cpu})
    spec = PodSpec(containers=[ContainerImage(name="m", image=image, resources=res)])
    status = msgspec.structs.replace(
        p.status,
        container_statuses=[ContainerStatus(name="m", image=image, ready=True, resources=res)],
    )
    return msgspec.structs.replace(p, spec=spec, status=status)


def test_the_clique_resizes_before_it_moves_the_hash() -> None:
    c = resized_clique("2")
    out = clique_planner.plan(
        CliqueSnapshot(clique=c, pods=[running(c, "1")], template_hash="h1", now=NOW)
    )
    (patch,) = [p for p in out.patches if p.reason.startswith("InPlace")]
    assert (patch.reason, patch.sub, patch.patch_type) == ("InPlaceResize", "resize", "json")
    # the limit and the request it defaults (a request left out is the limit)
    assert {"op": "add", "path": "/spec/containers/0/resources/limits", "value": {"cpu": "2"}} in (
        patch.patch
    )
    assert {
        "op": "add",
        "path": "/spec/containers/0/resources/requests",
        "value": {"cpu": "2"},
    } in patch.patch
    assert patch.patch[0] == {"op": "test", "path": "/metadata/uid", "value": "pod-uid-0"}
    # once the spec has the new values (`2000m` is `2`), the images and the hash
    out = clique_planner.plan(
        CliqueSnapshot(clique=c, pods=[running(c, "2000m")], template_hash="h1", now=NOW)
    )
    (patch,) = [p for p in out.patches if p.reason.startswith("InPlace")]
    assert (patch.reason, patch.sub) == ("InPlaceUpdate", "")
    assert not out.deletes
    # the resize's watch event wakes the Clique for that next patch
    assert not clique_planner.same_to_planner(running(c, "1"), running(c, "2"))


def test_a_resized_pod_is_ready_once_it_runs_with_the_new_values() -> None:
    c = resized_clique("2")
    p = running(c, "1", hash_="h1", image="vllm:2")
    res = Resources(requests={"cpu": "2"}, limits={"cpu": "2"})
    meta = msgspec.structs.replace(p.metadata, annotations={labels.ANNOTATION_IN_PLACE: "h1"})
    asked = msgspec.structs.replace(
        p,
        metadata=meta,
        spec=PodSpec(containers=[ContainerImage(name="m", image="vllm:2", resources=res)]),
    )
    assert not inplace.settled(asked)  # the status reports cpu 1
    status = msgspec.structs.replace(
        asked.status,
        container_statuses=[
            ContainerStatus(
                name="m",
                image="vllm:2",
                ready=True,
                resources=Resources(requests={"cpu": "2000m"}, limits={"cpu": "2"}),
            )
        ],
    )
    done = msgspec.structs.replace(asked, status=status)
    assert inplace.settled(done)
    # a kubelet that reports no resources is not waited for (the server could not resize)
    bare = msgspec.structs.replace(
        asked,
        status=msgspec.structs.replace(
            asked.status, container_statuses=[ContainerStatus(name="m", image="vllm:2")]
        ),
    )
    assert inplace.settled(bare)
    for cond, reasons in [
        (PodCondition(type="PodResizeInProgress", status="True"), []),
        (
            PodCondition(type="PodResizePending", status="True", reason="Infeasible"),
            ["ResizeInfeasible"],
        ),
        (
            PodCondition(type="PodResizePending", status="True", reason="Deferred"),
            ["ResizeDeferred"],
        ),
    ]:
        waiting = msgspec.structs.replace(
            done, status=msgspec.structs.replace(done.status, conditions=[cond])
        )
        assert not inplace.settled(waiting), cond
        assert inplace.waiting_reasons(waiting) == reasons


def test_a_refused_resize_leaves_the_create_of_a_lost_pod_and_is_named() -> None:
    """A Clique of two pods whose resize the API server refuses (its ReplicaFailure
    recorded): pod 1 lost meanwhile is made again in the same plan as pod 0's resize is
    tried again, and the status carries the server's message."""
    c = msgspec.structs.replace(
        resized_clique("2"), spec=msgspec.structs.replace(resized_clique("2").spec, replicas=2)
    )
    refused = failures.Failure(
        "FailedUpdate",
        'Pod "llama-0-worker-0" is invalid: spec: Forbidden: Pod QOS Class may not change',
    )
    out = clique_planner.plan(
        CliqueSnapshot(
            clique=c, pods=[running(c, "1")], template_hash="h1", now=NOW, failure=refused
        )
    )
    assert [p.reason for p in out.patches if p.reason.startswith("InPlace")] == ["InPlaceResize"]
    assert [cr.name for cr in out.creates] == ["llama-0-worker-1"]
    assert out.status is not None
    cond = find_condition(out.status.conditions, "ReplicaFailure")
    assert cond is not None and (cond.reason, cond.message) == (refused.reason, refused.message)
