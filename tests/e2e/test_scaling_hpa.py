"""The operator's HPAs acting on simulated load, in the dev cluster with metrics-server
(`cliques-metrics`, shared with lab/tests/e2e/test_devcluster_metrics.py): KWOK reports a
pod's CPU usage from its `kwok.x-k8s.io/usage-cpu` annotation, metrics-server serves it, and
kube-controller-manager's HPA controller scales the target the operator's HPA names.

Writing high usage on the decode pods of the disaggregated example scales its decode
clique to the HPA's maximum; low usage brings it back to the minimum; no pod of another
clique is replaced on the way, and the set never reverts what the HPA chose. metrics-server
scrapes every 15 s and the HPA controller syncs every 15 s, so each step waits minutes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cliques.api.clique import Clique
from cliques.kube.resources import CLIQUES, PODS
from cliques_lab.devcluster import metrics_server
from tests.support.addon_cluster import addon_cluster, make_namespace
from tests.support.cluster_fixtures import KubeCluster, addon_build_error
from tests.support.harness import Cluster, connected, install_crds, running_operator, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.addons("metrics-server")]

CLUSTER = "cliques-metrics"
EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "disaggregated.yaml"
NAME = "disagg"
#: scrape interval, HPA sync and the stabilization of a scale-up: minutes per step
STEP = 300.0


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    failed = addon_build_error(request.config)
    if failed is not None:
        pytest.fail(f"the dev cluster's add-ons could not be built:\n{failed}", pytrace=False)
    with addon_cluster(CLUSTER, ["metrics-server"]) as cluster:
        install_crds(str(cluster.kubeconfig))
        yield cluster


@pytest.fixture
def namespace(kube: KubeCluster) -> Iterator[str]:
    name = make_namespace(kube, "t-hpa")
    try:
        yield name
    finally:
        kube.kubectl_run("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
async def cluster(kube: KubeCluster, namespace: str) -> AsyncIterator[Cluster]:
    async with connected(str(kube.kubeconfig), namespace) as cluster:
        yield cluster


def example() -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    decode = body["spec"]["template"]["cliques"][3]
    assert decode["name"] == "decode"
    # scale down as soon as the load drops (the example waits a minute)
    decode["autoscaling"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 0}}
    return body


async def live_pods(cluster: Cluster) -> dict[str, dict[str, Any]]:
    raw = await cluster.client.list_page(PODS, cluster.namespace)
    return {
        p["metadata"]["name"]: p
        for p in json.loads(raw)["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


def decode_pods(pods: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {n: p for n, p in pods.items() if n.startswith(f"{NAME}-0-decode-")}


def annotate_usage(kube: KubeCluster, namespace: str, names: list[str], usage: str) -> None:
    kube.kubectl_run(
        "annotate",
        "pod",
        *names,
        "-n",
        namespace,
        "--overwrite",
        f"{metrics_server.USAGE_CPU_ANNOTATION}={usage}",
    )


async def test_load_on_decode_scales_it_to_the_maximum_and_back_replacing_nothing_else(
    kube: KubeCluster, cluster: Cluster, namespace: str
) -> None:
    body = example()
    async with running_operator(str(kube.kubeconfig), namespace):
        await cluster.apply(body)
        await cluster.wait_available(NAME, timeout=120)
        before = await live_pods(cluster)
        others = {
            n: p["metadata"]["uid"] for n, p in before.items() if n not in decode_pods(before)
        }
        assert len(decode_pods(before)) == 1

        # 200m of a 100m request: 200% against a 50% target, so the HPA wants 4 (its max).
        # New pods start at the template's 10m; the busy one keeps the average high.
        annotate_usage(kube, namespace, list(decode_pods(before)), "200m")

        async def at(count: int) -> dict[str, dict[str, Any]] | None:
            pods = await live_pods(cluster)
            ready = [
                p
                for p in decode_pods(pods).values()
                if any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in p["status"].get("conditions", [])
                )
            ]
            return pods if len(ready) == count and len(decode_pods(pods)) == count else None

        grown = await wait_for(lambda: at(4), timeout=STEP, what="decode scaled to 4 by its HPA")
        assert {n: grown[n]["metadata"]["uid"] for n in others} == others
        # the set does not take the HPA's count back (the template says 1)
        clique = await cluster.client.get(CLIQUES, namespace, f"{NAME}-0-decode", Clique)
        assert clique.spec.replicas == 4

        annotate_usage(kube, namespace, list(decode_pods(grown)), "5m")
        shrunk = await wait_for(lambda: at(1), timeout=STEP, what="decode back to 1")
        assert {n: shrunk[n]["metadata"]["uid"] for n in others} == others
        await cluster.wait_available(NAME, timeout=60)
