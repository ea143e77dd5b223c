"""The dev cluster's start model end to end (`startmodel`, `podstart`): on the test cluster,
a pod annotated pull 5 s + load 5 s becomes Ready about 10 s after it is bound, a second pod
of the same image on the same node about 5 s after (the image is cached there), and an
in-place image change pays the pull only for an image new to the node. Each image name is
new to the cluster, so other tests' pods never warm the cache. Intervals are measured from
the pods' own timestamps (the API server's, in whole seconds) and checked against the
wall clock of waits that poll the pod."""

from __future__ import annotations

import datetime as dt
import json
import secrets
import time
from typing import Any

import pytest
from tests.support.cluster_fixtures import KubeCluster

from cliques_lab.devcluster import startmodel

pytestmark = pytest.mark.cluster

PULL, LOAD = 5, 5
NODE = "kwok-node-0"
#: The server's times are whole seconds and `podstart` rounds its ready time up to one.
SLACK = 2.5


def _time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _pod(kube: KubeCluster, ns: str, name: str) -> dict[str, Any]:
    out = kube.kubectl_run("get", "pod", name, "-n", ns, "-o", "json")
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == kind), None)


def _ready_running(pod: dict[str, Any], image: str) -> bool:
    ready = _condition(pod, "Ready")
    statuses = pod["status"].get("containerStatuses") or []
    return bool(ready and ready["status"] == "True" and statuses and statuses[0]["image"] == image)


def _wait_ready(kube: KubeCluster, ns: str, name: str, image: str) -> dict[str, Any]:
    """The pod once Ready and running `image` (fails after 60 s, showing the pod)."""
    deadline = time.monotonic() + 60
    while True:
        pod = _pod(kube, ns, name)
        if _ready_running(pod, image):
            return pod
        if time.monotonic() > deadline:
            pytest.fail(
                f"{name} not Ready on {image} after 60 s (a cluster made before the start "
                "model keeps its old stages: `cliques dev-cluster down --name "
                f"cliques-test`): {json.dumps(pod['status'])[:1500]}"
            )
        time.sleep(0.2)


def _create(kube: KubeCluster, ns: str, name: str, image: str) -> float:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "annotations": {
                startmodel.PULL_ANNOTATION: str(PULL),
                startmodel.LOAD_ANNOTATION: str(LOAD),
            },
        },
        # bound at creation, to one node: the cache is per node
        "spec": {
            "nodeName": NODE,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "main", "image": image}],
        },
    }
    started = time.monotonic()
    kube.kubectl_run("create", "-f", "-", stdin=json.dumps(body))
    return started


def _start_interval(pod: dict[str, Any], since: str) -> float:
    """Seconds from `since` (a server time) to the pod's Ready."""
    ready = _condition(pod, "Ready")
    assert ready is not None
    return _time(ready["lastTransitionTime"]) - _time(since)


def _near(value: float, want: float) -> bool:
    return want - 1.0 <= value <= want + SLACK


def test_a_pull_is_paid_once_per_node_and_image_and_the_load_at_every_start(
    kube_cluster: KubeCluster, namespace: str
) -> None:
    kube, ns = kube_cluster, namespace
    image = f"model-{secrets.token_hex(4)}:1"

    started = _create(kube, ns, "first", image)
    first = _wait_ready(kube, ns, "first", image)
    wall = time.monotonic() - started
    took = _start_interval(first, first["metadata"]["creationTimestamp"])
    assert _near(took, PULL + LOAD), took
    assert PULL + LOAD - 1.0 <= wall <= PULL + LOAD + 10, wall
    start = _condition(first, startmodel.CONDITION)
    assert start is not None and (start["reason"], start["message"]) == ("Pull", image)

    started = _create(kube, ns, "second", image)  # the image is on the node now
    second = _wait_ready(kube, ns, "second", image)
    wall = time.monotonic() - started
    took = _start_interval(second, second["metadata"]["creationTimestamp"])
    assert _near(took, LOAD), took
    assert LOAD - 1.0 <= wall <= LOAD + 10, wall
    assert (_condition(second, startmodel.CONDITION) or {}).get("reason") == "Load"

    # In place: a new image pays its pull and the load; back to the cached one, the load.
    for new, want, reason in (
        (f"model-{secrets.token_hex(4)}:2", PULL + LOAD, "Pull"),
        (image, LOAD, "Load"),
    ):
        kube.kubectl_run("set", "image", "-n", ns, "pod/first", f"main={new}")
        pod = _wait_ready(kube, ns, "first", new)
        cond = _condition(pod, startmodel.CONDITION)
        assert cond is not None and (cond["reason"], cond["message"]) == (reason, new)
        took = _start_interval(pod, cond["lastTransitionTime"])
        assert _near(took, want), (new, took)
        assert pod["status"]["containerStatuses"][0]["restartCount"] >= 1
