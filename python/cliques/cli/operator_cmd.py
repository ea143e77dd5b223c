"""`cliques operator`: run the operator against the cluster of a kubeconfig (or in-cluster).

Imports the operator stack lazily, so `cliques hash` keeps working on the base install.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from cliques import argtypes

#: The exit code of a configuration a restart cannot fix (the operator's workers exit with
#: it too for what they find: CRDs not installed, credentials or RBAC refused).
EXIT_BAD_CONFIG = 3


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "operator",
        help="run the cliques operator",
        description="Run the CliqueSet and Clique controllers. Stops cleanly on SIGTERM/SIGINT "
        "(in-flight reconciles finish first). Before serving, each worker checks that the API "
        "server serves the CRDs, that its RBAC lets it list CliqueSets, and which gang "
        "scheduling API the cluster has; it waits out an API server that answers 429 or 5xx "
        "or refuses connections (/readyz says not ready meanwhile). Exit codes: 0 stopped, "
        "1 failed to start or kept crashing, 2 bad flag, 3 something a restart cannot fix: "
        "a kubeconfig or in-cluster configuration that cannot be used (a broken file, a "
        "field of the wrong type, a CA or client certificate that is not PEM: one line on "
        "stderr, before any worker starts), CRDs not installed, credentials or RBAC refused "
        "(the log's last line says which).",
    )
    _cluster_args(p)
    _process_args(p)
    _client_args(p)
    _controller_args(p)
    _sharding_args(p)
    # Set by the supervisor for its worker processes.
    p.add_argument("--buckets", default="", help=argparse.SUPPRESS)
    p.add_argument("--worker-name", default="", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _cluster_args(p: argparse.ArgumentParser) -> None:
    """Which cluster, as whom, and which namespace."""
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig path (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)",
    )
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--namespace", help="watch only this namespace (default: all)")


def _process_args(p: argparse.ArgumentParser) -> None:
    """The worker processes, their metrics and health endpoints, their logs."""
    p.add_argument(
        "--workers",
        type=argtypes.int_at_least(1),
        default=None,
        help="worker processes splitting the 256 buckets (default: the CPUs this process may "
        "use: its CPU affinity, capped by the cgroup's CPU quota)",
    )
    p.add_argument(
        "--metrics-bind-address",
        type=argtypes.bind_address,
        default=None,
        metavar="HOST:PORT",
        help="address of /metrics, /healthz, /readyz (default 0.0.0.0:8080; port 0 = off)",
    )
    p.add_argument(
        "--metrics-port",
        type=argtypes.int_at_least(0, 65535),
        default=None,
        help="port of /metrics, /healthz, /readyz on all addresses (0 = off); "
        "--metrics-bind-address sets the host too",
    )
    p.add_argument("--log-format", choices=("text", "json"), default="text")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))


def _client_args(p: argparse.ArgumentParser) -> None:
    """How hard the API server is asked: request rate, reconciles in flight, timeouts."""
    p.add_argument(
        "--qps",
        type=argtypes.number,
        default=200.0,
        help="client-side request rate limit (<= 0: no limit; default 200)",
    )
    p.add_argument(
        "--burst",
        type=argtypes.int_at_least(1),
        default=400,
        help="client-side burst (default 400)",
    )
    p.add_argument(
        "--concurrency",
        type=argtypes.int_at_least(1),
        default=16,
        help="reconciles in flight per controller (default 16)",
    )
    p.add_argument(
        "--request-timeout",
        type=argtypes.seconds(),
        default=90.0,
        help="seconds an API request may take before it fails and is retried (default 90; "
        "the API server ends its own after 60)",
    )


def _controller_args(p: argparse.ArgumentParser) -> None:
    """What the controllers wait for, hold back and relist, and the start gate's image."""
    p.add_argument(
        "--expectations-ttl",
        type=argtypes.seconds(),
        default=60.0,
        help="seconds an unconfirmed create/delete holds an owner back (default 60)",
    )
    p.add_argument(
        "--status-hold",
        type=argtypes.seconds(zero=True),
        default=10.0,
        help="seconds a status that only shows progress (a Clique's pods on their way to "
        "Ready, a CliqueSet's gangs being created or turning available) may wait for more, "
        "so that one write reports both; a Clique's stretches up to 12x while pods are slow "
        "to start (0 = write at once; default 10)",
    )
    p.add_argument(
        "--resync-period",
        type=argtypes.seconds(zero=True),
        default=0.0,
        help="relist every informer this often, in seconds (0 = never)",
    )
    p.add_argument(
        "--start-gate-image",
        default=None,
        metavar="IMAGE",
        help="the image of the init container that holds a gang's pods until the cliques "
        "they start after are Ready, with gang scheduling (it runs `cliques start-gate`; "
        "default: $CLIQUES_START_GATE_IMAGE, else the operator's own published image)",
    )
    p.add_argument(
        "--restart-placement",
        choices=("same-nodes", "anywhere"),
        default="same-nodes",
        help="where the pods of a gang made again after a crash go: same-nodes prefers the "
        "nodes its pods ran on (images and caches are there; a preference, never a "
        "requirement), anywhere leaves it to the scheduler (default: same-nodes)",
    )
    # Emulates an operator upgrade whose hash algorithm differs (tests of the relabel path).
    p.add_argument("--hash-algorithm", type=int, default=None, help=argparse.SUPPRESS)


