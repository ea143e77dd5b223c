"""Argument parsing and the console side of `cliques bench scale`, `cliques bench report` and
`cliques bench plot` (progress bars, tables, files). The work itself is in `scale`, the LWS
peer in `peer_lws`, the cost curves in `curves`."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cliques import argtypes, data
from cliques_lab.bench import crash, disruption, report, workload

if TYPE_CHECKING:
    from cliques_lab.bench import scale

MAX_NODES = 1000  # the dev cluster's limit (cliques_lab.devcluster.kwok.MAX_NODES)
DEFAULT_OPERATORS = "cliques-w1,cliques-wN,kopf"
# Operators that are not cliques: the kopf peer (Python, in the source tree) and
# LeaderWorkerSet's manager (Go, built into the dev-cluster cache).
PEERS = ("kopf", "lws")
# The kopf peer is a benchmark baseline kept in the source tree, not shipped in the wheel.
KOPF_PEER = Path("bench/peers/kopf")


T = TypeVar("T")


def round_order(runs: list[T], rnd: int) -> list[T]:
    """The runs of round `rnd` (from 1): in the order given in odd rounds, reversed in even
    ones, so that over an even number of rounds each run is as often early as late."""
    return list(runs) if rnd % 2 else list(reversed(runs))


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
    p.add_argument(
        "--nodes",
        type=argtypes.int_at_least(1, MAX_NODES),
        default=100,
        help="KWOK nodes (default 100)",
    )
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
        default=None,
        help="comma list of cliques-w1, cliques-wN (N = CPU count), cliques-wK, kopf, lws "
        f"(default: {DEFAULT_OPERATORS}, without kopf when its peer is not found); lws is "
        "LeaderWorkerSet's manager, built with Go into the dev-cluster cache on first use",
    )
    p.add_argument(
        "--lws-qps",
        type=argtypes.positive_number,
        default=500.0,
        help="the LWS manager's client QPS (default 500, its own default; recorded)",
    )
    p.add_argument(
        "--lws-burst",
        type=argtypes.int_at_least(1),
        default=500,
        help="the LWS manager's client burst (default 500, its own default; recorded)",
    )
    p.add_argument(
        "--kopf-peer",
        type=Path,
        default=KOPF_PEER,
        metavar="DIR",
        help="the kopf peer's directory, part of the cliques source tree "
        f"(default: {KOPF_PEER}, relative to the working directory)",
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
        "--cliques-from",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="also run cliques-w1 as the source tree DIR has it (e.g. a `git worktree` of "
        "an older commit), named NAME: two versions compared in one interleaved run; "
        "repeatable",
    )
    p.add_argument(
        "--cliques-options",
        type=shlex.split,
        default=[],
        metavar="'OPTIONS'",
        help="more `cliques operator` options for the cliques operators, quoted as one "
        "argument (e.g. '--status-hold 30'); recorded with their results",
    )
    p.add_argument(
        "--repeat",
        type=argtypes.int_at_least(1),
        default=1,
        help="rounds: every operator runs this many times, interleaved and in turn reversed "
        "(A B C C B A A B C ...: each goes first as often as last, on a control plane whose "
        "own CPU drifts from run to run and the operator's with it), and the table and the "
        "targets use each phase's median (default 1)",
    )
    p.add_argument(
        "--gang-scheduling",
        choices=("Auto", "Workload", "None"),
        default=workload.DEFAULT_GANG_SCHEDULING,
        help="spec.gangScheduling.backend of cliques' CliqueSets (default None: pod by pod, "
        "as the peers schedule; Workload binds each gang whole through the Workload API)",
    )
    p.add_argument(
        "--pod-readiness",
        choices=("Pod", "Gang"),
        default="",
        help="spec.podReadiness of cliques' CliqueSets (default: left out, Pod; Gang: pods "
        "Ready only in whole gangs, through the readiness gate cliques.dev/gang-ready)",
    )
    p.add_argument(
        "--subdomain-policy",
        type=_policies,
        default=[""],
        metavar="POLICY[,POLICY]",
        help="spec.subdomainPolicy of cliques' CliqueSets: Shared (one headless Service per "
        "set), UniquePerGang (one per gang), or both, comma-separated, to run every "
        "operator under each in turn, named operator/POLICY (default: left out, Shared)",
    )
    p.add_argument(
        "--skip",
        type=_skipped,
        default=frozenset(),
        metavar="PHASE[,PHASE]",
        help="phases to leave out, comma-separated, of steady-state, rolling-update, "
        "in-place-update, reorder-apply, delete (the deploy milestones always run); e.g. the "
        "largest shapes of "
        "a cost curve with --skip rolling-update,reorder-apply",
    )
    p.add_argument(
        "--pull-seconds",
        type=argtypes.seconds(zero=True),
        default=None,
        metavar="S",
        help="put the dev cluster's start model in every pod template: an image pull takes S "
        "seconds, once per node and image (docs/devcluster.md; default: left out, pods start "
        "at once); recorded, and part of the pod-template hash",
    )
    p.add_argument(
        "--load-seconds",
        type=argtypes.seconds(zero=True),
        default=None,
        metavar="S",
        help="the same for a container's model load, paid at every start, in place too",
    )
    p.add_argument(
        "--with-phases",
        type=_node_phases,
        default=(),
        metavar="PHASE[,PHASE]",
        help="node phases to add after the others, before the delete, comma-separated: drain "
        "(kubectl drain of 10%% of the nodes holding the workload's pods, at least one) and "
        "node-loss (a node holding gang pods stops its heartbeat); whole Ready gangs are "
        "sampled every second and plotted (default: none)",
    )
    p.add_argument(
        "--crash-gangs",
        type=argtypes.int_at_least(0),
        default=0,
        metavar="N",
        help="add the gang-crash phase after the rolls: the leaders of the first N gangs of "
        "every set report a crashed container at once, and the phase lasts until every gang "
        "serves again; the CliqueSets then recreate a gang that stays below minAvailable for "
        f"{crash.BREACH_SECONDS} s (failurePolicy RecreateGang), LWS groups recreate at the "
        "container restart (default 0: no crash phase)",
    )
    p.add_argument(
        "--out-of-service-after",
        type=argtypes.seconds(),
        default=120.0,
        metavar="S",
        help="node-loss: seconds from the power-off to the taint "
        f"{disruption.OUT_OF_SERVICE_TAINT}, as an administrator would put it (default 120)",
    )
    p.add_argument("--steady", type=argtypes.seconds(), default=30.0, help="steady-state window, s")
    p.add_argument("--timeout", type=argtypes.seconds(), default=600.0, help="per-phase limit, s")
    p.add_argument("--out", type=Path, default=Path("bench/results"), help="results directory")
    p.set_defaults(func=run_scale)

    r: argparse.ArgumentParser = bench_sub.add_parser(
        "report", help="compare saved benchmark runs (JSON files)"
    )
    r.add_argument("files", nargs="+", type=Path)
    r.set_defaults(func=run_report)

    c: argparse.ArgumentParser = bench_sub.add_parser(
        "plot",
        help="cost curves: CPU per pod and peak RSS against pods, one line per operator",
        description="Draw each operator's deploy CPU per pod (its own, and with the "
        "controller-manager's) and peak RSS against the number of pods, from saved scale "
        "runs of different shapes (e.g. 1x500x2, 1x2500x2, 1x5000x2; many-set shapes such as "
        "1000x5x2 are curves of their own), and print a Markdown table per shape: time to "
        "Ready, CPU, the control plane's CPU, peak RSS, the no-op reconcile, spurious "
        "writes. Needs matplotlib (the bench extra). Runs whose pod templates differ are "
        "refused.",
    )
    c.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE[:OPERATOR,...]",
        help="scale result JSON files; FILE:lws,kopf takes only those operators' runs of it "
        "(e.g. the peers of a run whose cliques figures a newer file supersedes)",
    )
    c.add_argument(
        "-o", "--out", type=Path, default=Path("cost-curves.png"), help="the PNG to write"
    )
    c.set_defaults(func=run_plot)


POLICIES = ("Shared", "UniquePerGang")


def _policies(text: str) -> list[str]:
    """`--subdomain-policy`: a comma list of subdomain policies, each once."""
    out = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in out if t not in POLICIES]
    if bad or not out or len(set(out)) != len(out):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give Shared, UniquePerGang or both, comma-separated, each once"
        )
    return out


def _skipped(text: str) -> frozenset[str]:
    """`--skip`: a comma list of phases that may be left out."""
    out = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in out if t not in report.SKIPPABLE]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give phases to leave out, comma-separated, of {', '.join(report.SKIPPABLE)}"
        )
    return frozenset(out)


def _node_phases(text: str) -> tuple[str, ...]:
    """`--with-phases`: a comma list of node phases."""
    try:
        out = disruption.parse_phases(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not out:
        raise argparse.ArgumentTypeError(f"{text!r}: give {', '.join(disruption.PHASES)}")
    return out


class UsageError(Exception):
    """A bad option value, found before anything is started (exit code 2)."""


def _operator_names(args: argparse.Namespace) -> list[tuple[str, int | None]]:
    """The built-in operators asked for, in order: (name, workers or None for kopf). kopf
    is left out of the default list when its peer is not found, and refused when named."""
    out: list[tuple[str, int | None]] = []
    text = DEFAULT_OPERATORS if args.operators is None else args.operators
    for name in [n.strip() for n in text.split(",") if n.strip()]:
        if name in PEERS:
            out.append((name, None))
            continue
        k = name.removeprefix("cliques-w") if name.startswith("cliques-w") else ""
        if k == "N":
            out.append((name, os.cpu_count() or 1))
        elif k.isdigit() and int(k) >= 1:
            out.append((name, int(k)))
        else:
            raise UsageError(
                f"unknown operator {name!r}: use kopf, lws, cliques-wN (N = CPU count) or "
                "cliques-wK with K a number of workers >= 1"
            )
    if any(name == "kopf" for name, _ in out) and not kopf_peer_found(args.kopf_peer):
        if args.operators is not None:
            raise UsageError(
                f"the kopf peer is not in {args.kopf_peer}/ (it is part of the cliques source "
                "tree, bench/peers/kopf, and is not installed with the package): run from the "
                "root of a source checkout, name it with --kopf-peer DIR, or leave kopf out "
                "of --operators"
            )
        out = [(name, workers) for name, workers in out if name != "kopf"]
    if not out and not args.operator_cmd and not args.cliques_from:
        raise UsageError(
            "no operator to run: --operators is empty and no --operator-cmd or --cliques-from given"
        )
    return out


def kopf_peer_found(peer: Path) -> bool:
    """Whether `peer` holds the kopf peer (its operator and the script making its venv)."""
    return (peer / "operator.py").is_file() and (peer / "venv.py").is_file()


def _specs(args: argparse.Namespace) -> list[scale.OperatorSpec]:
    from cliques_lab.bench import scale

    names = _operator_names(args)
    try:
        custom = [scale.cliques_from(c, args.cliques_options) for c in args.cliques_from]
        custom += [scale.custom_operator(c) for c in args.operator_cmd]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    specs = []
    for name, workers in names:
        if workers is not None:
            specs.append(scale.cliques_operator(workers, args.cliques_options))
            continue
        if name == "lws":
            specs.append(_lws_spec(args))
            continue
        py = subprocess.run(
            [sys.executable, str(args.kopf_peer / "venv.py")],
            capture_output=True,
            text=True,
            check=False,
        )
        if py.returncode != 0:
            raise SystemExit(f"cliques bench: could not prepare the kopf peer:\n{py.stderr}")
        specs.append(scale.kopf_operator(py.stdout.strip().splitlines()[-1], args.kopf_peer))
    return specs + custom


def _lws_spec(args: argparse.Namespace) -> scale.OperatorSpec:
    """Build lws-manager if the cache lacks it (with progress), find its module source."""
    from cliques_lab.bench import peer_lws
    from cliques_lab.devcluster import progress
    from cliques_lab.devcluster.errors import DevClusterError

    reporter = progress.make_reporter()
    try:
        with progress.ReporterScope(reporter):
            manager = peer_lws.ensure_manager(reporter)
        source = peer_lws.module_source()
    except (DevClusterError, peer_lws.LwsError) as exc:
        raise SystemExit(f"cliques bench scale: the LWS peer: {exc}") from None
    peer = peer_lws.LwsPeer(source, args.lws_qps, args.lws_burst)
    return peer_lws.operator_spec(manager, peer)


def _kubeconfig(args: argparse.Namespace) -> str:
    if args.kubeconfig:
        return str(args.kubeconfig)
    from cliques_lab.devcluster import session
    from cliques_lab.devcluster.errors import DevClusterError

    try:
        env = session.start(
            args.cluster, args.nodes, disable_qps_limits=True, fresh=args.fresh_cluster
        )
        with data.as_path(data.CRDS) as crds:
            session.install_crds(env, crds)
    except DevClusterError as exc:
        raise SystemExit(f"cliques bench: {exc}") from None
    return env["KUBECONFIG"]


def _kubectl_path(args: argparse.Namespace) -> str:
    """The dev cluster's kubectl (the node phases drain, cordon and taint with it); plain
    `kubectl` on PATH for a cluster given by --kubeconfig, or when no node phase runs."""
    if args.kubeconfig or not args.with_phases:
        return "kubectl"
    from cliques_lab.devcluster import cluster

    return str(cluster.info(args.cluster).kubectl)


def _control_plane(args: argparse.Namespace) -> dict[str, int]:
    """The dev cluster's component pids (none for a cluster given by --kubeconfig)."""
    if args.kubeconfig:
        return {}
    from cliques_lab.devcluster import cluster

    found = cluster.status(args.cluster)
    return {c.name: c.pid for c in found.components if c.running and c.pid is not None}


