"""cliques-lab reads no file of the source checkout either: no module climbs out of the
package; `cliques demo` and `cliques bench scale` install the CRDs and apply an example from
the cliques package itself; what lives only in the source tree (the kopf peer of `cliques
bench scale`, the checkout `cliques bench hash` measures) is named by an option and refused
with a clear message when it is missing, without a traceback and before any cluster starts.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from tests.support.checkout_paths import climbing_out

from cliques import data
from cliques.cli import build_parser
from cliques_lab.devcluster import session
from cliques_lab.devcluster.errors import DevClusterError

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "lab" / "cliques_lab"


def test_no_lab_module_climbs_out_of_the_package() -> None:
    assert climbing_out(LAB) == []


def _scale(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["bench", "scale", *argv])


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory is not a source checkout, and no cluster may start."""

    def start(*a: Any, **kw: Any) -> dict[str, str]:
        raise AssertionError("a cluster was started")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(session, "start", start)
    return tmp_path


def test_bench_scale_runs_without_the_kopf_peer_by_default(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cliques_lab.bench import scale_cli

    args = _scale("--kubeconfig", "/nonexistent")  # refused after the operators are resolved
    assert scale_cli._operator_names(args) == [
        ("cliques-w1", 1),
        ("cliques-wN", scale_cli.os.cpu_count() or 1),
    ]
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "--kubeconfig /nonexistent: no such file" in err


def test_bench_scale_says_where_the_kopf_peer_lives_when_asked_for_it(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _scale("--operators", "cliques-w1,kopf", "--out", str(elsewhere / "out"))
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("cliques bench scale: the kopf peer is not in bench/peers/kopf/")
    assert "--kopf-peer DIR" in err and "Traceback" not in err
    assert not (elsewhere / "out").exists()


def test_bench_scale_notes_the_missing_peer_before_the_cluster(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cliques_lab.bench import scale_cli

    scale_cli._check_args(_scale())
    assert "running without it" in capsys.readouterr().err


def test_bench_scale_finds_a_named_kopf_peer(elsewhere: Path) -> None:
    from cliques_lab.bench import scale_cli

    args = _scale("--operators", "kopf", "--kopf-peer", str(ROOT / "bench" / "peers" / "kopf"))
    assert scale_cli._operator_names(args) == [("kopf", None)]


def test_demo_uses_the_packaged_crds_and_example(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, Path] = {}

    def install_crds(env: dict[str, str], crds: Path) -> None:
        seen["crds"] = crds
        raise DevClusterError("stopped here by the test")

    monkeypatch.setattr(session, "start", lambda *a, **kw: {"KUBECONFIG": "/kc"})
    monkeypatch.setattr(session, "install_crds", install_crds)
    args = build_parser().parse_args(["demo"])
    assert args.func(args) == 1
    assert sorted(p.name for p in seen["crds"].glob("*.yaml")) == sorted(data.CRD_FILES)
    assert args.example.name == data.DEFAULT_EXAMPLE and args.example.is_file()
    assert "stopped here by the test" in capsys.readouterr().err


def test_demo_refuses_a_missing_example(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(["demo", "--example", "nope.yaml"])
    assert args.func(args) == 2
    assert "cliques demo: --example nope.yaml: no such file" in capsys.readouterr().err


def test_bench_hash_outside_a_checkout_names_the_option(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(["bench", "hash", "--no-go", "--results", str(elsewhere)])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "is not inside a cliques source checkout" in err
    assert "--checkout DIR" in err and "Traceback" not in err
    assert list(elsewhere.iterdir()) == []


def test_bench_hash_finds_a_named_checkout(elsewhere: Path) -> None:
    from cliques_lab.bench import hashbench

    assert hashbench.find_checkout(ROOT / "bench") == ROOT
    assert build_parser().parse_args(["bench", "hash", "--checkout", str(ROOT)]).checkout == ROOT
