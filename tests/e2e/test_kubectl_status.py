"""`kubectl cliques` against the real control plane, run as a user runs it: a process of its
own (`python -m cliques.kubectl`, what the `kubectl-cliques` script runs) with `-n` and
`--kubeconfig`.

- `status` of a set whose worker asks for more CPU than any node has (the dev cluster's
  KWOK nodes have 32) quotes the scheduler's reason, fits 100 columns, and says the same
  as JSON; `status` of a set that does not exist is one line and exit code 4.
- `diff` of a set whose spec changed while no operator ran (its Cliques still run the old
  template) names the changed image, and exits 1; once the operator rolled it, `diff` says
  why it rolled: its two ControllerRevisions differ in that image (exit 1).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from cliques.api import labels
from cliques.kubectl import exits
from cliques.kubectl.render import WIDTH
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
#: More CPU than a dev-cluster node has (cliques_lab.devcluster.kwok.NODE_CAPACITY: 32).
TOO_MUCH_CPU = "64"


async def plugin(*args: str, kubeconfig: str, namespace: str) -> tuple[int, str, str]:
    """Run `kubectl cliques ARGS -n NAMESPACE --kubeconfig KUBECONFIG` as a process (without
    blocking the operator that runs in this event loop): (exit code, stdout, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), *filter(None, [env.get("PYTHONPATH")])]
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cliques.kubectl",
        *args,
        "-n",
        namespace,
        "--kubeconfig",
        kubeconfig,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _cannot_fit(name: str) -> dict[str, Any]:
    body = cliqueset(name, replicas=1, workers=1)
    worker = body["spec"]["template"]["cliques"][1]["template"]["spec"]["containers"][0]
    worker["resources"] = {"requests": {"cpu": TOO_MUCH_CPU, "memory": "64Mi"}}
    return body


async def test_status_quotes_the_schedulers_reason_for_a_worker_that_cannot_fit(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    async with running_operator(crds, ns):
        await cluster.apply(_cannot_fit("nofit"))

        async def unschedulable() -> str | None:
            for pod in await cluster.pods():
                if pod.metadata.labels.get(labels.LABEL_CLIQUE) == "worker" and (
                    "Insufficient cpu" in pod.unschedulable_why
                ):
                    return pod.unschedulable_why
            return None

        said = await wait_for(unschedulable, timeout=90, what="the worker pod unschedulable")

        code, out, err = await plugin("status", "nofit", kubeconfig=crds, namespace=ns)
        assert (code, err) == (exits.OK, ""), err
        lines = out.splitlines()
        assert lines[0] == f"CliqueSet {ns}/nofit", out
        assert lines[1].startswith("  0/1 gang(s) whole; ready 0,"), out
        assert any(line.startswith("gang 0  NOT WHOLE") for line in lines), out
        assert any("nofit-0-worker-0" in line and "Unschedulable" in line for line in lines), out
        # the scheduler's reason, quoted (wrapped lines joined back)
        why = " ".join(line.strip() for line in lines if line.startswith("  "))
        assert "the scheduler cannot place nofit-0-worker-0:" in why, out
        assert "Insufficient cpu" in why, out
        assert said.split(":")[0] in why, (said, out)
        assert all(len(line) <= WIDTH for line in lines), out

        code, out, err = await plugin(
            "status", "nofit", "-o", "json", kubeconfig=crds, namespace=ns
        )
        assert code == exits.OK, err
        doc = json.loads(out)
        (gang,) = doc["gangs"]
        assert gang["whole"] is False
        reasons = [w for w in gang["why"] if w["objects"] == ["nofit-0-worker-0"]]
        assert [w["kind"] for w in reasons] == ["Unschedulable"], doc
        assert f'"{said.strip()}"' in reasons[0]["message"], doc
        assert [c["clique"] for c in gang["cliques"]] == ["leader", "worker"]

    code, out, err = await plugin("status", "no-such-set", kubeconfig=crds, namespace=ns)
    assert code == exits.NOT_FOUND
    assert out == ""
    assert err.strip() == (
        f'kubectl cliques status: CliqueSet "no-such-set" not found in namespace "{ns}"'
    )
    assert len(err.strip().splitlines()) == 1


async def test_diff_names_what_changed_until_the_gangs_run_it(cluster: Cluster, crds: str) -> None:
    ns = cluster.namespace
    body = cliqueset("rolled", replicas=1, workers=1)
    async with running_operator(crds, ns):
        await cluster.apply(body)
        await cluster.wait_available("rolled")
    code, out, err = await plugin("diff", "rolled", kubeconfig=crds, namespace=ns)
    assert code == exits.OK, (out, err)
    assert "same desired state" in out

    # Changed while no operator runs: the Cliques still run the old image.
    worker = body["spec"]["template"]["cliques"][1]["template"]["spec"]["containers"][0]
    worker["image"] = "busybox:1.37"
    await cluster.apply(body)
    code, out, err = await plugin("diff", "rolled", kubeconfig=crds, namespace=ns)
    assert code == exits.DIFFERENT, (out, err)
    lines = out.splitlines()
    assert "a change not rolled out" in " ".join(out.split())
    assert any(line.startswith("clique leader (gang 0): same") for line in lines), out
    assert any(line.startswith("clique worker (gang 0): different") for line in lines), out
    assert "  first difference at spec.containers[name=main].image" in lines, out
    assert '"busybox:1.36"' in out and '"busybox:1.37"' in out
    assert "in place: yes" in out

    # Once the gangs run it, diff says why the set rolled: its last two revisions.
    async with running_operator(crds, ns):
        await cluster.wait_available("rolled", timeout=120)
    code, out, err = await plugin("diff", "rolled", "-o", "json", kubeconfig=crds, namespace=ns)
    assert code == exits.DIFFERENT, (out, err)
    doc = json.loads(out)
    assert doc["same"] is False and "ControllerRevision" in doc["compared"], doc
    worker_diff = next(c for c in doc["cliques"] if c["clique"] == "worker")
    assert not worker_diff["same"], doc
