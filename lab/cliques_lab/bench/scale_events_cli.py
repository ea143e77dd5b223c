"""Argument parsing of `cliques bench scale-events` (the benchmark is `scale_events`,
imported only when it runs: the `cliques` command registers this module with the base
install too)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cliques import argtypes

RESULTS = Path("bench") / "results"
BACKENDS = "Auto, Workload or None"


def backend(value: str) -> str:
    """A `gangScheduling.backend` value (`api.backends.GangBackend`)."""
    from cliques.api.backends import GangBackend

    try:
        return GangBackend(value).value
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a backend: {BACKENDS}") from None


def add_parser(benchmarks: Any) -> None:
    """`cliques bench scale-events` and its options."""
    what = "operator CPU per scale of one scaling-group instance in a set of many gangs"
    p: argparse.ArgumentParser = benchmarks.add_parser("scale-events", help=what, description=what)
    p.add_argument("--cluster", default="cliques-events", help="the dev cluster's name")
    p.add_argument(
        "--gangs", type=argtypes.int_at_least(1), default=1000, help="gangs in the CliqueSet"
    )
    p.add_argument(
        "--events",
        type=argtypes.int_at_least(1),
        default=10,
        help="gangs scaled, one after another",
    )
    p.add_argument("--down", action="store_true", help="scale each gang back down too")
    p.add_argument("--backend", type=backend, default="Auto", help=f"gangScheduling: {BACKENDS}")
    p.add_argument("--idle", type=float, default=20.0, help="seconds the idle rate is measured")
    p.add_argument("--settle", type=float, default=5.0, help="quiet seconds around the events")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for the deploy")
    p.add_argument("--log", default="", help="the operator's log file")
    p.add_argument("--no-save", action="store_true", help="print only, no results file")
    p.add_argument(
        "--results", type=Path, default=RESULTS, help="directory for the JSON (bench/results)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cliques_lab.bench import scale_events

    return scale_events.run(args)
