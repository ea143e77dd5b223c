"""Inside cliques-lab, layers only import downwards: cli -> bench -> devcluster (the whole of
cliques is below the lab; that nothing in cliques imports the lab is
tests/unit/test_layers.py's)."""

from __future__ import annotations

from pathlib import Path

from tests.support.imports import imports, layer, modules

LAB = Path(__file__).resolve().parents[3] / "lab" / "cliques_lab"
LAB_RANK = {"__init__": 0, "devcluster": 1, "bench": 2, "cli": 3}


def test_the_lab_layers_import_only_downwards() -> None:
    bad = []
    for path, module in modules(LAB):
        mine = layer(module)
        for target in imports(path, LAB):
            if target.split(".")[0] != LAB.name:
                continue  # the whole of cliques is below the lab
            theirs = layer(target)
            if theirs != mine and LAB_RANK.get(theirs, 99) > LAB_RANK.get(mine, -1):
                bad.append(f"{module} imports {target} ({mine} -> {theirs})")
    assert bad == []
