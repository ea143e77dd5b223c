"""The operator imports only what it declares: every module imported under python/cliques is
the standard library, cliques itself, or a distribution of the base dependencies or the
`operator` extra in pyproject.toml. kubernetes-asyncio (the client users write their tools
with, which cliques-lab and the tests use as the outside client), rich, matplotlib and
cliques-lab itself are the lab's, never the operator's or the image's (docs/architecture.md).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "cliques"

#: Import name of each runtime distribution (where it differs from the distribution's name).
IMPORT_NAMES = {"pyyaml": "yaml", "prometheus-client": "prometheus_client"}
#: The lab's and the tests' packages: the operator must never import them.
LAB_ONLY = {"kubernetes_asyncio", "rich", "matplotlib", "cliques_lab"}


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["operator"]]:
        dist = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()
        names.add(IMPORT_NAMES.get(dist, dist.replace("-", "_")))
    return names


def imported(tree: ast.AST) -> set[str]:
    """Top-level names of the absolute imports in `tree`, wherever they sit."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_operator_imports_only_its_declared_dependencies() -> None:
    allowed = declared() | {"cliques"}
    outside: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in imported(ast.parse(path.read_text(), str(path))):
            if name not in sys.stdlib_module_names and name not in allowed:
                outside.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert outside == {}
    assert not LAB_ONLY & declared(), "a lab package became an operator dependency"


def test_the_check_sees_an_import_of_a_lab_package() -> None:
    source = "def f():\n    from kubernetes_asyncio import config\n    import rich.progress\n"
    tree = ast.parse(source)
    assert imported(tree) == {"kubernetes_asyncio", "rich"}
