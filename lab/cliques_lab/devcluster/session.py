"""Using a dev cluster from another command (`cliques demo`, `cliques bench scale`).

`start()` runs `cliques dev-cluster up` (reusing a running cluster, building binaries on
first use, with its own progress output; `fresh=True` stops a running one first) and
returns an environment whose KUBECONFIG and PATH point at that cluster and its kubectl;
`install_crds()` applies the cliques CRDs and waits until the API server serves them and
the controller-manager watches them (`watched`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
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


def install_crds(env: dict[str, str], crds: Path, *, watch_timeout: float = 120.0) -> None:
    """`kubectl apply --server-side` the CRDs, wait until they are Established, then until
    the controller-manager watches them (`watched`; a note on stderr if it does not
    within `watch_timeout` seconds)."""
    for argv in (
        ["apply", "--server-side", "--force-conflicts", "-f", str(crds)],
        ["wait", "--for=condition=established", "--timeout=60s", *CRD_NAMES],
    ):
        done = subprocess.run(
            ["kubectl", *argv], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise DevClusterError(f"kubectl {' '.join(argv)} failed:\n{done.stderr}")
    deadline = time.monotonic() + watch_timeout
    while not watched(_metrics(env)):
        if time.monotonic() > deadline:
            print(
                f"note: the controller-manager does not watch the CRDs after {watch_timeout:.0f}"
                " s; its garbage collector will GET the owner of every new dependent",
                file=sys.stderr,
            )
            return
        time.sleep(1.0)


#: `apiserver_longrunning_requests{...}` of the watches of one resource: its labels.
_LONGRUNNING = re.compile(r"^apiserver_longrunning_requests\{([^}]*)\} (\S+)$", re.M)


def watched(metrics: str) -> bool:
    """Whether the API server's /metrics text shows a watch open on every CRD's resource.

    A new CRD is watched by the controller-manager's garbage collector only from its next
    discovery sync (every 30 s; on a new cluster the first ones wait for its caches). Until
    then a dependent of an object of that kind (a pod of a Clique) makes its owner a
    "virtual" node of the collector's graph, which it GETs, with growing back-off, until it
    has seen the object through its own watch: hundreds of GETs on a fresh cluster, long
    after the set was Available, that no operator sent. Called before any operator runs,
    so a watch open on each resource is the controller-manager's."""
    open_watches: dict[str, float] = {}
    for labels, value in _LONGRUNNING.findall(metrics):
        lab = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if lab.get("verb") == "WATCH" and lab.get("group") == "cliques.dev":
            resource = lab.get("resource", "")
            open_watches[resource] = open_watches.get(resource, 0.0) + float(value)
    wanted = [name.removeprefix("crd/").split(".", 1)[0] for name in CRD_NAMES]
    return all(open_watches.get(r, 0.0) >= 1 for r in wanted)


def _metrics(env: dict[str, str]) -> str:
    """The API server's /metrics text ("" when kubectl cannot read it)."""
    done = subprocess.run(
        ["kubectl", "get", "--raw", "/metrics"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else ""
