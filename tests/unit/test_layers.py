"""Layers only import downwards: cli -> operator/bench/devcluster -> controllers -> kube -> api.

A small stand-in for an import-linter contract: every `cliques.*` import in the package is
checked against the rank of the importing module's layer. The hashing module must stay free
of the operator stack (it is the pip-installable face).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "cliques"
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
    "bench": 3,
    "devcluster": 3,
    "cli": 4,
    "__init__": 0,
    "__main__": 5,
}


def layer(module: str) -> str:
    """`cliques.kube.client` -> `kube`; `cliques` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names if a.name.startswith("cliques"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cliques"):
            if node.module == "cliques":
                for a in node.names:
                    sub = PACKAGE / a.name
                    is_module = sub.is_dir() or sub.with_suffix(".py").exists()
                    out.append(f"cliques.{a.name}" if is_module else "cliques")
            else:
                out.append(node.module)
    return out


def test_layers_import_only_downwards() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts)
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
