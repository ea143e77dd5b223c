"""bench/transport-floor/run.py against the real local control plane, on a small shape.

The script is the measurement behind the README's account of the kopf CPU ratio, so it
must keep working: one round of each kind of work on 1 CliqueSet x 2 gangs x 2 pods must
make exactly the writes it claims (4 Cliques, 4 pods, the set's one Service, then one status per
Clique and one for the CliqueSet; the peer's work leaves out the Clique status; the pods
work makes only the 4 pods and the Service), see every pod Ready, leave no namespace
behind, and print a floor for each, with what the dev cluster's control plane spent.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cluster_fixtures import KubeCluster
from tests.support.kubectl import Kubectl

pytestmark = pytest.mark.cluster

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "transport-floor" / "run.py"


def test_one_round_of_each_work_makes_exactly_the_writes_of_a_deploy(
    crds: str, kube_cluster: KubeCluster
) -> None:
    # The control plane's CPU is read from a dev cluster's processes (none for a cluster
    # given by CLIQUES_KUBECONFIG).
    ours = kube_cluster.name is not None
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--kubeconfig",
            crds,
            "--shape",
            "1x2x2",
            "--rounds",
            "1",
            "--timeout",
            "120",
            "--work",
            "cliques,peer,pods",
            "--cluster",
            kube_cluster.name or "no-dev-cluster",
        ],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    writes = dict(re.findall(r"round 1 (\w+): (\d+) writes", done.stdout))
    assert writes == {"cliques": "14", "peer": "10", "pods": "5"}, done.stdout
    floors = re.findall(r"1x2x2 (\w+): floor CPU median ([\d.]+) s", done.stdout)
    assert [w for w, _ in floors] == ["cliques", "peer", "pods"], done.stdout
    assert all(float(cpu) > 0 for _, cpu in floors), done.stdout
    ready = re.findall(r"round 1 \w+: .* every pod Ready at ([\d.]+) s", done.stdout)
    # Measured for every work (a bare pod on a fake node can be Ready within 0.05 s: 0.0)
    assert len(ready) == 3 and all(float(t) >= 0 for t in ready), done.stdout
    plane = re.findall(r"(\w+): .*control plane CPU median ([\d.]+) s", done.stdout)
    assert [w for w, _ in plane] == (["cliques", "peer", "pods"] if ours else []), done.stdout
    assert all(float(cpu) > 0 for _, cpu in plane), done.stdout
    names = [ns["metadata"]["name"] for ns in Kubectl(crds).items("namespaces")]
    assert [n for n in names if n.startswith("floor-")] == []


def test_unknown_work_is_refused_before_any_cluster_is_touched() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--work", "cliques,nope", "--kubeconfig", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--work: unknown nope" in done.stderr
