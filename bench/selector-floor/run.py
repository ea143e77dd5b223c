"""The floor of `Selector.filter` through CPython's public C API, measured.

Builds the scratch extension in this directory (cargo, release, into the bench cache outside
the repository), then times on the label sets of `cliques bench hash`: the list walk alone,
the walk with one `PyDict_GetItemWithError` per label set, `Selector.filter`, and the
generic Python matcher the 10x target is judged against. From the data it also counts the
fewest dict lookups any matcher of this selector needs per label set (a set that passes a
requirement needs the next one looked up), which with the measured cost of one lookup gives
a floor for the filter.

    .venv/bin/python bench/selector-floor/run.py
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from cliques import _core
from cliques_lab.bench.hashbench import (
    GO_CACHE,
    LABEL_SETS,
    SELECTOR,
    generic_filter,
    label_sets,
    measure,
    parse_selector,
    selector_matches,
)

HERE = Path(__file__).resolve().parent
TARGET = GO_CACHE / "selector-floor-target"


def build() -> ModuleType:
    """Build the extension (cargo decides whether anything changed) and import it."""
    cargo = shutil.which("cargo")
    if cargo is None:
        sys.exit("cargo is not installed (no `cargo` on PATH)")
    print("building the scratch extension (cargo build --release) ...", file=sys.stderr)
    done = subprocess.run(
        [cargo, "build", "--release", "--quiet", "--manifest-path", str(HERE / "Cargo.toml")],
        env={**os.environ, "PYO3_PYTHON": sys.executable, "CARGO_TARGET_DIR": str(TARGET)},
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"cargo build failed (exit {done.returncode})")
    lib = TARGET / "release" / "libselector_floor.so"
    module = TARGET / "selector_floor.abi3.so"
    shutil.copy(lib, module)
    spec = importlib.util.spec_from_file_location("selector_floor", module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def fewest_lookups(sets: list[dict[str, str]]) -> float:
    """Dict lookups per label set when every requirement is looked up only while the set
    still passes, requirements taken in the order that needs the fewest (greedy: the one
    the most remaining sets fail first)."""
    remaining = parse_selector(SELECTOR)
    alive = list(sets)
    lookups = 0
    while remaining and alive:
        best = min(remaining, key=lambda r: sum(selector_matches([r], s) for s in alive))
        lookups += len(alive)
        alive = [s for s in alive if selector_matches([best], s)]
        remaining.remove(best)
    return lookups / len(sets)


def main() -> None:
    floor = build()
    sets = label_sets(LABEL_SETS)
    selector = _core.Selector(SELECTOR)
    requirements = parse_selector(SELECTOR)
    key = requirements[0][0]

    def per_set(fn: Callable[[], object]) -> float:
        ns, _, _ = measure(fn, rounds=7, round_ns=200_000_000)
        return ns / len(sets)

    walk = per_set(lambda: floor.walk(sets))
    one = per_set(lambda: floor.walk_and_lookup(sets, key))
    filt = per_set(lambda: selector.filter(sets))
    generic = per_set(lambda: generic_filter(requirements, sets))
    lookups = fewest_lookups(sets)
    lookup = one - walk
    print(f"| what | ns per label set ({LABEL_SETS:,} sets) |")
    print("|---|---:|")
    print(f"| list walk alone | {walk:.1f} |")
    print(f"| walk + one PyDict_GetItemWithError | {one:.1f} |")
    print(f"| Selector.filter | {filt:.1f} |")
    print(f"| generic Python matcher | {generic:.1f} |")
    print(f"| 10x budget (generic / 10) | {generic / 10:.1f} |")
    print(
        f"| floor: walk + {lookups:.2f} lookups a set x {lookup:.1f} ns "
        f"| {walk + lookups * lookup:.1f} |"
    )


if __name__ == "__main__":
    main()
