"""The benchmark's kopf peer (bench/peers/kopf) against the real local control plane.

The peer runs as the benchmark runs it: from its own virtualenv (made by
bench/peers/kopf/venv.py, never the project's .venv), as `python -m kopf run --standalone
--namespace NS bench/peers/kopf/operator.py` with KUBECONFIG set. The test applies a
CliqueSet of 2 gangs x (1 leader + 2 workers), waits until the 6 pods are Ready and the
CliqueSet reports 2 ready gangs, checks what the peer made (Clique records, pod names,
labels, env, hostnames, owners), then scales to 1 gang and waits until the other gang's
pods are gone. Every wait polls with a deadline; the peer's log is kept (and its tail
shown) when the test fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.support.kubectl import Kubectl

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[3]
PEER = REPO / "bench" / "peers" / "kopf"
CRDS = REPO / "deploy" / "crds"
VENV_TIMEOUT = 420.0  # a first run pip-installs kopf and kubernetes
WAIT_TIMEOUT = 120.0
LOG_TAIL = 6000
T = TypeVar("T")

CLIQUESET = {
    "apiVersion": "cliques.dev/v1alpha1",
    "kind": "CliqueSet",
    "metadata": {"name": "demo"},
    "spec": {
        "replicas": 2,
        "template": {
            "cliques": [
                {
                    "name": role,
                    "replicas": replicas,
                    "minAvailable": replicas,
                    "template": {
                        "metadata": {"labels": {"app": "demo", "role": role}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox:1.36",
                                    "command": ["sleep", "1000000"],
                                    "env": [{"name": "MODEL", "value": "demo"}],
                                }
                            ]
                        },
                    },
                }
                for role, replicas in (("leader", 1), ("worker", 2))
            ]
        },
    },
}


def pod_names(gangs: int) -> set[str]:
    return {
        f"demo-{gang}-{role}-{i}"
        for gang in range(gangs)
        for role, replicas in (("leader", 1), ("worker", 2))
        for i in range(replicas)
    }


@dataclass
class Peer:
    proc: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        try:
            data = self.log.read_bytes()[-LOG_TAIL:]
        except OSError as exc:
            return f"(no log: {exc})"
        return data.decode(errors="replace")


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def wait_for(check: Callable[[], T | None], what: str, peer: Peer) -> T:
    """Poll `check` until it returns something truthy; fail on the deadline or if the peer
    exits, saying what was awaited and what was seen last."""
    deadline = time.monotonic() + WAIT_TIMEOUT
    while True:
        result = check()
        if result:
            return result
        if peer.proc.poll() is not None:
            pytest.fail(f"the kopf peer exited ({peer.proc.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {WAIT_TIMEOUT:.0f}s waiting for {what}")
        time.sleep(0.3)


@pytest.fixture(scope="module")
def kopf_python() -> str:
    """The kopf venv's python (created on first use, like the benchmark does)."""
    done = subprocess.run(
        [sys.executable, str(PEER / "venv.py")],
        capture_output=True,
        text=True,
        timeout=VENV_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"bench/peers/kopf/venv.py failed ({done.returncode}):\n{done.stderr}")
    python = done.stdout.strip().splitlines()[-1]
    assert Path(python).is_file(), python
    assert not Path(python).absolute().is_relative_to(REPO), "the peer's venv is outside"
    # ... and the project's own environment gets neither kopf nor the sync client.
    assert importlib.util.find_spec("kopf") is None
    return python


@pytest.fixture
def kubectl(kubeconfig: str, namespace: str) -> Kubectl:
    ctl = Kubectl(kubeconfig, namespace)
    ctl.ok("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    ctl.ok(
        "wait",
        "--for=condition=established",
        "--timeout=60s",
        "crd/cliquesets.cliques.dev",
        "crd/cliques.cliques.dev",
        "crd/cliquescalinggroups.cliques.dev",
    )
    return ctl


@pytest.fixture
def peer(
    kopf_python: str, kubeconfig: str, namespace: str, tmp_path: Path, kubectl: Kubectl
) -> Iterator[Peer]:
    log = tmp_path / "kopf-peer.log"
    argv = [kopf_python, "-m", "kopf", "run", "--standalone", "--namespace", namespace]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*argv, str(PEER / "operator.py")],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "KUBECONFIG": kubeconfig},
            cwd=REPO,
            start_new_session=True,
        )
    running = Peer(proc, log)
    try:
        yield running
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # kopf stops gracefully on SIGINT/SIGTERM
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@contextmanager
def peer_log_on_failure(peer: Peer) -> Iterator[None]:
    """On failure keep the peer's log and show its tail; on success remove it."""
    try:
        yield
    except (AssertionError, pytest.fail.Exception) as exc:
        pytest.fail(f"{exc}\n\nkopf peer log kept at {peer.log}; its tail:\n{peer.tail()}")
    except BaseException:
        print(f"kopf peer log kept at {peer.log}; its tail:\n{peer.tail()}", file=sys.stderr)
        raise
    peer.log.unlink(missing_ok=True)


