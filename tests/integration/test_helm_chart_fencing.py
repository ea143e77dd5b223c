"""The Helm chart never runs two unfenced operators at once: with Leases the Deployment
rolls its pods (the Leases fence old and new), without them it recreates its one pod, and
it refuses more than one replica. `helm` only (the `helm` session fixture); what the API
server makes of the rendered objects is checked in test_helm_chart.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.test_helm_chart import CHART, RELEASE, container, one, render, run

pytestmark = pytest.mark.cluster


def strategy(helm: Path, *sets: str) -> tuple[dict[str, Any], list[str]]:
    """The Deployment's strategy and the operator's args, rendered with `--set`s."""
    args = [a for s in sets for a in ("--set", s)]
    deployment = one(render(helm, "cliques-system", *args), "Deployment")
    return deployment["spec"]["strategy"], container(deployment)["args"]


def test_with_leases_the_pods_roll_and_without_them_the_one_pod_is_recreated(
    helm: Path,
) -> None:
    rolling, args = strategy(helm)
    assert rolling == {"type": "RollingUpdate"} and "--leases" in args
    recreate, args = strategy(helm, "leases.enabled=false", "replicas=1")
    assert recreate == {"type": "Recreate"} and "--leases" not in args
    assert strategy(helm, "leases.enabled=false", "replicas=0")[0] == {"type": "Recreate"}


def test_several_replicas_without_leases_are_refused(helm: Path) -> None:
    for replicas in (2, 5):
        values = {"replicas": replicas, "leases": {"enabled": False}}
        argv = [str(helm), "template", RELEASE, str(CHART), "--values", "-"]
        done = run(argv, stdin=yaml.safe_dump(values))
        assert done.returncode != 0, f"{values} rendered"
        assert f"replicas: {replicas} needs leases.enabled=true" in done.stderr, done.stderr
    one_replica = ["--set", "leases.enabled=false", "--set", "replicas=1"]
    done = run([str(helm), "lint", "--strict", str(CHART), *one_replica])
    assert done.returncode == 0, done.stdout + done.stderr
