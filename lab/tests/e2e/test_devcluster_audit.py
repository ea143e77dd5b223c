"""`cliques dev-cluster up --audit` end to end, in a dev cluster of its own (`cliques-audit`):
the API server logs each write it answers, with who made it, so a deletion nobody meant can
be traced to its author (the chaos benchmark's "delete nobody meant"); reads, Leases and
Events are left out."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.addon_cluster import addon_cluster, make_namespace
from tests.support.cluster_fixtures import KubeCluster

from cliques_lab.devcluster import cluster as devcluster

pytestmark = pytest.mark.cluster

NAME = "cliques-audit"


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeCluster]:
    with addon_cluster(NAME, [], ["--audit", "--nodes", "1"]) as cluster:
        yield cluster


def _entries(log: Path) -> list[dict[str, Any]]:
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def test_a_delete_is_logged_with_its_author_and_a_read_is_not(kube: KubeCluster) -> None:
    log = devcluster.status(NAME).audit_log
    assert log is not None, "a cluster made with --audit names its audit log"
    namespace = make_namespace(kube, "t-audit")
    kube.kubectl_run("create", "configmap", "traced", "-n", namespace)
    kube.kubectl_run("get", "configmap", "traced", "-n", namespace)
    kube.kubectl_run("delete", "configmap", "traced", "-n", namespace)

    def about(entry: dict[str, Any]) -> bool:
        ref = entry.get("objectRef", {})
        return bool(ref.get("name") == "traced" and ref.get("namespace") == namespace)

    deadline = time.monotonic() + 30  # the API server writes its log in batches
    while True:
        mine = [e for e in _entries(log) if about(e)]
        if any(e["verb"] == "delete" for e in mine):
            break
        assert time.monotonic() < deadline, f"no delete of configmap traced in {log}: {mine}"
        time.sleep(0.5)
    verbs = sorted(e["verb"] for e in mine)
    assert verbs == ["create", "delete"], verbs  # the get is not logged
    delete = next(e for e in mine if e["verb"] == "delete")
    assert delete["user"]["username"] == "kwok-admin", delete["user"]  # kwokctl's admin
    assert delete["responseStatus"]["code"] == 200
    assert "requestObject" not in delete, "metadata only: no bodies"
    leases = [e for e in _entries(log) if e.get("objectRef", {}).get("resource") == "leases"]
    assert not leases, "lease renewals are left out"
    kube.kubectl_run("delete", "namespace", namespace, "--wait=false", check=False)