def _check_args(args: argparse.Namespace) -> workload.Shape:
    """Every option checked before a cluster or an operator is started."""
    try:
        shape = workload.Shape.parse(args.shape)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.fresh_cluster and args.kubeconfig:
        raise UsageError(
            "--fresh-cluster restarts a dev cluster; it cannot be used with --kubeconfig"
        )
    if args.kubeconfig and not Path(args.kubeconfig).is_file():
        raise UsageError(f"--kubeconfig {args.kubeconfig}: no such file")
    _operator_names(args)
    if args.operators is None and not kopf_peer_found(args.kopf_peer):
        print(
            f"cliques bench scale: the kopf peer is not in {args.kopf_peer}/ (it is part of "
            "the source tree, not of the package): running without it (--kopf-peer DIR "
            "names it)",
            file=sys.stderr,
        )
    return shape


class Signals:
    """SIGINT and SIGTERM while the benchmark runs: the first one stops the operator under
    test (its process group), deletes its namespace and ends the benchmark with what was
    measured so far saved; later ones only say that the cleanup is under way. Without this,
    SIGTERM would kill the benchmark and leave the operator running in its own session."""

    def __init__(self) -> None:
        self.caught: int | None = None
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Signals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.caught is not None:
            print(f"\n{name}: still cleaning up, please wait", file=sys.stderr, flush=True)
            return
        self.caught = signum
        print(
            f"\n{name}: stopping the operator under test and saving what was measured",
            file=sys.stderr,
            flush=True,
        )
        if self._task is not None and self._loop is not None and not self._task.done():
            self._loop.call_soon_threadsafe(self._task.cancel)

    async def run(self, coro: Any) -> Any:
        """Await `coro` as a task that the first signal cancels; its result, or None when a
        signal cancelled it (the coroutine's own cleanup has run by then)."""
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.ensure_future(coro)
        try:
            return await self._task
        except asyncio.CancelledError:
            if self.caught is None:
                raise
            return None
        finally:
            self._task = None


