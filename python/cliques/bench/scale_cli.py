"""Argument parsing and the console side of `cliques bench scale` and `cliques bench report`
(progress bars, tables, files). The work itself is in `scale`."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cliques.bench import report, workload

if TYPE_CHECKING:
    from cliques.bench import scale

REPO = Path(__file__).resolve().parents[3]


def add_parsers(bench_sub: Any) -> None:
    p: argparse.ArgumentParser = bench_sub.add_parser(
        "scale",
        help="the scale test: deploy, steady state, rolling update, re-order, delete",
        description="Run one workload against several operators, one after another, on one "
        "local control plane; print a Markdown table, save JSON and PNG plots.",
    )
    p.add_argument(
        "--shape",
        default="1x500x2",
        help="SETSxGANGSxPODS: CliqueSets x gangs x pods per gang (default 1x500x2)",
    )
    p.add_argument("--nodes", type=int, default=100, help="KWOK nodes (default 100)")
    p.add_argument("--cluster", default="cliques-bench", help="dev cluster name")
    p.add_argument("--kubeconfig", help="use this cluster instead of a dev cluster")
    p.add_argument(
        "--fresh-cluster",
        action="store_true",
        help="stop the dev cluster if it runs and start a new one (an API server and etcd "
        "that served many runs are slower than new ones)",
    )
    p.add_argument(
        "--operators",
        default="cliques-w1,cliques-wN,kopf",
        help="comma list of cliques-w1, cliques-wN (N = CPU count), cliques-wK, kopf "
        "(default: cliques-w1,cliques-wN,kopf)",
    )
    p.add_argument(
        "--operator-cmd",
        action="append",
        default=[],
        metavar="NAME=CMD",
        help="another operator to run; CMD may use {kubeconfig} {namespace} "
        "{metrics_port} {python}; repeatable",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds: every operator runs this many times, interleaved (A B C A B C ...), "
        "and the table and the targets use each phase's median (default 1)",
    )
    p.add_argument("--steady", type=float, default=30.0, help="steady-state window, s")
    p.add_argument("--timeout", type=float, default=600.0, help="per-phase limit, s")
    p.add_argument("--out", type=Path, default=Path("bench/results"), help="results directory")
    p.set_defaults(func=run_scale)

    r: argparse.ArgumentParser = bench_sub.add_parser(
        "report", help="compare saved benchmark runs (JSON files)"
    )
    r.add_argument("files", nargs="+", type=Path)
    r.set_defaults(func=run_report)


def _specs(args: argparse.Namespace) -> list[scale.OperatorSpec]:
    from cliques.bench import scale

    specs = []
    for name in [n.strip() for n in args.operators.split(",") if n.strip()]:
        if name == "kopf":
            py = subprocess.run(
                [sys.executable, str(REPO / "bench" / "peers" / "kopf" / "venv.py")],
                capture_output=True,
                text=True,
                check=False,
            )
            if py.returncode != 0:
                raise SystemExit(f"cliques bench: could not prepare the kopf peer:\n{py.stderr}")
            specs.append(scale.kopf_operator(py.stdout.strip().splitlines()[-1]))
        elif name.startswith("cliques-w"):
            k = name.removeprefix("cliques-w")
            workers = (os.cpu_count() or 1) if k == "N" else int(k)
            specs.append(scale.cliques_operator(workers))
        else:
            raise SystemExit(f"cliques bench: unknown operator {name!r}")
    specs.extend(scale.custom_operator(c) for c in args.operator_cmd)
    return specs


def _kubeconfig(args: argparse.Namespace) -> str:
    if args.kubeconfig:
        return str(args.kubeconfig)
    from cliques.devcluster import session
    from cliques.devcluster.errors import DevClusterError

    try:
        env = session.start(
            args.cluster, args.nodes, disable_qps_limits=True, fresh=args.fresh_cluster
        )
        session.install_crds(env, REPO / "deploy" / "crds")
    except DevClusterError as exc:
        raise SystemExit(f"cliques bench: {exc}") from None
    return env["KUBECONFIG"]


def run_scale(args: argparse.Namespace) -> int:
    from cliques.bench import scale

    try:
        shape = workload.Shape.parse(args.shape)
    except ValueError as exc:
        print(f"cliques bench scale: {exc}", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print("cliques bench scale: --repeat must be >= 1", file=sys.stderr)
        return 2
    if args.fresh_cluster and args.kubeconfig:
        print(
            "cliques bench scale: --fresh-cluster restarts a dev cluster; it cannot be used "
            "with --kubeconfig",
            file=sys.stderr,
        )
        return 2
    specs = _specs(args)
    kubeconfig = _kubeconfig(args)
    started = dt.datetime.now(dt.UTC)
    stem = f"scale-{shape}-{started.strftime('%Y%m%dT%H%M%SZ')}"
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    cfg = scale.Settings(
        kubeconfig, shape, steady=args.steady, timeout=args.timeout, log_dir=args.out / "logs"
    )
    runs = []
    for rnd in range(1, args.repeat + 1):
        for spec in specs:
            of = f", round {rnd}/{args.repeat}" if args.repeat > 1 else ""
            print(f"==> {spec.name}: {shape} ({shape.total_pods} pods{of})", flush=True)
            run = asyncio.run(_with_progress(spec, cfg))
            if run.error:
                print(f"    {spec.name} failed: {run.error} (log: {run.log})", flush=True)
            runs.append(scale.as_dict(run) | {"round": rnd})
    summary = report.summarize(runs) if args.repeat > 1 else runs
    doc = {
        "kind": "scale",
        "shape": str(shape),
        "total_pods": shape.total_pods,
        "nodes": args.nodes,
        "started": started.isoformat(),
        "cpus": os.cpu_count(),
        "command": " ".join(sys.argv),
        "repeat": args.repeat,
        "runs": runs,
    }
    if args.repeat > 1:
        doc["summary"] = summary
    path = report.save(doc, args.out, stem)
    pngs = report.plots(doc, args.out, stem)
    print()
    if args.repeat > 1:
        print(f"median of {args.repeat} rounds per operator (min-max):\n")
    print(report.markdown(summary))
    print()
    rounds = runs if args.repeat > 1 else None
    for operator, target, met in report.targets(summary, shape.total_pods, rounds):
        print(f"{'MET ' if met else 'MISS'}  {operator}: {target}")
    print(f"\nsaved {path}" + "".join(f"\n      {p}" for p in pngs))
    return 0 if all(not r["error"] for r in runs) else 1


async def _with_progress(spec: scale.OperatorSpec, cfg: scale.Settings) -> scale.OperatorRun:
    from cliques.bench import scale

    try:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        return await scale.run_operator(spec, cfg, _plain_progress())
    with Progress(
        TextColumn("{task.description:>16}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        transient=False,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        return await scale.run_operator(spec, cfg, update)


def _plain_progress() -> Any:
    last: dict[str, int] = {}

    def update(phase: str, done: int, total: int) -> None:
        if last.get(phase) != done and (done == total or done % max(1, total // 10) == 0):
            print(f"    {phase}: {done}/{total}", flush=True)
        last[phase] = done

    return update


def run_report(args: argparse.Namespace) -> int:
    missing = [p for p in args.files if not p.is_file()]
    if missing:
        print(f"cliques bench report: no such file: {missing[0]}", file=sys.stderr)
        return 2
    print(report.compare(args.files))
    return 0