def test_kopf_peer_creates_gangs_reports_status_and_scales_down(
    peer: Peer, kubectl: Kubectl
) -> None:
    with peer_log_on_failure(peer):
        kubectl.ok("apply", "-f", "-", stdin=json.dumps(CLIQUESET))

        def all_ready(gangs: int) -> list[dict[str, Any]] | None:
            pods = kubectl.items("pods")
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            names = {p["metadata"]["name"] for p in pods}
            if names == pod_names(gangs) and len(live) == len(pods) and all(map(_ready, pods)):
                return pods
            return None

        def status_ready(gangs: int) -> dict[str, Any] | None:
            cqs = kubectl.get("cliqueset", "demo")
            status = cqs.get("status") or {}
            available = {c["type"]: c["status"] for c in status.get("conditions") or []}
            if (
                status.get("observedGeneration") == cqs["metadata"]["generation"]
                and status.get("readyReplicas") == gangs
                and status.get("replicas") == gangs
                and available.get("Available") == "True"
            ):
                return status
            return None

        pods = wait_for(lambda: all_ready(2), "6 Ready pods of 2 gangs", peer)
        status = wait_for(lambda: status_ready(2), "CliqueSet status readyReplicas 2", peer)
        assert status["updatedReplicas"] == 2
        assert status["selector"] == "cliques.dev/cliqueset=demo"

        cqs = kubectl.get("cliqueset", "demo")
        cliques = {c["metadata"]["name"]: c for c in kubectl.items("cliques.cliques.dev")}
        assert set(cliques) == {f"demo-{g}-{r}" for g in (0, 1) for r in ("leader", "worker")}
        worker = cliques["demo-1-worker"]
        assert worker["spec"]["cliqueName"] == "worker"
        assert worker["spec"]["gangIndex"] == 1
        assert worker["spec"]["replicas"] == 2
        assert worker["spec"]["minAvailable"] == 2
        assert worker["spec"]["startsAfter"] == []
        assert [(o["kind"], o["uid"]) for o in worker["metadata"]["ownerReferences"]] == [
            ("CliqueSet", cqs["metadata"]["uid"])
        ]

        pod = next(p for p in pods if p["metadata"]["name"] == "demo-1-worker-1")
        labels = pod["metadata"]["labels"]
        assert labels["cliques.dev/cliqueset"] == "demo"
        assert labels["cliques.dev/gang-index"] == "1"
        assert labels["cliques.dev/clique"] == "worker"
        assert labels["cliques.dev/pod-index"] == "1"
        assert (
            labels["cliques.dev/template-hash"]
            == worker["metadata"]["labels"]["cliques.dev/template-hash"]
        )
        assert labels["role"] == "worker"
        assert pod["spec"]["hostname"] == "worker-1"
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["MODEL"] == "demo"
        assert env["CLIQUES_SET"] == "demo"
        assert env["CLIQUES_GANG_INDEX"] == "1"
        assert env["CLIQUES_CLIQUE"] == "worker"
        assert env["CLIQUES_POD_INDEX"] == "1"
        assert env["CLIQUES_CLIQUE_SIZE"] == "2"
        assert env["CLIQUES_LEADER_ADDRESS"] == f"leader-0.demo-1.{kubectl.namespace}.svc"
        assert [(o["kind"], o["uid"]) for o in pod["metadata"]["ownerReferences"]] == [
            ("Clique", worker["metadata"]["uid"])
        ]

        # Scale to one gang through the scale subresource: gang 1 goes (its Cliques are
        # deleted, the garbage collector removes their pods), gang 0 stays as it was.
        kept = {
            p["metadata"]["name"]: p["metadata"]["uid"]
            for p in pods
            if p["metadata"]["name"] in pod_names(1)
        }
        kubectl.ok("scale", "cliqueset/demo", "--replicas=1")
        pods = wait_for(lambda: all_ready(1), "the pods of gang 1 to be gone", peer)
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods} == kept
        wait_for(lambda: status_ready(1), "CliqueSet status readyReplicas 1", peer)
        assert {c["metadata"]["name"] for c in kubectl.items("cliques.cliques.dev")} == {
            "demo-0-leader",
            "demo-0-worker",
        }
        assert peer.proc.poll() is None, "the kopf peer exited"
