"""A dev cluster of its own with add-ons (`cliques dev-cluster up --with ...`), or with other
settings (a release, feature gates), for the e2e tests that need them: add-ons change a
cluster (webhooks on every pod, a kwokctl component), and so do gates, so these tests never
use the session's shared cluster.

`addon_cluster(name, addons)` brings the cluster up through the CLI (building what is missing:
tests/support/cluster_fixtures.py builds the add-ons of tests marked `addons(...)` before the
first test, so that no test's time limit counts a build), yields a `KubeCluster` for it, and
takes it down with the CLI when the last test session using it ends (unless
`CLIQUES_KEEP_CLUSTER=1`, or a person had started it), checking that no process of it is
left. `wait_for` polls a condition with a deadline; `make_namespace` makes a namespace ready
for pods.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import pytest

from cliques_lab.devcluster import build, processes
from cliques_lab.devcluster import cluster as devcluster
from tests.support.cluster_fixtures import KubeCluster, _shared_by_sessions

T = TypeVar("T")


def cli(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cliques", "dev-cluster", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def addon_cluster(
    name: str, addons: Sequence[str], up_args: Sequence[str] = ()
) -> Iterator[KubeCluster]:
    """Cluster `name` with `addons` (and `up_args`, e.g. `--kube-version` and
    `--feature-gates`), up for the block (see the module docstring)."""
    sessions = build.cache_root() / "pytest"
    owned_marker = sessions / f"{name}.owned"
    with _shared_by_sessions(sessions / f"{name}.sessions") as last_session:
        with_args = [arg for addon in addons for arg in ("--with", addon)] + list(up_args)
        absent = devcluster.status(name).state == "absent"
        done = cli("up", "--name", name, *with_args, "--timeout", "180")
        if done.returncode != 0:
            command = f"cliques dev-cluster up --name {name} {' '.join(with_args)}"
            pytest.fail(f"`{command}` failed:\n{done.stderr[-6000:]}", pytrace=False)
        if absent:
            owned_marker.touch()
        info = devcluster.info(name)
        yield KubeCluster(
            kubeconfig=info.kubeconfig,
            server=info.server,
            kubectl=info.kubectl,
            name=name,
            logs_dir=info.logs_dir,
            kube_cache=info.kube_cache,
            started_here=owned_marker.exists(),
        )
        keep = os.environ.get("CLIQUES_KEEP_CLUSTER") == "1"
        if owned_marker.exists() and not keep and last_session():
            _down(name)
            owned_marker.unlink(missing_ok=True)


def _down(name: str) -> None:
    """`cliques dev-cluster down`, then no process of the cluster (add-ons included) runs."""
    pids = [c.pid for c in devcluster.status(name).components if c.pid]
    done = cli("down", "--name", name, timeout=180)
    assert done.returncode == 0, done.stderr
    assert devcluster.status(name).state == "absent"
    left = processes.ps(pids)
    assert not left, f"processes of dev cluster {name} left after down: {left}"


def wait_for(
    check: Callable[[], T | None],
    what: str,
    timeout: float,
    detail: Callable[[], str] | None = None,
) -> T:
    """Poll `check` until it returns something other than None or False; fail naming
    `what` (and what `detail` says then) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result is not None and result is not False:
            return result
        if time.monotonic() > deadline:
            said = f"; {detail()}" if detail is not None else ""
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}{said}")
        time.sleep(0.5)


def make_namespace(kube: KubeCluster, prefix: str) -> str:
    """A new namespace (`<prefix>-<hex>`) whose default ServiceAccount exists."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    kube.kubectl_run("create", "namespace", name)
    wait_for(
        lambda: kube.kubectl_run("get", "sa", "default", "-n", name, check=False).returncode == 0,
        f"the default ServiceAccount of {name}",
        60,
    )
    return name
