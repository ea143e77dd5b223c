"""The operator's labels and annotations are declared once, in `labels.NAMES`: every
`cliques.dev/` key the code spells or names is an entry, and each entry's writers and
readers are the modules that use its constant, no more and no fewer."""

from __future__ import annotations

import ast
import importlib.util
from collections import defaultdict
from pathlib import Path

import pytest

from cliques.api import labels

PACKAGE = Path(labels.__file__).resolve().parents[1]
LABELS_PY = PACKAGE / "api" / "labels.py"
PREFIXES = ("LABEL_", "ANNOTATION_", "CONDITION_")
KINDS = {"LABEL_": "label", "ANNOTATION_": "annotation", "CONDITION_": "condition"}

#: constant name -> key, for every LABEL_* and ANNOTATION_* of `labels`
CONSTANTS = {
    name: value
    for name, value in vars(labels).items()
    if name.startswith(PREFIXES) and isinstance(value, str)
}
KEYS = {n.key: n for n in labels.NAMES}
CONSTANT_OF = {key: name for name, key in CONSTANTS.items()}


def modules() -> list[tuple[str, Path]]:
    """(module name under `cliques.`, path) of every module but `api.labels`."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == LABELS_PY:
            continue
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), path))
    return out


def _is_group(node: ast.expr) -> bool:
    """Whether `node` is `labels.GROUP`."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "GROUP"
        and isinstance(node.value, ast.Name)
        and node.value.id == "labels"
    )


def spelled_keys(tree: ast.AST) -> list[str]:
    """The `cliques.dev/...` keys a module spells: string literals, and f-strings that
    start with the group (`f"{labels.GROUP}/x"`; a formatted part after it is kept as
    `{}`)."""
    found = []
    prefix = labels.RESERVED_PREFIX
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith(prefix) and node.value != labels.API_VERSION:
                found.append(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values:
            text = ""
            for i, part in enumerate(node.values):
                if isinstance(part, ast.Constant):
                    text += str(part.value)
                elif i == 0 and isinstance(part, ast.FormattedValue) and _is_group(part.value):
                    text += labels.GROUP
                else:
                    text += "{}"
            if text.startswith(prefix) and not text.startswith(labels.API_VERSION):
                found.append(text)
    # The f-string's parts are string constants too: only whole keys count.
    return [k for k in found if k.count("/") == 1 and " " not in k]


def named_constants(tree: ast.AST) -> set[str]:
    """The LABEL_* and ANNOTATION_* constants of `labels` a module uses (`labels.X`, or
    imported from `cliques.api.labels`)."""
    out = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "labels"
            and node.attr.startswith(PREFIXES)
        ):
            out.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module == "cliques.api.labels":
            out.update(a.name for a in node.names if a.name.startswith(PREFIXES))
    return out


TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in modules()}


def test_the_registry_is_the_constants() -> None:
    assert len(KEYS) == len(labels.NAMES), "a key declared twice"
    assert set(CONSTANTS.values()) == set(KEYS)
    assert len(CONSTANT_OF) == len(CONSTANTS), "two constants for one key"
    for name, key in CONSTANTS.items():
        entry = KEYS[key]
        assert entry.kind == KINDS[name[: name.index("_") + 1]], name
        assert labels.is_reserved(key) and entry.on and entry.meaning and entry.writers, name


@pytest.mark.parametrize("module", sorted(TREES))
def test_every_key_the_code_spells_or_names_is_declared(module: str) -> None:
    tree = TREES[module]
    for key in spelled_keys(tree):
        assert key in KEYS, f"cliques.{module} spells {key!r}, which labels.NAMES lacks"
    for name in named_constants(tree):
        assert name in CONSTANTS, f"cliques.{module} uses labels.{name}, not in labels.NAMES"


def test_the_scan_finds_keys() -> None:
    tree = ast.parse('A = "cliques.dev/a"\nB = f"{labels.GROUP}/b"\nC = f"{labels.GROUP}/{x}"')
    assert spelled_keys(tree) == ["cliques.dev/a", "cliques.dev/b", "cliques.dev/{}"]


def test_writers_and_readers_are_the_modules_that_use_each_constant() -> None:
    users: dict[str, set[str]] = defaultdict(set)
    for module, tree in TREES.items():
        for name in named_constants(tree):
            users[name].add(module)
    for entry in labels.NAMES:
        name = CONSTANT_OF[entry.key]
        listed = (*entry.writers, *entry.readers)
        assert len(set(listed)) == len(listed), f"{name}: a module listed twice"
        for module in listed:
            assert importlib.util.find_spec(f"cliques.{module}") is not None, (name, module)
            source = (PACKAGE / Path(*module.split("."))).with_suffix(".py").read_text()
            assert name in source, f"{name}: cliques.{module} does not mention it"
        assert set(listed) == users[name], f"{name}: used by {sorted(users[name])}"