def run_scale(args: argparse.Namespace) -> int:
    from cliques_lab.bench import scale

    try:
        shape = _check_args(args)
        specs = _specs(args)
    except UsageError as exc:
        print(f"cliques bench scale: {exc}", file=sys.stderr)
        return 2
    hashes = {
        s.name: s.kind.template_hash(
            shape, args.gang_scheduling, args.pull_seconds, args.load_seconds
        )
        for s in specs
    }
    if len(set(hashes.values())) > 1:
        print(
            "cliques bench scale: the operators' workloads have different pod templates "
            f"({', '.join(f'{k} {v}' for k, v in hashes.items())}): not comparable",
            file=sys.stderr,
        )
        return 2
    kubeconfig = _kubeconfig(args)
    try:
        host = asyncio.run(scale.preflight(kubeconfig))
    except scale.ClusterError as exc:
        print(f"cliques bench scale: {exc}", file=sys.stderr)
        return 1
    started = dt.datetime.now(dt.UTC)
    stem = f"scale-{shape}-{started.strftime('%Y%m%dT%H%M%SZ')}"
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    cfg = scale.Settings(
        kubeconfig,
        shape,
        control_plane=_control_plane(args),
        steady=args.steady,
        timeout=args.timeout,
        log_dir=args.out / "logs",
        gang_scheduling=args.gang_scheduling,
        pod_readiness=args.pod_readiness,
        skip=args.skip,
        pull_seconds=args.pull_seconds,
        load_seconds=args.load_seconds,
        node_phases=args.with_phases,
        out_of_service_after=args.out_of_service_after,
        kubectl=_kubectl_path(args),
        crash_gangs=args.crash_gangs,
    )
    runs: list[dict[str, Any]] = []
    doc: dict[str, Any] = {
        "kind": "scale",
        "shape": str(shape),
        "total_pods": shape.total_pods,
        "gang_scheduling": args.gang_scheduling,
        "pod_readiness": args.pod_readiness or "Pod",
        "subdomain_policies": [p for p in args.subdomain_policy if p],
        "pod_template_hash": next(iter(hashes.values())),
        "nodes": args.nodes,
        "skipped_phases": sorted(args.skip),
        "node_phases": list(args.with_phases),
        "crash_gangs": args.crash_gangs,
        "out_of_service_after": args.out_of_service_after if args.with_phases else None,
        "load_average": list(os.getloadavg()),
        "pull_seconds": args.pull_seconds,
        "load_seconds": args.load_seconds,
        "started": started.isoformat(),
        "cpus": os.cpu_count(),
        "command": " ".join(sys.argv),
        "api_server": host,
        "repeat": args.repeat,
        "complete": False,
        "runs": runs,
    }
    print(f"cluster {host}; results go to {args.out / stem}.json", flush=True)
    with Signals() as signals:
        for rnd in range(1, args.repeat + 1):
            for spec, policy in round_order(
                [(s, p) for s in specs for p in args.subdomain_policy], rnd
            ):
                if signals.caught is not None:
                    break
                of = f", round {rnd}/{args.repeat}" if args.repeat > 1 else ""
                name = f"{spec.name}/{policy}" if policy else spec.name
                print(f"==> {name}: {shape} ({shape.total_pods} pods{of})", flush=True)
                run = scale.OperatorRun(name, subdomain_policy=policy)
                run_cfg = dataclasses.replace(cfg, subdomain_policy=policy)
                load0 = list(os.getloadavg())
                asyncio.run(signals.run(_with_progress(spec, run_cfg, run)))
                if signals.caught is not None:
                    run.error = f"interrupted by {signal.Signals(signals.caught).name}"
                    print(
                        f"    {spec.name}: {run.error}; operator stopped, namespace deleted "
                        f"(log: {run.log})",
                        flush=True,
                    )
                elif run.error:
                    print(f"    {spec.name} failed: {run.error} (log: {run.log})", flush=True)
                runs.append(
                    scale.as_dict(run)
                    | {"round": rnd, "load_average": [load0, list(os.getloadavg())]}
                )
                # Saved after every operator: a run killed later keeps what it measured.
                report.save(doc, args.out, stem)
        interrupted = signals.caught
        doc["complete"] = interrupted is None
        doc["load_average_end"] = list(os.getloadavg())
        summary = report.summarize(runs) if args.repeat > 1 else runs
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
    gangs = shape.sets * shape.gangs
    found = report.targets(summary, shape.total_pods, rounds, gangs=gangs, sets=shape.sets)
    for operator, target, met in found:
        print(f"{'MET ' if met else 'MISS'}  {operator}: {target}")
    print(f"\nsaved {path}" + "".join(f"\n      {p}" for p in pngs))
    if interrupted is not None:
        name = signal.Signals(interrupted).name
        print(f"interrupted by {name}: the results above are partial", file=sys.stderr)
        return 128 + interrupted
    return 0 if all(not r["error"] for r in runs) else 1


