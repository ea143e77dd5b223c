"""The installed packages (cliques and cliques-lab) read no file of the source checkout.

`cliques demo` and `cliques bench scale` install the CRDs and apply an example from the
package itself (`cliques.data`, read through `importlib.resources`); `deploy/crds/` and
`deploy/examples/` are copies of those files and must stay byte-identical. No module finds
files by climbing out of the package from its own `__file__` (`parents[3] / "deploy"`):
in a wheel installed in site-packages there is nothing above it. What lives only in the
source tree (the kopf peer of `cliques bench scale`) is named by an option and refused
with a clear message when it is missing, without a traceback and before any cluster starts.
"""

from __future__ import annotations

import argparse
import ast
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from cliques import data
from cliques.cli import build_parser
from cliques_lab.devcluster import session
from cliques_lab.devcluster.errors import DevClusterError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "cliques"
LAB = ROOT / "lab" / "cliques_lab"
# (package data directory, a copy of it in the source tree)
COPIES = [
    (data.CRDS, ROOT / "deploy" / "crds"),
    (data.CRDS, ROOT / "deploy" / "helm" / "cliques" / "crds"),
    (data.EXAMPLES, ROOT / "deploy" / "examples"),
]
# Top-level directories of the source tree that an installed package does not have.
CHECKOUT_DIRS = ("deploy", "tests", "rust", "scripts", "testdata")


# -- the resources ------------------------------------------------------------------------


def test_the_crds_load_through_importlib_resources() -> None:
    crds = resources.files("cliques.data").joinpath("crds")
    names = sorted(p.name for p in crds.iterdir() if p.name.endswith(".yaml"))
    assert names == sorted(data.CRD_FILES)
    for name in data.CRD_FILES:
        crd = yaml.safe_load(data.read(data.CRDS, name))
        assert crd["kind"] == "CustomResourceDefinition"
        assert crd["metadata"]["name"] == name.removesuffix(".yaml")


def test_the_default_example_is_a_cliqueset() -> None:
    docs = list(yaml.safe_load_all(data.read(data.EXAMPLES, data.DEFAULT_EXAMPLE)))
    assert [d["kind"] for d in docs if d] == ["CliqueSet"]


def test_as_path_gives_files_kubectl_can_read() -> None:
    with data.as_path(data.CRDS) as crds:
        assert sorted(p.name for p in crds.glob("*.yaml")) == sorted(data.CRD_FILES)
    with data.as_path(data.EXAMPLES, data.DEFAULT_EXAMPLE) as example:
        assert example.is_file()


@pytest.mark.parametrize(
    ("directory", "copy"), COPIES, ids=[str(c.relative_to(ROOT)) for _, c in COPIES]
)
def test_the_deploy_copies_are_identical(directory: str, copy: Path) -> None:
    packaged = {
        p.name: p.read_bytes()
        for p in PACKAGE.joinpath("data", directory).iterdir()
        if p.suffix == ".yaml"
    }
    copied = {p.name: p.read_bytes() for p in copy.glob("*.yaml")}
    assert packaged, directory
    where = copy.relative_to(ROOT)
    fix = (
        "make crds"
        if directory == data.CRDS
        else f"cp python/cliques/data/{directory}/*.yaml {where}/"
    )
    assert copied == packaged, (
        f"python/cliques/data/{directory}/ and {where}/ must be the same files: {fix}"
    )


# -- no module reads the checkout -----------------------------------------------------------


CLIMBING = re.compile(r"parents\[|\.parent\.parent|__file__\)[^\n]*\.parents\b")


def _checkout_paths(tree: ast.AST) -> list[str]:
    """String constants naming a top-level directory of the source tree used to build a
    path: an operand of `/`, or the argument of `Path(...)`."""
    found = []
    for node in ast.walk(tree):
        operands: list[ast.expr] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Path":
            operands = list(node.args)
        for op in operands:
            if isinstance(op, ast.Constant) and isinstance(op.value, str):
                head = op.value.split("/")[0]
                if head in CHECKOUT_DIRS:
                    found.append(f"line {op.lineno}: {op.value!r}")
    return found


@pytest.mark.parametrize("package", [PACKAGE, LAB], ids=["cliques", "cliques_lab"])
def test_no_module_climbs_out_of_the_package(package: Path) -> None:
    bad = []
    paths = sorted(package.rglob("*.py"))
    assert paths
    for path in paths:
        rel = path.relative_to(package.parent)
        text = path.read_text()
        for lineno, line in enumerate(text.splitlines(), 1):
            if CLIMBING.search(line):
                bad.append(f"{rel}:{lineno}: {line.strip()}")
        bad.extend(f"{rel}: {hit}" for hit in _checkout_paths(ast.parse(text)))
    assert bad == []


def test_the_check_catches_the_old_way() -> None:
    old = 'REPO = Path(__file__).resolve().parents[3]\ncrds = REPO / "deploy" / "crds"\n'
    assert CLIMBING.search(old)
    assert _checkout_paths(ast.parse(old)) == ["line 2: 'deploy'"]


# -- outside a checkout ---------------------------------------------------------------------


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
