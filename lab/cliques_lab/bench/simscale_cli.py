"""Argument parsing and the console side of `cliques bench sim-scale`: each round of each
shape runs in a process of its own (so that its peak RSS is its own), which prints its
`simscale.Outcome` as one JSON line; this side shows progress, prints the medians and
ranges per shape, and writes them with every round to bench/results/. The work itself is
in `simscale`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from cliques import argtypes
from cliques_lab.bench import workload

RESULTS = Path("bench") / "results"
DEFAULT_SHAPES = "1x5000x2"


def shapes(value: str) -> list[str]:
    """A comma list of `SETSxGANGSxPODS` shapes, each within what one CliqueSet may ask
    (`api.cliqueset`: at most MAX_GANGS gangs, MAX_SET_CLIQUES Cliques and MAX_SET_PODS
    pods; the benchmark's gangs are a leader and, from 2 pods on, a clique of workers)."""
    from cliques.api.cliqueset import MAX_GANGS, MAX_SET_CLIQUES, MAX_SET_PODS

    out = []
    for text in value.split(","):
        try:
            shape = workload.Shape.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        cliques = shape.gangs * len(shape.roles())
        if (
            shape.gangs > MAX_GANGS
            or cliques > MAX_SET_CLIQUES
            or shape.gangs * shape.pods > MAX_SET_PODS
        ):
            raise argparse.ArgumentTypeError(
                f"shape {shape}: one CliqueSet may have at most {MAX_GANGS:,} gangs, "
                f"{MAX_SET_CLIQUES:,} Cliques and {MAX_SET_PODS:,} pods (the CRD refuses more, "
                f"and the operator reports it InvalidSpec); this one has {shape.gangs:,} gangs "
                f"of {len(shape.roles())} Cliques"
            )
        out.append(str(shape))
    return out


def add_parser(benchmarks: Any) -> None:
    """`cliques bench sim-scale` and its options."""
    what = (
        "operator CPU per pod and peak RSS of a deploy of up to 100,000 pods: the real "
        "controllers against a simulated API server on a virtual clock (no cluster)"
    )
    p: argparse.ArgumentParser = benchmarks.add_parser("sim-scale", help=what, description=what)
    p.add_argument(
        "--shapes",
        type=shapes,
        default=[DEFAULT_SHAPES],
        metavar="LIST",
        help="comma list of SETSxGANGSxPODS shapes, run in turn (default "
        f"{DEFAULT_SHAPES}; the 100,000-pod runs: 1x5000x2,1000x50x2,1x5000x20)",
    )
    p.add_argument(
        "--repeat",
        type=argtypes.int_at_least(1),
        default=1,
        help="rounds per shape, interleaved (medians and ranges reported)",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=300.0,
        help="requests per simulated second the API server answers (default 300)",
    )
    p.add_argument(
        "--start-seconds",
        type=float,
        default=1.0,
        help="simulated seconds from a pod's binding to Ready (default 1)",
    )
    p.add_argument("--no-save", action="store_true", help="print only, no results file")
    p.add_argument(
        "--results", type=Path, default=RESULTS, help="directory for the JSON (bench/results)"
    )
    p.add_argument("--one", default="", help=argparse.SUPPRESS)  # a round, in its own process
    p.set_defaults(func=run)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.one:
        from cliques_lab.bench import simscale

        outcome = simscale.deploy(
            workload.Shape.parse(args.one),
            rate=args.rate,
            start_seconds=args.start_seconds,
            progress=_say,
        )
        print(json.dumps(outcome.to_json()), flush=True)
        return 0
    rounds: dict[str, list[dict[str, Any]]] = {s: [] for s in args.shapes}
    for r in range(args.repeat):
        for shape in args.shapes if r % 2 == 0 else list(reversed(args.shapes)):
            pods = workload.Shape.parse(shape).total_pods
            _say(f"round {r + 1}/{args.repeat}: {shape} ({pods} pods)")
            result = round_of(shape, args.rate, args.start_seconds)
            rounds[shape].append(result)
            _say(
                f"  operator CPU {result['cpu_operator']:.2f} s "
                f"({result['cpu_per_pod_ms']:.3f} ms per pod), peak RSS "
                f"{result['rss_mib']:.0f} MiB ({result['server_held_mib']:.0f} of it the "
                f"server's objects), {result['sim_seconds']:.0f} simulated s, "
                f"{result['set_plans']} set plans"
            )
    table = {shape: summary(results) for shape, results in rounds.items()}
    print(render(table))
    if not args.no_save:
        args.results.mkdir(parents=True, exist_ok=True)
        when = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = args.results / f"sim-scale-{when}.json"
        doc = {
            "command": " ".join(["cliques", "bench", "sim-scale", *sys.argv[3:]]),
            "rate": args.rate,
            "start_seconds": args.start_seconds,
            "summary": table,
            "rounds": rounds,
        }
        path.write_text(json.dumps(doc, indent=1) + "\n")
        _say(f"wrote {path}")
    return 0


def round_of(shape: str, rate: float, start_seconds: float) -> dict[str, Any]:
    """One deploy of `shape` in a fresh process (its outcome as a dict)."""
    cmd = [
        sys.executable,
        "-m",
        "cliques",
        "bench",
        "sim-scale",
        "--one",
        shape,
        "--rate",
        str(rate),
        "--start-seconds",
        str(start_seconds),
    ]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and ranges of one shape's rounds."""
    return {
        "pods": results[0]["pods"],
        "rounds": len(results),
        "cpu_operator_s": _spread([r["cpu_operator"] for r in results]),
        "cpu_per_pod_ms": _spread([r["cpu_per_pod_ms"] for r in results]),
        "rss_mib": _spread([r["rss_mib"] for r in results]),
        "server_mib": _spread([r["server_mib"] for r in results]),
        # (results before `server_held_mib` was recorded have no operator's share)
        "operator_rss_mib": _spread(
            [r["rss_mib"] - r.get("server_held_mib", 0.0) for r in results]
            if all(r.get("server_held_mib") for r in results)
            else [0.0]
        ),
        "set_plans": _spread([float(r["set_plans"]) for r in results]),
        "sim_seconds": _spread([r["sim_seconds"] for r in results]),
    }


def render(table: dict[str, dict[str, Any]]) -> str:
    """The summary as a Markdown table."""

    def cell(s: dict[str, float], fmt: str) -> str:
        med, lo, hi = (format(s[k], fmt) for k in ("median", "min", "max"))
        return med if lo == hi else f"{med} ({lo}-{hi})"

    rows = [
        "| shape | pods | rounds | operator CPU s | per pod ms | peak RSS MiB | of it stored "
        "by the server MiB | peak RSS less the server's objects MiB | set plans | simulated s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for shape, s in table.items():
        rows.append(
            f"| {shape} | {s['pods']:,} | {s['rounds']} | {cell(s['cpu_operator_s'], '.2f')} "
            f"| {cell(s['cpu_per_pod_ms'], '.3f')} | {cell(s['rss_mib'], '.0f')} "
            f"| {cell(s['server_mib'], '.0f')} | {cell(s['operator_rss_mib'], '.0f')} "
            f"| {cell(s['set_plans'], '.0f')} "
            f"| {cell(s['sim_seconds'], '.0f')} |"
        )
    return "\n".join(rows)
