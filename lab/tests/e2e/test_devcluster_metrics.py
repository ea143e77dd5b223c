"""`cliques dev-cluster up --with metrics-server` end to end, in a dev cluster of its own
(`cliques-metrics`): kwokctl runs metrics-server (built from its Go module) as a component of
the cluster, and KWOK simulates a pod's CPU usage from its `kwok.x-k8s.io/usage-cpu`
annotation, so the metrics API reports what the annotation says and follows it when it
changes. metrics-server scrapes every 15 s and reports a rate over two scrapes, so each
reading is waited for (with a deadline) until it settles near the annotated value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from tests.support.addon_cluster import addon_cluster, make_namespace, wait_for
from tests.support.cluster_fixtures import KubeCluster, addon_build_error

from cliques_lab.devcluster import cluster as devcluster
from cliques_lab.devcluster import metrics_server

pytestmark = [pytest.mark.cluster, pytest.mark.addons("metrics-server")]

NAME = "cliques-metrics"
# The first reading needs two scrapes after the pod starts, and metrics-server's first
# scrapes of a new cluster; a change needs two more.
WAIT = 240.0
TOLERANCE = Decimal("0.05")  # 5% of the annotated usage


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    failed = addon_build_error(request.config)
    if failed is not None:
        pytest.fail(f"the dev cluster's add-ons could not be built:\n{failed}", pytrace=False)
    with addon_cluster(NAME, ["metrics-server"]) as cluster:
        yield cluster


@pytest.fixture
def namespace(kube: KubeCluster) -> Iterator[str]:
    name = make_namespace(kube, "t-metrics")
    try:
        yield name
    finally:
        kube.kubectl_run("delete", "namespace", name, "--wait=false", check=False)


def pod(namespace: str, name: str, cpu_usage: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {metrics_server.USAGE_CPU_ANNOTATION: cpu_usage},
        },
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}
            ]
        },
    }


def reading(kube: KubeCluster, namespace: str, name: str) -> Decimal | None:
    """The pod's CPU usage in cores from the metrics API, None until it has one."""
    path = metrics_server.pod_metrics_path(namespace, name)
    done = kube.kubectl_run("get", "--raw", path, check=False)
    if done.returncode != 0:
        return None
    return metrics_server.pod_cpu_cores(json.loads(done.stdout))


def settles_near(kube: KubeCluster, namespace: str, name: str, cores: Decimal) -> Decimal:
    """Wait until the metrics API reports `cores` for the pod (within the tolerance)."""
    seen: list[Decimal | None] = []

    def near() -> Decimal | None:
        value = reading(kube, namespace, name)
        seen.append(value)
        return value if value is not None and abs(value - cores) <= cores * TOLERANCE else None

    what = f"a CPU reading of about {cores} cores for {name}"
    return wait_for(near, what, WAIT, lambda: f"the last readings were {seen[-5:]}")


def test_metrics_server_runs_as_a_component_of_the_cluster(kube: KubeCluster) -> None:
    st = devcluster.status(NAME)
    assert st.state == "running" and "metrics-server" in st.addons
    (component,) = [c for c in st.components if c.name == "metrics-server"]
    assert component.running
    service = json.loads(
        kube.kubectl_run("get", "apiservice", metrics_server.APISERVICE, "-o", "json").stdout
    )
    available = [c for c in service["status"]["conditions"] if c["type"] == "Available"]
    assert available and available[0]["status"] == "True"


def test_the_annotated_cpu_usage_is_what_the_metrics_api_reports(
    kube: KubeCluster, namespace: str
) -> None:
    kube.kubectl_run("create", "-f", "-", stdin=json.dumps(pod(namespace, "busy", "500m")))
    assert settles_near(kube, namespace, "busy", Decimal("0.5"))
    kube.kubectl_run(
        "annotate",
        "pod",
        "busy",
        "-n",
        namespace,
        "--overwrite",
        f"{metrics_server.USAGE_CPU_ANNOTATION}=1500m",
    )
    assert settles_near(kube, namespace, "busy", Decimal("1.5"))
