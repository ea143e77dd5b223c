"""`cliques dev-cluster up --with prometheus` end to end, in a dev cluster of its own
(`cliques-prom`): Prometheus (built from its Go module) runs as a host process of the
cluster (`status` lists it, `down` stops it), answers /-/ready, has loaded the chart's three
alerts, and scrapes the operator at the addresses of its targets file: a `cliques
operator` started against the cluster and listed there is scraped, and its readiness and
its sets' gang metrics come back from Prometheus' API.

Marked `monitoring` (deselected unless asked: `make test-monitoring`), since the first
build of Prometheus takes many minutes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.addon_cluster import addon_cluster, make_namespace, wait_for
from tests.support.cluster_fixtures import KubeCluster, addon_build_error
from tests.support.harness import install_crds

from cliques_lab.devcluster import addons_up, build
from cliques_lab.devcluster import cluster as devcluster
from cliques_lab.devcluster import prometheus as prom

pytestmark = [pytest.mark.cluster, pytest.mark.addons("prometheus"), pytest.mark.monitoring]

NAME = "cliques-prom"
#: a few scrapes (every 5 s) and a re-read of the targets file (every 5 s)
WAIT = 60.0


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    failed = addon_build_error(request.config)
    if failed is not None:
        pytest.fail(f"the dev cluster's add-ons could not be built:\n{failed}", pytrace=False)
    with addon_cluster(NAME, ["prometheus"]) as cluster:
        yield cluster


def api(path: str, **params: str) -> Any:
    paths = devcluster.ClusterPaths(build.cache_root(), NAME)
    port = addons_up.prometheus_port(paths)
    assert port is not None, "no prometheus/web-port"
    url = f"http://127.0.0.1:{port}{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as answer:
        body = answer.read()
    return json.loads(body) if path.startswith("/api/") else body.decode()


def state_dir() -> Path:
    return devcluster.ClusterPaths(build.cache_root(), NAME).state_dir / "prometheus"


def test_prometheus_runs_with_the_charts_alerts(kube: KubeCluster) -> None:
    components = {c.name: c for c in devcluster.status(NAME).components}
    assert components["prometheus"].running, components
    assert "prometheus" in devcluster.status(NAME).addons
    assert "Ready" in api("/-/ready")

    def rules() -> list[dict[str, Any]]:
        found = [r for g in api("/api/v1/rules")["data"]["groups"] for r in g["rules"]]
        return found

    names = {"CliquesGangNotWhole", "CliquesGangRestartsExhausted", "CliquesOperatorNotReady"}
    assert {r["name"] for r in rules()} == names
    # (health is "unknown" until the first evaluation)
    wait_for(
        lambda: all(r["health"] == "ok" for r in rules()),
        "the alerts evaluated without errors",
        WAIT,
        detail=lambda: str(rules()),
    )
    config = yaml.safe_load((state_dir() / prom.CONFIG_FILE).read_text())
    assert config["global"]["scrape_interval"] == "5s"

    def operator_target() -> bool:
        targets = api("/api/v1/targets")["data"]["activeTargets"]
        return any(t["labels"]["instance"] == prom.OPERATOR_TARGET for t in targets)

    wait_for(operator_target, f"Prometheus to list {prom.OPERATOR_TARGET}", WAIT)


def test_an_operator_listed_in_the_targets_file_is_scraped(
    kube: KubeCluster, tmp_path: Path
) -> None:
    install_crds(str(kube.kubeconfig))
    ns = make_namespace(kube, "t-prom")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    targets = state_dir() / prom.TARGETS_FILE
    before = targets.read_text()
    targets.write_text(prom.targets_text([prom.OPERATOR_TARGET, f"127.0.0.1:{port}"]))
    log = tmp_path / "operator.log"
    argv = [sys.executable, "-m", "cliques", "operator", "--kubeconfig", str(kube.kubeconfig)]
    argv += ["--namespace", ns, "--metrics-bind-address", f"127.0.0.1:{port}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        body = {
            "apiVersion": "cliques.dev/v1alpha1",
            "kind": "CliqueSet",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 2,
                "template": {
                    "cliques": [
                        {
                            "name": "main",
                            "replicas": 1,
                            "template": {
                                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
                            },
                        }
                    ]
                },
            },
        }
        kube.kubectl_run("apply", "-f", "-", stdin=json.dumps(body))

        def query(expr: str) -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = api("/api/v1/query", query=expr)["data"]["result"]
            return found

        instance = f'instance="127.0.0.1:{port}"'
        wait_for(
            lambda: query(f"cliques_operator_ready{{{instance}}} == 1"),
            "the operator scraped and ready",
            WAIT,
            detail=lambda: log.read_text()[-1500:],
        )
        whole = f'cliques_cliqueset_gangs_whole{{namespace="{ns}", cliqueset="web"}} == 2'
        wait_for(lambda: query(whole), "2 whole gangs of web", WAIT)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        targets.write_text(before)
        kube.kubectl_run("delete", "namespace", ns, "--wait=false", check=False)