def _sharding_args(p: argparse.ArgumentParser) -> None:
    """Leases that split the buckets between replicas."""
    g = p.add_argument_group(
        "sharding between replicas",
        "With --leases, every operator process takes shards of the buckets through "
        "coordination.k8s.io Leases, so several replicas split the work and take over from "
        "each other.",
    )
    g.add_argument("--leases", action="store_true", help="split buckets between replicas")
    g.add_argument(
        "--shards", type=argtypes.int_at_least(1), default=16, help="bucket groups (default 16)"
    )
    g.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "cliques-system"),
        help="namespace of the Leases (default: $POD_NAMESPACE or cliques-system)",
    )
    g.add_argument(
        "--lease-duration", type=argtypes.seconds(), default=15.0, help="seconds (default 15)"
    )
    g.add_argument(
        "--renew-deadline", type=argtypes.seconds(), default=10.0, help="seconds (default 10)"
    )
    g.add_argument(
        "--retry-period", type=argtypes.seconds(), default=2.0, help="seconds (default 2)"
    )
    g.add_argument(
        "--identity",
        default="",
        help="this operator's name in the Leases; each worker holds leases as "
        "<identity>-worker-<n> (default: $POD_NAME, else the host name)",
    )


def config_from_args(args: argparse.Namespace) -> Any:
    from cliques.controllers.base.revision import CORE_ALGORITHM
    from cliques.kube.informer import WatchFaults
    from cliques.operator.buckets import BucketSet
    from cliques.operator.manager import Config

    faults = WatchFaults(
        delay=float(os.environ.get("CLIQUES_FAULT_WATCH_DELAY", "0") or 0),
        drop_every=int(os.environ.get("CLIQUES_FAULT_WATCH_DROP_EVERY", "0") or 0),
    )
    return Config(
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespace=args.namespace,
        qps=args.qps,
        burst=args.burst,
        concurrency=args.concurrency,
        expectations_ttl=args.expectations_ttl,
        status_hold=args.status_hold,
        start_gate_image=gate_image(args.start_gate_image),
        same_nodes=args.restart_placement == "same-nodes",
        request_timeout=args.request_timeout,
        hash_algorithm=args.hash_algorithm or CORE_ALGORITHM,
        resync_period=args.resync_period,
        faults=faults,
        buckets=BucketSet(_parse_buckets(args.buckets)) if args.buckets else BucketSet(),
        leases=args.leases,
        lease_namespace=args.lease_namespace,
        identity=worker_identity(args.identity, args.worker_name),
        shards=args.shards,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
    )


def gate_image(flag: str | None) -> str:
    """The start gate's image: the flag, else $CLIQUES_START_GATE_IMAGE, else the
    operator's own published image (`start_gate.default_image`)."""
    from cliques.controllers.features import start_gate

    return flag or os.environ.get("CLIQUES_START_GATE_IMAGE") or start_gate.default_image()


