"""Argument parsing and the console side of `cliques bench chaos` (progress, summary, the
JSON result). The work itself is in `chaos`."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import os
import random
import sys
from pathlib import Path
from typing import Any

from cliques import argtypes, data
from cliques_lab.bench import report
from cliques_lab.bench.chaos_actions import FAULTS


def add_parser(bench_sub: Any) -> None:
    p: argparse.ArgumentParser = bench_sub.add_parser(
        "chaos",
        help="random CliqueSets, edits, deletes and faults with the operator running; "
        "its invariants checked throughout",
        description="Drive the real control plane with the operator (a supervisor and its "
        "worker processes) running: random valid and invalid CliqueSets, edits, deletes "
        "with every propagation policy, scale through the subresource, and faults (worker "
        "kill -9, watch cuts and stalls, 429s, pod loss, an API server restart). Checks: no "
        "duplicate pod, no delete nobody meant, rollouts within maxUnavailable, no crash "
        "loop, every valid set Available within a bound once the faults stop, every invalid "
        "one refused or reported naming its problem. Exit 1 on any violation.",
    )
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seed", type=int, default=None, help="the run's seed (default: a random one, printed)"
    )
    seeds.add_argument(
        "--seeds",
        type=seed_list,
        default=None,
        metavar="LIST",
        help="run several seeds one after another on one cluster and report them together: "
        "a comma list of seeds and ranges, e.g. 1-10 or 4242,1-3",
    )
    p.add_argument(
        "--duration",
        type=argtypes.seconds(),
        default=120.0,
        help="seconds of random steps before the faults stop (default 120)",
    )
    p.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help=f"comma list of the faults to inject, or 'none' (default: {','.join(FAULTS)})",
    )
    p.add_argument(
        "--workers", type=argtypes.int_at_least(1), default=2, help="operator workers (default 2)"
    )
    p.add_argument(
        "--max-sets",
        type=argtypes.int_at_least(1),
        default=4,
        help="valid CliqueSets alive at once, at most (default 4)",
    )
    p.add_argument("--cluster", default="cliques-bench", help="dev cluster name")
    p.add_argument(
        "--kubeconfig",
        help="use this cluster instead of a dev cluster (no API server restarts then)",
    )
    p.add_argument("--results", type=Path, default=Path("bench/results"), help="results directory")
    p.set_defaults(func=run_chaos)


def _faults(text: str) -> tuple[str, ...]:
    if text.strip() == "none":
        return ()
    names = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in names if f not in FAULTS]
    if unknown:
        raise ValueError(f"unknown fault {unknown[0]!r}: choose from {', '.join(FAULTS)}")
    return names


#: The most seeds one `--seeds` may name (a typo such as 1-100000 is refused, not run).
MAX_SEEDS = 1000


def seed_list(text: str) -> list[int]:
    """`--seeds`: a comma list of seeds (non-negative whole numbers) and inclusive ranges
    `a-b`, in the order given, without repeats."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        low, dash, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{part!r} is not a seed or a range of seeds (e.g. 7 or 1-10)"
            ) from None
        if first < 0 or last < first:
            raise argparse.ArgumentTypeError(f"{part!r}: a range goes from low to high, >= 0")
        if len(out) + last - first + 1 > MAX_SEEDS:
            raise argparse.ArgumentTypeError(f"more than {MAX_SEEDS} seeds")
        out += [s for s in range(first, last + 1) if s not in out]
    if not out:
        raise argparse.ArgumentTypeError("no seed given")
    return out


def run_chaos(args: argparse.Namespace) -> int:
    try:
        faults = _faults(args.faults)
    except ValueError as exc:
        print(f"cliques bench chaos: {exc}", file=sys.stderr)
        return 2
    if args.kubeconfig and not Path(args.kubeconfig).is_file():
        print(f"cliques bench chaos: --kubeconfig {args.kubeconfig}: no such file", file=sys.stderr)
        return 2
    kubeconfig = args.kubeconfig or _dev_cluster(args.cluster)
    if args.seeds is None:
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
        doc = _one_seed(args, faults, kubeconfig, seed)
        return 0 if doc["ok"] else 1
    docs = []
    for i, seed in enumerate(args.seeds, 1):
        print(f"[{i}/{len(args.seeds)}]", end=" ", flush=True)
        docs.append(_one_seed(args, faults, kubeconfig, seed))
    table = seeds_table(docs)
    print(table)
    combined = {
        "kind": "chaos-seeds",
        "started": docs[0]["started"],
        "command": " ".join(["cliques", *sys.argv[1:]]),
        "cpus": os.cpu_count(),
        "duration": args.duration,
        "faults": list(faults),
        "seeds": args.seeds,
        "ok": all(d["ok"] for d in docs),
        "runs": [{k: v for k, v in d.items() if k != "step_log"} for d in docs],
    }
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = report.save(combined, args.results, f"chaos-seeds-{len(docs)}-{stamp}")
    print(f"saved {path}")
    failed = [d["seed"] for d in docs if not d["ok"]]
    if failed:
        print(
            f"{len(failed)} of {len(docs)} seeds failed; reproduce one with: cliques bench chaos "
            f"--seed {failed[0]} --duration {args.duration:.0f}",
            file=sys.stderr,
        )
    return 0 if not failed else 1


