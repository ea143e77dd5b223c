"""Layers only import downwards: cli -> operator -> controllers -> kube -> api (the kubectl
plugin, `kubectl`, sits beside cli: it imports the pure controller modules, never the
operator), and the lab sits on top of the whole of cliques.

A small stand-in for an import-linter contract: every `cliques.*` import in the package is
checked against the rank of the importing module's layer. The hashing module must stay free
of the operator stack (it is the pip-installable face). cliques-lab (`lab/cliques_lab`: the
dev cluster, the demo, the benchmarks) may import any of `cliques`, but nothing in `cliques`
may import the lab, not even lazily or by name: `pip install .` and the operator image carry
`cliques` without it. (Inside the lab, cli -> bench -> devcluster:
lab/tests/unit/test_lab_layers.py.)

The product's unit tests (tests/unit) run with cliques alone installed: none of them imports
cliques_lab, not even inside a function, and nor does any module of tests/ they import (when it
is imported). The lab's tests are lab/tests.

No module of the product is over 800 lines: a file says one thing.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.imports import imported_modules, imports, layer, modules, named_modules, source

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "cliques"
LAB = ROOT / "lab" / "cliques_lab"
UNIT = ROOT / "tests" / "unit"
RANK = {
    "_core": 0,
    "api": 0,
    "hashing": 0,
    "resize": 0,
    "argtypes": 0,
    "metrics": 0,
    "gang_metrics": 0,
    "data": 0,
    "kube": 1,
    "controllers": 2,
    "operator": 3,
    "rollout": 3,
    "cli": 4,
    "kubectl": 4,
    "__init__": 0,
    "__main__": 5,
}


def test_layers_import_only_downwards() -> None:
    bad = []
    for path, module in modules(PACKAGE):
        mine = layer(module)
        for target in imports(path):
            theirs = layer(target)
            if theirs == mine:
                continue
            if RANK.get(theirs, 99) > RANK.get(mine, -1):
                bad.append(f"{module} imports {target} ({mine} -> {theirs})")
    assert bad == []


def test_hashing_stays_free_of_the_operator_stack() -> None:
    for target in imports(PACKAGE / "hashing.py"):
        assert layer(target) in ("_core", "__init__"), target


def test_nothing_in_cliques_imports_the_lab() -> None:
    assert LAB.is_dir() and (LAB / "__init__.py").is_file()
    bad = []
    for path, module in modules(PACKAGE):
        targets = [t for t in imports(path) if t.split(".")[0] == LAB.name]
        targets += named_modules(path, LAB.name)
        bad.extend(f"{module} imports {target}" for target in targets)
    assert bad == []


def test_the_boundary_check_sees_every_way_in(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import cliques_lab.devcluster\n"
        "from cliques_lab import bench\n"
        "def f():\n"
        "    from cliques_lab.cli import demo_cmd\n"
        "    importlib.import_module('cliques_lab.bench.hashbench')\n"
    )
    found = imports(probe, LAB) + named_modules(probe, LAB.name)
    assert found == [
        "cliques_lab.devcluster",
        "cliques_lab.bench",
        "cliques_lab.cli",
        "cliques_lab.bench.hashbench",
    ]


#: Inside the controllers: the base (what every controller and feature shares) below the
#: gang features, below the two controller packages, which may import each other (the
#: CliqueSet's rollout reads what the Clique planner says of its pods).
CONTROLLER_RANK = {"base": 0, "features": 1, "cliqueset": 2, "clique": 2}
CONTROLLERS = PACKAGE / "controllers"


def _controller_part(module: str) -> str:
    """`cliques.controllers.features.kueue` -> `features`; `cliques.controllers` -> ``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "controllers" else ""


def test_controller_packages_import_only_downwards() -> None:
    """A feature never imports a controller package; the base imports no feature."""
    bad = []
    for path, module in modules(PACKAGE):
        mine = _controller_part(module)
        if not mine:
            continue
        for target in imports(path):
            theirs = _controller_part(target)
            if not theirs or theirs == mine or layer(target) != "controllers":
                continue
            if CONTROLLER_RANK.get(theirs, 99) > CONTROLLER_RANK.get(mine, -1):
                bad.append(f"{module} imports {target} ({mine} -> {theirs})")
    assert bad == []


def test_the_controllers_are_packages_with_few_modules_beside_them() -> None:
    beside = sorted(p.name for p in CONTROLLERS.glob("*.py"))
    packages = sorted(p.name for p in CONTROLLERS.iterdir() if (p / "__init__.py").is_file())
    assert set(CONTROLLER_RANK) <= set(packages)
    assert len(beside) <= 6, beside


#: The most lines a module of the product may have: a file says one thing.
MAX_MODULE_LINES = 800


def test_no_module_of_the_product_is_over_800_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in sorted(PACKAGE.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these modules by what they hold: {long}"


def test_the_controller_layer_check_sees_a_feature_reaching_up(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from cliques.controllers.cliqueset import planner\n")
    (target,) = imports(probe)
    assert _controller_part(target) == "cliqueset"
    assert CONTROLLER_RANK[_controller_part(target)] > CONTROLLER_RANK["features"]


def lab_imports(files: list[Path]) -> list[str]:
    """`file: module` for each import of cliques_lab that `files` make (any import in them),
    or the modules of tests/ they import make (those run when the module is imported)."""
    bad: list[str] = []
    seen: set[Path] = set()
    pending = [(path, False) for path in files]
    while pending:
        path, top_level = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for target in imported_modules(path, top_level=top_level):
            if target.split(".")[0] == LAB.name:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                bad.append(f"{where}: {target}")
            found = source(target)
            if found is not None:
                pending.append((found, True))
    return sorted(set(bad))


def test_the_unit_tests_never_import_the_lab() -> None:
    files = sorted(UNIT.rglob("*.py"))
    assert len(files) > 50
    assert lab_imports(files) == [], "a test of the lab belongs in lab/tests"


def test_the_unit_tests_check_sees_every_way_in(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import json\n"
        "from tests.support import gangnodes\n"
        "def f():\n"
        "    from cliques_lab.bench import hashbench\n"
    )
    assert lab_imports([probe]) == [
        "test_probe.py: cliques_lab.bench",
        "tests/support/gangnodes.py: cliques_lab.devcluster",
    ]