def worker_identity(identity: str, worker_name: str) -> str:
    """`<identity or $POD_NAME or hostname>-<worker name>` (`worker-0` for a lone process)."""
    from cliques.operator.shard_managers import default_identity

    return f"{identity or default_identity()}-{worker_name or 'worker-0'}"


def check_cluster_config(kubeconfig: str | None, context: str | None) -> str:
    """Why the cluster configuration cannot be loaded, or "" when it can (files only: an
    exec plugin is not run, a CA and client certificate are loaded)."""
    from cliques.kube import kubeconfig as kc

    try:
        kc.find(kubeconfig, context)
    except kc.ConfigError as exc:
        return str(exc)
    return ""


def metrics_address(args: argparse.Namespace) -> tuple[str, int]:
    """(host, port) of the health and metrics endpoint from the two flags."""
    host, port = args.metrics_bind_address or ("0.0.0.0", 8080)
    if args.metrics_port is not None:
        port = args.metrics_port
    return host, port


def _parse_buckets(text: str) -> list[int]:
    """`a-b` or `a,b,c` (or a mix) into bucket numbers."""
    out: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
        except ValueError:
            raise SystemExit(f"cliques operator: bad --buckets {text!r}") from None
    return out


def _worker_args(args: argparse.Namespace) -> list[str]:
    """The options a worker process inherits from the supervisor's command line."""
    out = [
        "--qps",
        str(args.qps),
        "--burst",
        str(args.burst),
        "--concurrency",
        str(args.concurrency),
        "--log-format",
        args.log_format,
        "--log-level",
        args.log_level,
        "--expectations-ttl",
        str(args.expectations_ttl),
        "--resync-period",
        str(args.resync_period),
        "--status-hold",
        str(args.status_hold),
        "--start-gate-image",
        gate_image(args.start_gate_image),
        "--restart-placement",
        args.restart_placement,
        "--request-timeout",
        str(args.request_timeout),
    ]
    if args.leases:
        out += [
            "--leases",
            "--shards",
            str(args.shards),
            "--lease-namespace",
            args.lease_namespace,
            "--lease-duration",
            str(args.lease_duration),
            "--renew-deadline",
            str(args.renew_deadline),
            "--retry-period",
            str(args.retry_period),
        ]
        if args.identity:
            out += ["--identity", args.identity]
    for flag, value in (
        ("--kubeconfig", args.kubeconfig),
        ("--context", args.context),
        ("--namespace", args.namespace),
        ("--hash-algorithm", args.hash_algorithm),
    ):
        if value is not None:
            out += [flag, str(value)]
    return out


def run(args: argparse.Namespace) -> int:
    # Only `logs` here: prometheus_client must not be imported before the supervisor has
    # set PROMETHEUS_MULTIPROC_DIR (it reads the variable when it is imported).
    from cliques.operator import logs

    if args.leases and not args.retry_period < args.renew_deadline < args.lease_duration:
        print(
            "cliques operator: need --retry-period < --renew-deadline < --lease-duration, got "
            f"{args.retry_period:g} / {args.renew_deadline:g} / {args.lease_duration:g}",
            file=sys.stderr,
        )
        return 2
    host, port = metrics_address(args)
    if args.workers is None:
        from cliques.operator import cpus

        args.workers = cpus.available()
    problem = check_cluster_config(args.kubeconfig, args.context)
    if problem:
        # Before any worker starts: a worker would only crash-loop on it.
        print(f"cliques operator: {problem}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    if args.workers == 1:
        from cliques.operator import process

        logs.setup(args.log_level, args.log_format, prefix=args.worker_name)
        return process.run_single(config_from_args(args), metrics_host=host, metrics_port=port)

    import tempfile
    from pathlib import Path

    runtime = Path(tempfile.mkdtemp(prefix="cliques-operator-"))
    # Before prometheus_client is imported here: the supervisor's own metrics go to files too.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(runtime / "metrics")
    (runtime / "metrics").mkdir()
    logs.setup(args.log_level, args.log_format, prefix="supervisor")
    import uvloop

    from cliques.operator.supervisor import Supervisor

    sup = Supervisor(
        args.workers,
        _worker_args(args),
        metrics_host=host,
        metrics_port=port,
        runtime_dir=runtime,
    )
    return uvloop.run(sup.run())