def seeds_table(docs: list[dict[str, Any]]) -> str:
    """One line per seed and a total: what each run did and found."""
    head = (
        f"{'seed':>10} {'steps':>5} {'wall s':>6} {'pods +':>6} {'pods -':>6} "
        f"{'killed':>6} {'restarts':>8} {'down':>4} {'slowest s':>9} {'violations':>10}"
    )
    lines = [head]
    total = {"steps": 0, "created": 0, "deleted": 0, "killed": 0, "restarts": 0, "bad": 0}
    for d in docs:
        pods = d["pods"]
        created = pods.get("pods created", 0)
        deleted = sum(v for k, v in pods.items() if k.startswith("pods deleted"))
        killed = d["counts"].get("workers killed", 0)
        slowest = max(d["convergence"].values(), default=0.0)
        bad = len(d["violations"]) + (1 if d["error"] else 0)
        lines.append(
            f"{d['seed']:>10} {d['steps']:>5} {d['wall']:>6.0f} {created:>6} {deleted:>6} "
            f"{killed:>6} {d['worker_restarts']:>8} {d['max_rollout_down']:>4} "
            f"{slowest:>9.1f} {bad:>10}"
        )
        for key, value in (
            ("steps", d["steps"]),
            ("created", created),
            ("deleted", deleted),
            ("killed", killed),
            ("restarts", d["worker_restarts"]),
            ("bad", bad),
        ):
            total[key] += value
    lines.append(
        f"{'all ' + str(len(docs)):>10} {total['steps']:>5} {'':>6} {total['created']:>6} "
        f"{total['deleted']:>6} {total['killed']:>6} {total['restarts']:>8} {'':>4} {'':>9} "
        f"{total['bad']:>10}"
    )
    return "\n".join(lines)


def _one_seed(
    args: argparse.Namespace, faults: tuple[str, ...], kubeconfig: str, seed: int
) -> dict[str, Any]:
    """One seed's run: progress, summary and its JSON result; returns the result."""
    from cliques_lab.bench import chaos

    started = dt.datetime.now(dt.UTC)
    stem = f"chaos-{seed}-{started.strftime('%Y%m%dT%H%M%SZ')}"
    (args.results / "logs").mkdir(parents=True, exist_ok=True)
    cfg = chaos.Settings(
        kubeconfig=kubeconfig,
        seed=seed,
        duration=args.duration,
        faults=faults,
        workers=args.workers,
        max_sets=args.max_sets,
        cluster=None if args.kubeconfig else args.cluster,
        log_dir=args.results / "logs",
    )
    print(
        f"chaos seed {seed}: {args.duration:.0f}s of steps, faults "
        f"{','.join(faults) or 'none'}; results go to {args.results / stem}.json",
        flush=True,
    )
    result = asyncio.run(_with_progress(cfg))
    doc: dict[str, Any] = {
        "kind": "chaos",
        "started": started.isoformat(),
        "command": " ".join(["cliques", *sys.argv[1:]]),
        "cpus": os.cpu_count(),
        "duration": args.duration,
        "workers": args.workers,
        "ok": result.ok,
        **dataclasses.asdict(result),
    }
    path = report.save(doc, args.results, stem)
    print(summary(doc))
    print(f"saved {path}")
    if not result.ok:
        print(f"reproduce with: cliques bench chaos --seed {seed}", file=sys.stderr)
    return doc


def summary(doc: dict[str, Any]) -> str:
    """A few lines: what was tried, what was found."""
    c = doc["counts"]
    pods = doc["pods"]
    deleted = sum(v for k, v in pods.items() if k.startswith("pods deleted"))
    causes = {k.removeprefix("pods deleted: "): v for k, v in pods.items() if k != "pods created"}
    conv = doc["convergence"]
    lines = [
        f"seed {doc['seed']}: {doc['steps']} steps in {doc['wall']:.0f}s",
        f"  objects: {c.get('objects valid', 0)} valid, {c.get('objects invalid', 0)} invalid "
        f"({c.get('name conflicts', 0)} name conflicts)",
        f"  edits:   {_fmt(doc['edits'])}",
        f"  deletes: {_fmt(doc['deletes'])}",
        f"  faults:  {_fmt(doc['faults'])}",
        f"  pods:    {pods.get('pods created', 0)} created, {deleted} deleted ({_fmt(causes)})",
        f"  worker restarts {doc['worker_restarts']} for {c.get('workers killed', 0)} killed; "
        f"most gangs down for a rollout at once: {doc['max_rollout_down']}",
        f"  converged: {len(conv)} sets, slowest {max(conv.values(), default=0):.1f}s "
        f"(bound {doc['converge_bound']:.0f}s)",
    ]
    if doc["error"]:
        lines.append(f"  ERROR: {doc['error']}")
    lines.append(f"  violations: {len(doc['violations'])}")
    lines += [f"    - {v}" for v in doc["violations"]]
    return "\n".join(lines)


def _fmt(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _dev_cluster(name: str) -> str:
    from cliques_lab.devcluster import session
    from cliques_lab.devcluster.errors import DevClusterError

    try:
        env = session.start(name, 4, disable_qps_limits=True)
        with data.as_path(data.CRDS) as crds:
            session.install_crds(env, crds)
    except DevClusterError as exc:
        raise SystemExit(f"cliques bench chaos: {exc}") from None
    return env["KUBECONFIG"]


async def _with_progress(cfg: Any) -> Any:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from cliques_lab.bench import chaos

    with Progress(
        TextColumn("{task.description:>10}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total)
            bar.update(tasks[what], completed=done, total=total)

        return await chaos.run(cfg, update)
