"""The `cliques*` imports of Python files, read from their syntax trees (nothing is
imported): the layer checks of tests/unit/test_layers.py and lab/tests/unit/test_lab_layers.py,
and the check that the product's unit tests never import cliques-lab."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "cliques"


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


def modules(package: Path) -> list[tuple[Path, str]]:
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        out.append((path, ".".join(rel.parts)))
    return out


def imported_modules(path: Path, *, top_level: bool = False) -> list[str]:
    """Every module a file imports by an absolute import statement (`from a import b` gives
    `a` and, when it is a module of this checkout, `a.b`); with `top_level`, only the imports
    run when the module itself is imported (not those inside functions)."""
    tree = ast.parse(path.read_text())
    nodes: list[ast.AST] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            if top_level and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            pending.append(child)
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
            out.extend(
                f"{node.module}.{a.name}" for a in node.names if source(f"{node.module}.{a.name}")
            )
    return out


def source(module: str) -> Path | None:
    """The file of a module of the checkout's tests (`tests.support.harness`), if it is one."""
    parts = module.split(".")
    if parts[0] != "tests":
        return None
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None
