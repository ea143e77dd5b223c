"""`cliques bench BENCHMARK`: run one of the benchmarks in cliques_lab.bench.

    cliques bench hash [--rounds N] [--round-ms MS] [--no-go] [--results DIR] [--check]
    cliques bench scale [--shape 1x500x2] [--operators cliques-w1,cliques-wN,kopf] ...
    cliques bench report FILE...
    cliques bench chaos [--seed N] [--duration S] [--faults kill-worker,...] [--results DIR]
    cliques bench scale-events [--cluster NAME] [--gangs N] [--events N] [--down] [--backend B]
    cliques bench sim-scale [--shapes 1x5000x2,1000x50x2] [--repeat N] [--rate R]

Each benchmark is one entry of `BENCHMARKS`: its name, help, the module that runs it
(imported only when it runs) and a function adding its options. Adding one (`bench scale`)
is adding an entry; the module's `main(**options)` returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cliques import argtypes


@dataclass(frozen=True, slots=True)
class Benchmark:
    name: str
    help: str
    module: str  # imported when the benchmark runs; exposes main(**options) -> int
    add_arguments: Callable[[argparse.ArgumentParser], None]
    options: Callable[[argparse.Namespace], dict[str, Any]]


def _hash_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rounds",
        type=argtypes.int_at_least(1),
        default=7,
        help="timed rounds per case (median reported)",
    )
    parser.add_argument(
        "--round-ms",
        type=argtypes.int_at_least(1),
        default=200,
        help="target duration of one round, ms",
    )
    parser.add_argument("--no-go", action="store_true", help="skip the Go DeepHashObject baseline")
    parser.add_argument(
        "--results", type=Path, default=None, help="directory for the JSON (bench/results)"
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a speed-up target is missed"
    )
    parser.add_argument(
        "--checkout",
        type=Path,
        default=None,
        metavar="DIR",
        help="the cliques source checkout holding the fixtures, the pure-Python reference "
        "and the Go baseline (default: the working directory or a parent of it)",
    )


def _hash_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "rounds": args.rounds,
        "round_ms": args.round_ms,
        "go": not args.no_go,
        "results_dir": args.results,
        "check": args.check,
        "checkout": args.checkout,
    }


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        name="hash",
        help="template hash (Rust, pure Python, Go DeepHashObject) and Selector.filter",
        module="cliques_lab.bench.hashbench",
        add_arguments=_hash_arguments,
        options=_hash_options,
    ),
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bench", help="run a benchmark", description="Run a benchmark (results in bench/results/)."
    )
    benchmarks = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    for bench in BENCHMARKS:
        sub = benchmarks.add_parser(bench.name, help=bench.help, description=bench.help)
        bench.add_arguments(sub)
        sub.set_defaults(func=lambda args, bench=bench: _run(bench, args))
    # `bench scale` and `bench report` have options of their own, as has `bench chaos`.
    from cliques_lab.bench import scale_cli

    scale_cli.add_parsers(benchmarks)
    from cliques_lab.bench import chaos_cli, scale_events_cli, simscale_cli

    chaos_cli.add_parser(benchmarks)
    scale_events_cli.add_parser(benchmarks)
    simscale_cli.add_parser(benchmarks)
    parser.set_defaults(func=lambda args: _usage(parser))


def _run(bench: Benchmark, args: argparse.Namespace) -> int:
    module = importlib.import_module(bench.module)
    code: int = module.main(**bench.options(args))
    return code


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