async def _with_progress(
    spec: scale.OperatorSpec, cfg: scale.Settings, run: scale.OperatorRun
) -> scale.OperatorRun:
    from cliques_lab.bench import scale

    try:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        return await scale.run_operator(spec, cfg, _plain_progress(), run)
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

        return await scale.run_operator(spec, cfg, update, run)


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
    try:
        print(report.compare(args.files))
    except report.BadResults as exc:
        print(f"cliques bench report: {exc}", file=sys.stderr)
        return 2
    return 0


def _picked(arg: str) -> tuple[Path, set[str] | None]:
    """`FILE` or `FILE:OPERATOR[,OPERATOR]` (only those operators' runs of that file)."""
    path, sep, ops = arg.rpartition(":")
    if not sep or Path(arg).is_file() or not path:
        return Path(arg), None
    return Path(path), {o.strip() for o in ops.split(",") if o.strip()}


def _only(doc: dict[str, Any], operators: set[str] | None) -> dict[str, Any]:
    """`doc` with only the runs of `operators` (all of them for None)."""
    if operators is None or not isinstance(doc.get("runs"), list):
        return doc
    return doc | {"runs": [r for r in doc["runs"] if r.get("operator") in operators]}


def run_plot(args: argparse.Namespace) -> int:
    from cliques_lab.bench import curves

    picked = [_picked(str(p)) for p in args.files]
    missing = [p for p, _ in picked if not p.is_file()]
    if missing:
        print(f"cliques bench plot: no such file: {missing[0]}", file=sys.stderr)
        return 2
    try:
        docs = [(p, _only(report.load(p), ops)) for p, ops in picked]
        for note in report.check_comparable(docs):
            print(f"note: {note}", file=sys.stderr)
    except report.BadResults as exc:
        print(f"cliques bench plot: {exc}", file=sys.stderr)
        return 2
    found = curves.points([d for _, d in docs])
    if not found:
        print("cliques bench plot: no completed deploy in these files", file=sys.stderr)
        return 2
    print(curves.table(found))
    plane = curves.plane_table(found)
    if plane:
        print("\nwhat each deploy made the API server do, from every client:\n")
        print(plane)
    try:
        path = curves.draw(found, args.out, "cliques bench scale: cost against pods")
    except curves.NoMatplotlib as exc:
        print(f"cliques bench plot: {exc}", file=sys.stderr)
        return 1
    print(f"saved {path}")
    return 0
