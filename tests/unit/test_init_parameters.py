"""No constructor in the package takes more than MAX_PARAMETERS parameters (self not
counted): past that, what travels together goes in a record of its own (the CliqueSet
controller's informers in `SetInformers`, an informer's request sizes in `Pacing`, what
every controller is handed in `Wiring`). Read from the source: every `def __init__`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "cliques"
MAX_PARAMETERS = 10


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The parameters of a method, self not counted (`*args` and `**kwargs` count one each)."""
    a = fn.args
    named = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
    return named + (a.vararg is not None) + (a.kwarg is not None) - 1


def constructors() -> list[tuple[str, int]]:
    """Every `__init__` in the package, as `path:line` and its count of parameters."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "__init__":
                where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                found.append((where, parameters(node)))
    return found


def test_no_constructor_takes_more_than_ten_parameters() -> None:
    found = constructors()
    assert len(found) > 20, "the scan must see the package's constructors"
    over = [f"{where} ({n})" for where, n in found if n > MAX_PARAMETERS]
    assert over == [], f"constructors over {MAX_PARAMETERS} parameters: {', '.join(over)}"


def test_parameters_are_counted_without_self() -> None:
    src = "def __init__(self, a, /, b, *c, d, e=1, **f): pass"
    fn = ast.parse(src).body[0]
    assert isinstance(fn, ast.FunctionDef) and parameters(fn) == 6
