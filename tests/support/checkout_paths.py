"""How a module could read files of the source checkout it was installed from: by climbing
out of its package from its own `__file__`, or by naming a top-level directory of the source
tree in a path (tests/unit/test_package_resources.py and
lab/tests/unit/test_lab_package_resources.py check both packages with these)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

# Top-level directories of the source tree that an installed package does not have.
CHECKOUT_DIRS = ("deploy", "tests", "rust", "scripts", "testdata")

CLIMBING = re.compile(r"parents\[|\.parent\.parent|__file__\)[^\n]*\.parents\b")


def checkout_paths(tree: ast.AST) -> list[str]:
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


def climbing_out(package: Path) -> list[str]:
    """`file:line` of each place a module of `package` climbs out of it or names a
    directory of the source tree."""
    bad = []
    paths = sorted(package.rglob("*.py"))
    assert paths, package
    for path in paths:
        rel = path.relative_to(package.parent)
        text = path.read_text()
        for lineno, line in enumerate(text.splitlines(), 1):
            if CLIMBING.search(line):
                bad.append(f"{rel}:{lineno}: {line.strip()}")
        bad.extend(f"{rel}: {hit}" for hit in checkout_paths(ast.parse(text)))
    return bad
