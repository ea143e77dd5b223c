"""Using a dev cluster from another command (`cliques demo`, `cliques bench scale`).

`start()` runs `cliques dev-cluster up` (reusing a running cluster, building binaries on
first use, with its own progress output; `fresh=True` stops a running one first) and
returns an environment whose KUBECONFIG and PATH point at that cluster and its kubectl;
`install_crds()` applies the cliques CRDs and waits until the API server serves them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cliques_lab.devcluster.errors import DevClusterError

CRD_NAMES = (
    "crd/cliquesets.cliques.dev",
    "crd/cliques.cliques.dev",
    "crd/cliquescalinggroups.cliques.dev",
)


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cliques", "dev-cluster", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise DevClusterError(f"`cliques dev-cluster {' '.join(args)}` failed:\n{done.stderr}")
    return done.stdout


def start(
    name: str, nodes: int, *, disable_qps_limits: bool = False, fresh: bool = False
) -> dict[str, str]:
    """Bring the cluster up (or reuse it; with `fresh`, stop and remove it first); return an
    environment for kubectl and clients."""
    if fresh:
        print(f"stopping dev cluster {name!r} for a fresh one...", flush=True)
        _cli("down", "--name", name)
    cmd = [sys.executable, "-m", "cliques", "dev-cluster", "up", "--name", name]
    cmd += ["--nodes", str(nodes)]
    if disable_qps_limits:
        cmd.append("--disable-qps-limits")
    if subprocess.run(cmd, check=False).returncode != 0:
        raise DevClusterError(f"dev cluster {name!r} did not come up (see the messages above)")
    env = dict(os.environ, KUBECONFIG=_cli("kubeconfig", "--name", name).strip())
    for line in _cli("env", "--name", name).splitlines():
        if line.startswith("export PATH="):
            env["PATH"] = os.path.expandvars(line.removeprefix("export PATH=").strip("'\""))
    return env


def install_crds(env: dict[str, str], crds: Path) -> None:
    """`kubectl apply --server-side` the CRDs and wait until they are Established."""
    for argv in (
        ["apply", "--server-side", "--force-conflicts", "-f", str(crds)],
        ["wait", "--for=condition=established", "--timeout=60s", *CRD_NAMES],
    ):
        done = subprocess.run(
            ["kubectl", *argv], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise DevClusterError(f"kubectl {' '.join(argv)} failed:\n{done.stderr}")
