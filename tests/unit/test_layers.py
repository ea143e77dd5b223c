"""Layers only import downwards: cli -> operator -> controllers -> kube -> api, and the lab
sits on top of the whole of cliques.

A small stand-in for an import-linter contract: every `cliques.*` import in the package is
checked against the rank of the importing module's layer. The hashing module must stay free
of the operator stack (it is the pip-installable face). cliques-lab (`lab/cliques_lab`: the
dev cluster, the demo, the benchmarks) may import any of `cliques`, but nothing in `cliques`
may import the lab, not even lazily or by name: `pip install .` and the operator image carry
`cliques` without it. Inside the lab, cli -> bench -> devcluster.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "cliques"
LAB = ROOT / "lab" / "cliques_lab"
RANK = {
    "_core": 0,
    "api": 0,
    "hashing": 0,
    "resize": 0,
    "argtypes": 0,
    "metrics": 0,
    "data": 0,
    "kube": 1,
    "controllers": 2,
    "operator": 3,
    "cli": 4,
    "__init__": 0,
    "__main__": 5,
}
LAB_RANK = {"__init__": 0, "devcluster": 1, "bench": 2, "cli": 3}


def layer(module: str) -> str:
    """`cliques.kube.client` -> `kube`; `cliques` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path, package: Path = PACKAGE) -> list[str]:
    """The `cliques*` modules a file imports (`cliques_lab` ones included), at the top or
    inside functions."""
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names if a.name.startswith("cliques"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cliques"):
            top = node.module.split(".")[0]
            if node.module == top:
                root = package if top == package.name else package.parent / top
                for a in node.names:
                    sub = root / a.name
                    is_module = sub.is_dir() or sub.with_suffix(".py").exists()
                    out.append(f"{top}.{a.name}" if is_module else top)
            else:
                out.append(node.module)
    return out


def named_modules(path: Path, prefix: str) -> list[str]:
    """String constants that name a module under `prefix` (`"cliques_lab.bench.x"`, an
    entry point's `"cliques_lab.cli.demo_cmd:register"`): imports made by name."""
    tree = ast.parse(path.read_text())
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == prefix or node.value.startswith((f"{prefix}.", f"{prefix}:")))
    ]


def _modules(package: Path) -> list[tuple[Path, str]]:
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        out.append((path, ".".join(rel.parts)))
    return out


def test_layers_import_only_downwards() -> None:
    bad = []
    for path, module in _modules(PACKAGE):
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
    for path, module in _modules(PACKAGE):
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


def test_the_lab_layers_import_only_downwards() -> None:
    bad = []
    for path, module in _modules(LAB):
        mine = layer(module)
        for target in imports(path, LAB):
            if target.split(".")[0] != LAB.name:
                continue  # the whole of cliques is below the lab
            theirs = layer(target)
            if theirs != mine and LAB_RANK.get(theirs, 99) > LAB_RANK.get(mine, -1):
                bad.append(f"{module} imports {target} ({mine} -> {theirs})")
    assert bad == []


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
    for path, module in _modules(PACKAGE):
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


def test_the_controller_layer_check_sees_a_feature_reaching_up(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from cliques.controllers.cliqueset import planner\n")
    (target,) = imports(probe)
    assert _controller_part(target) == "cliqueset"
    assert CONTROLLER_RANK[_controller_part(target)] > CONTROLLER_RANK["features"]
