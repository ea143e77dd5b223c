"""An operator that starts while the API server struggles waits, and serves once it can;
one that cannot work (its RBAC missing) says so in one line and stops, without a restart.

The operator runs as `cliques operator` (a supervisor and two worker processes) talking to
the real API server through the chaos proxy (`bench.chaos_proxy.FaultProxy`), which answers
every request 503 (as an API server that is starting) or 429 for the first seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import msgspec
import pytest

from cliques.kube.resources import Resource
from cliques.operator.supervisor import EXIT_NEEDS_FIX
from cliques_lab.bench import children
from cliques_lab.bench.chaos_proxy import FaultProxy
from tests.integration.test_client_throttling import write_token_kubeconfig
from tests.support.harness import Cluster, cliqueset, wait_for

#: Seconds the proxy refuses every request after the operator starts.
REFUSED = 12.0
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")


def operator(kubeconfig: str, namespace: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "cliques",
        "operator",
        "--workers",
        "2",
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        namespace,
        "--metrics-port",
        str(port),
        "--qps",
        "0",
    ]
    with open(log, "wb") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=dict(os.environ)
        )


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@pytest.mark.parametrize("status", [503, 429])
async def test_an_operator_started_while_the_api_server_refuses_waits_then_serves(
    status: int, cluster: Cluster, crds: str, namespace: str, tmp_path: Path
) -> None:
    proxy = FaultProxy(crds)
    await proxy.start()
    port = children.free_port()
    log = tmp_path / "operator.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        kubeconfig = proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig")
        proxy.refuse(REFUSED, status)
        refused_until = time.monotonic() + REFUSED
        proc = operator(kubeconfig, namespace, port, log)
        # While every request is refused: the processes live, and the operator is not ready.
        while time.monotonic() < refused_until - 1.0:
            assert proc.poll() is None, log.read_text()
            assert not ready(port), "ready while the API server refused every request"
            await asyncio.sleep(0.5)
        assert proxy.counts[f"refused {status}"] > 0

        async def serving() -> bool:
            assert proc is not None and proc.poll() is None, log.read_text()
            return await asyncio.to_thread(ready, port)

        await wait_for(serving, timeout=90, what="the operator ready once the API server answers")
        await cluster.apply(cliqueset("calm", replicas=1, workers=1))
        await cluster.wait_available("calm", timeout=60)
    finally:
        if proc is not None:  # (in a thread: the proxy serves the draining operator meanwhile)
            await asyncio.to_thread(children.stop, proc, 20)
        await proxy.close()
    text = log.read_text()
    assert "exited with" not in text, f"a worker was restarted:\n{text}"
    assert "Traceback" not in text, text
    waiting = [line for line in text.splitlines() if "waiting for the API server" in line]
    # once per process that asked (two workers), not once per retry
    assert 1 <= len(waiting) <= 2, "\n".join(waiting)
    assert "the API server answered after" in text


class _Token(msgspec.Struct):
    token: str


class _TokenRequest(msgspec.Struct):
    status: _Token


async def test_an_operator_without_rbac_says_so_and_stops(
    cluster: Cluster, crds: str, namespace: str, tmp_path: Path
) -> None:
    """A ServiceAccount with no RBAC at all: discovery answers (every authenticated user
    may read it), the first LIST is forbidden. The operator exits with EXIT_NEEDS_FIX and
    one line naming the fix; its supervisor restarts nothing."""
    admin = cluster.client
    await admin.create(SERVICE_ACCOUNTS, namespace, {"metadata": {"name": "bare"}}, dict)
    token = await admin.create(
        SERVICE_ACCOUNTS,
        namespace,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        _TokenRequest,
        name="bare",
        sub="token",
    )
    kubeconfig = write_token_kubeconfig(crds, token.status.token, tmp_path / "bare.kubeconfig")
    log = tmp_path / "operator.log"
    proc = operator(kubeconfig, namespace, children.free_port(), log)
    try:
        code = await asyncio.to_thread(proc.wait, 60)
    finally:
        with contextlib.suppress(Exception):
            children.stop(proc, grace=5)
    text = log.read_text()
    assert code == EXIT_NEEDS_FIX, text
    said = [line for line in text.splitlines() if "cannot start" in line]
    assert len(said) >= 1, text
    assert "forbidden (403)" in said[0] and "rbac.yaml" in said[0], said[0]
    assert "restarting in" not in text and "Traceback" not in text, text
