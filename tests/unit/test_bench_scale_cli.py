"""`cliques bench scale` options that decide which cluster is used (no cluster started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cliques.bench import scale_cli
from cliques.cli import build_parser
from cliques.devcluster import session


def test_fresh_cluster_is_refused_with_an_external_kubeconfig(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["bench", "scale", "--operators", "cliques-w1", "--fresh-cluster"]
    args = build_parser().parse_args(
        [*argv, "--kubeconfig", str(tmp_path / "kc"), "--out", str(tmp_path)]
    )
    assert args.func(args) == 2
    assert "--fresh-cluster restarts a dev cluster" in capsys.readouterr().err


@pytest.mark.parametrize("fresh", [False, True])
def test_the_dev_cluster_is_restarted_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, fresh: bool
) -> None:
    calls: list[tuple[str, Any]] = []

    def start(name: str, nodes: int, **kw: Any) -> dict[str, str]:
        calls.append(("start", (name, nodes, kw)))
        return {"KUBECONFIG": "/kc"}

    monkeypatch.setattr(session, "start", start)
    monkeypatch.setattr(session, "install_crds", lambda env, crds: calls.append(("crds", crds)))
    argv = ["bench", "scale", "--cluster", "b", "--nodes", "7"]
    args = build_parser().parse_args(argv + (["--fresh-cluster"] if fresh else []))
    assert scale_cli._kubeconfig(args) == "/kc"
    assert calls[0] == ("start", ("b", 7, {"disable_qps_limits": True, "fresh": fresh}))
    assert calls[1][0] == "crds"


def test_a_fresh_start_stops_the_running_cluster_first(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    monkeypatch.setattr(session, "_cli", lambda *a: order.append(" ".join(a)) or "/kc\n")

    class Done:
        returncode = 0

    monkeypatch.setattr(session.subprocess, "run", lambda cmd, check: order.append("up") or Done())
    session.start("b", 3, fresh=True)
    assert order[:2] == ["down --name b", "up"]
    order.clear()
    session.start("b", 3)
    assert order[0] == "up"
