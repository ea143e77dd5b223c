"""`cliques bench scale --operators lws` end to end against the real local control plane:
LeaderWorkerSet's manager goes through every phase with the CliqueSets' pod templates, and
leaves no webhook configuration behind.

Marked `lws` and deselected by default (pyproject's addopts), since it needs lws-manager,
a Go build only this benchmark uses: run it with `pytest -m lws
lab/tests/e2e/test_bench_lws.py` after `cliques dev-cluster build --lws`; without the cached
binary it is skipped, never built here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.kubectl import Kubectl

from cliques_lab.bench import kinds, report
from cliques_lab.bench.workload import Shape
from cliques_lab.devcluster import build, gomodules

pytestmark = [pytest.mark.cluster, pytest.mark.lws]


def test_lws_runs_every_phase_on_the_same_pods(crds: str, tmp_path: Path) -> None:
    if build.installed_tool(gomodules.LWS) is None:
        pytest.skip("lws-manager is not in the cache: cliques dev-cluster build --lws")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cliques",
            "bench",
            "scale",
            "--kubeconfig",
            crds,
            "--shape",
            "1x2x2",
            "--operators",
            "cliques-w1,lws",
            "--steady",
            "2",
            "--timeout",
            "120",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (path,) = tmp_path.glob("scale-1x2x2-*.json")
    doc: dict[str, Any] = json.loads(path.read_text())
    want = kinds.CLIQUESET.template_hash(Shape(1, 2, 2), "None")
    assert doc["pod_template_hash"] == want
    cliques, lws = doc["runs"]
    assert (cliques["workload_kind"], lws["workload_kind"]) == ("CliqueSet", "LeaderWorkerSet")
    assert cliques["pod_template_hash"] == lws["pod_template_hash"] == want
    assert lws["error"] == ""
    assert lws["settings"]["qps"] == 500.0 and lws["settings"]["version"] == "v0.9.0"
    phases = {p["phase"]: p for p in lws["phases"]}
    assert list(phases) == list(report.PHASES)
    assert all(p["completed"] for p in phases.values())
    assert phases["pods-ready"]["spurious_creates"] == phases["pods-ready"]["spurious_deletes"] == 0
    assert phases["rolling-update"]["replaced"] == 4
    assert lws["cpu_timeline"], "the manager's CPU was sampled"
    # Nothing of the run is left in the cluster: its webhooks would catch later pods.
    kubectl = Kubectl(crds)
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        names = [i["metadata"]["name"] for i in kubectl.json("get", kind)["items"]]
        assert not [n for n in names if n.startswith("cliques-bench-lws-")], names
    assert "| lws | rolling-update |" in done.stdout
