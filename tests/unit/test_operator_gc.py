"""The operator process tunes the garbage collector before it serves."""

from __future__ import annotations

import gc

from cliques.operator import process


def test_tune_gc_freezes_what_is_loaded_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        process.tune_gc()
        assert gc.get_freeze_count() > 0
        threshold = gc.get_threshold()
        assert threshold[0] == process.GC_THRESHOLD0
        assert threshold[1:] == before[1:]
        # Cycles are still collected.
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
