"""Draw the import graph of the `cliques` package as mermaid diagrams, read from the code.

    python scripts/import_graph.py                   # print the packages: api, kube, ...
    python scripts/import_graph.py --level module    # print every module, grouped by package
    python scripts/import_graph.py --lab             # print cliques-lab's packages too
    python scripts/import_graph.py --write           # write both to docs/diagrams/
    python scripts/import_graph.py --check           # exit 1 if docs/diagrams/ is stale

The files written are Markdown holding one mermaid block each (GitHub draws them), linked
from docs/architecture.md; `make lint` runs `--check`. They show the product (`cliques`)
only.

Every `import cliques...` and `from cliques... import ...` in python/cliques (and with
`--lab` in lab/cliques_lab) counts, the imports made inside functions (lazily) included, and
so does a string that is exactly a module's name
(`importlib.import_module("cliques_lab.bench.hashbench")`); imports under `if TYPE_CHECKING:`
are left out (they do not run), and so are names built at run time (`f"cliques.cli.{name}"`).
An edge `a --> b` means a module of `a` imports a module of `b`; at package level its label
is the number of such module pairs. Stdlib only.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "cliques"
DIAGRAMS = ROOT / "docs" / "diagrams"
LAB = ROOT / "lab" / "cliques_lab"


def module_name(path: Path) -> str:
    package = LAB if path.is_relative_to(LAB) else PACKAGE
    rel = path.relative_to(package.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def imports(path: Path, modules: set[str]) -> set[str]:
    """The cliques modules that the module at `path` imports."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("cliques"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("cliques"):
                continue
            for a in node.names:  # `from cliques.kube import client` imports a module
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Constant) and node.value in modules and "." in node.value:
            out.add(node.value)  # imported by name: importlib.import_module("cliques.x")
    return {m for m in out if m in modules}


def graph(lab: bool = False) -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    if lab:
        paths += sorted(LAB.rglob("*.py"))
    modules = {module_name(p) for p in paths} | {"cliques._core"}
    return {module_name(p): imports(p, modules) - {module_name(p)} for p in paths}


def package_of(module: str) -> str:
    """`cliques.kube.client` -> `kube`, `cliques_lab.bench.scale` -> `lab.bench`."""
    parts = module.split(".")
    if parts[0] == LAB.name:
        return f"lab.{parts[1]}" if len(parts) > 1 else "lab"
    return parts[1] if len(parts) > 1 else "cliques"


def node_id(name: str) -> str:
    return name.replace(".", "_").lstrip("_") or "root"


def package_mermaid(edges: dict[str, set[str]]) -> str:
    count: Counter[tuple[str, str]] = Counter()
    for src, targets in edges.items():
        for dst in targets:
            a, b = package_of(src), package_of(dst)
            if a != b:
                count[a, b] += 1
    lines = ["flowchart TD"]
    lines += [
        f"  {node_id(a)}[{a}] -->|{n}| {node_id(b)}[{b}]" for (a, b), n in sorted(count.items())
    ]
    return "\n".join(lines)


def module_mermaid(edges: dict[str, set[str]]) -> str:
    lines = ["flowchart LR"]
    by_package: dict[str, list[str]] = {}
    for module in sorted(set(edges) | {t for ts in edges.values() for t in ts}):
        by_package.setdefault(package_of(module), []).append(module)
    for package, modules in sorted(by_package.items()):
        lines.append(f"  subgraph pkg_{node_id(package)}[{package}]")
        lines += [f"    {node_id(m)}[{m.removeprefix('cliques.')}]" for m in modules]
        lines.append("  end")
    for src, targets in sorted(edges.items()):
        lines += [f"  {node_id(src)} --> {node_id(dst)}" for dst in sorted(targets)]
    return "\n".join(lines)


PAGES = {
    "package": (
        "imports-packages.md",
        "Imports between the packages of `cliques`",
        "An edge `a --> b` means a module of `a` imports a module of `b`; its label is the\n"
        "number of such module pairs.",
    ),
    "module": (
        "imports-modules.md",
        "Imports between the modules of `cliques`",
        "Every module, grouped by package; an edge `a --> b` means `a` imports `b`.",
    ),
}


def page(level: str, edges: dict[str, set[str]]) -> str:
    """The Markdown file of one diagram: a title, what an edge means, the mermaid block."""
    _, title, legend = PAGES[level]
    diagram = package_mermaid(edges) if level == "package" else module_mermaid(edges)
    return (
        "<!-- Written by `python scripts/import_graph.py --write`; do not edit. -->\n\n"
        f"# {title}\n\n"
        "Read from the `import` statements of `python/cliques`: imports inside functions\n"
        "count, imports under `if TYPE_CHECKING:` do not.\n"
        f"{legend}\n"
        "The layers are described in [architecture.md](../architecture.md#the-layers).\n\n"
        f"```mermaid\n{diagram}\n```\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=("package", "module"), default="package")
    parser.add_argument("--lab", action="store_true", help="add cliques-lab (lab/cliques_lab)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"write both diagrams to {DIAGRAMS}")
    action.add_argument("--check", action="store_true", help="exit 1 if those files are stale")
    args = parser.parse_args()
    if not (args.write or args.check):
        edges = graph(args.lab)
        print(package_mermaid(edges) if args.level == "package" else module_mermaid(edges))
        return 0
    edges = graph(False)
    stale = []
    for level, (name, _, _) in PAGES.items():
        path, text = DIAGRAMS / name, page(level, edges)
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif not path.exists() or path.read_text() != text:
            stale.append(path.relative_to(ROOT))
    for path in stale:
        print(f"{path} does not match the code: run python scripts/import_graph.py --write")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
