"""`cliques dev-cluster`: a local real Kubernetes control plane, no Docker.

    cliques dev-cluster up [--name N] [--nodes K] [--kube-version V] [--feature-gates K=V,...]
                           [--with ADDON]... [--disable-qps-limits] [--no-gang-scheduling]
                           [--pull-seconds S] [--load-seconds S] [--audit] [--dry-run]
    cliques dev-cluster down [--name N] [--all]
    cliques dev-cluster status [--name N] [--all]
    cliques dev-cluster kubeconfig [--name N]     the kubeconfig's path
    cliques dev-cluster env [--name N]            `eval "$(cliques dev-cluster env)"`
    cliques dev-cluster build [--kube-version V] [--force] [--helm] [--lws] [--with ADDON]...
                                                  only build (or check) the binaries

The first `up` builds etcd, the Kubernetes control plane, kubectl and KWOK from the Go
modules in `cliques_lab/devcluster/gomod` into ~/.cache/cliques (many minutes, once per
machine and Kubernetes version); `--with kueue`, `metrics-server` or `prometheus` also build and
run those add-ons (`cliques_lab.devcluster.addons`). `--kube-version` picks one of
`gomodules.KUBE_VERSIONS` (default `$CLIQUES_KUBE_VERSION`, else
`gomodules.DEFAULT_KUBE_VERSION`); a version outside them is refused in one line naming the
supported ones. Every error the dev
cluster knows about (`DevClusterError`: no Go, a failed build step, a component that does
not come up, an existing cluster of another version) is printed as its message with exit
status 1.
The work happens in `cliques_lab.devcluster`; this module only parses and prints.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Any

from cliques import argtypes
from cliques_lab.devcluster import addons, build, cluster, gomodules, kwok, progress, startmodel
from cliques_lab.devcluster.errors import DevClusterError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dev-cluster",
        help="a local real Kubernetes control plane (etcd, apiserver, KWOK nodes)",
        description="Start, inspect and stop local Kubernetes control planes with KWOK "
        "fake nodes, built from Go modules (no Docker, nothing prebuilt downloaded).",
    )
    parser.set_defaults(func=lambda _args: _help(parser))
    sub = parser.add_subparsers(dest="dev_cluster_command", metavar="ACTION")
    _up_parser(sub)

    down = _named(sub, "down", "stop a dev cluster and remove all its processes and files")
    down.add_argument("--all", action="store_true", help="every dev cluster on this machine")
    down.set_defaults(func=_down)

    status = _named(sub, "status", "show whether a dev cluster runs, its components and memory")
    status.add_argument("--all", action="store_true", help="every dev cluster on this machine")
    status.set_defaults(func=_status)

    kubeconfig = _named(sub, "kubeconfig", "print the path of a dev cluster's kubeconfig")
    kubeconfig.set_defaults(func=_kubeconfig)

    env = _named(sub, "env", 'print export lines: eval "$(cliques dev-cluster env)"')
    env.set_defaults(func=_env)
    _build_parser(sub)


def _named(sub: Any, action: str, help_text: str, **extra: Any) -> argparse.ArgumentParser:
    """The parser of an action on one cluster (`--name`)."""
    p: argparse.ArgumentParser = sub.add_parser(
        action, help=help_text, description=help_text, **extra
    )
    p.add_argument(
        "--name", default=kwok.DEFAULT_NAME, help=f"cluster name (default {kwok.DEFAULT_NAME})"
    )
    return p


def _up_parser(sub: Any) -> None:
    """`dev-cluster up`: what a new cluster is made with."""
    up = _named(
        sub,
        "up",
        "start a dev cluster (or reuse the running one) and wait until it is ready",
        epilog=_up_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument(
        "--nodes",
        type=argtypes.int_at_least(0, kwok.MAX_NODES),
        default=None,
        help=f"fake GPU nodes to have (default {kwok.DEFAULT_NODES} for a new cluster; "
        "an existing cluster keeps its nodes unless given)",
    )
    up.add_argument(
        "--kube-version",
        metavar="V",
        default=None,
        help=f"the Kubernetes version of a new cluster: {_supported()} (default: "
        f"${gomodules.KUBE_VERSION_ENV} if set, else {gomodules.DEFAULT_KUBE_VERSION}; "
        "a leading 'v' is accepted). An existing cluster keeps its version: asking for "
        "another is refused with the command that removes it",
    )
    up.add_argument(
        "--feature-gates",
        metavar="K=V,...",
        default=None,
        help="feature gates set on top of the version's gang gates (K=false turns one off); "
        "they go to the API server, the controller-manager and the scheduler, and a gate "
        "the version does not know stops the API server",
    )
    _with_option(
        up,
        "run an add-on too ({}; repeat or comma-separate for more; see below). An existing "
        "cluster keeps its add-ons and gets kueue or prometheus added; metrics-server only comes "
        "with a new cluster",
    )
    up.add_argument(
        "--audit",
        action="store_true",
        help="the API server logs every write it answers (create, update, patch, delete: who, "
        "which object, the code; not Leases or Events) to the cluster's logs/audit.log, to "
        "find who deleted or changed what (a new cluster only)",
    )
    up.add_argument(
        "--disable-qps-limits",
        action="store_true",
        help="turn off API server inflight limits and client QPS limits (for benchmarks)",
    )
    for flag, what in (("pull", "an image pull"), ("load", "a container's model load")):
        up.add_argument(
            f"--{flag}-seconds",
            type=argtypes.seconds(zero=True),
            default=None,
            metavar="S",
            help=f"seconds {what} takes on every node unless the pod says otherwise (default "
            "0; a new cluster only); either above 0 puts every pod through the start model "
            "(docs/devcluster.md)",
        )
    up.add_argument(
        "--no-gang-scheduling",
        dest="gang_scheduling",
        action="store_false",
        help="create the cluster without the gang gates and API versions listed below",
    )
    up.add_argument(
        "--timeout",
        type=argtypes.seconds(),
        default=120.0,
        help="seconds to wait for readiness (default 120)",
    )
    up.add_argument(
        "--dry-run",
        action="store_true",
        help="print what kwokctl would run and check that nothing would be downloaded",
    )
    up.set_defaults(func=_up)


def _build_parser(sub: Any) -> None:
    """`dev-cluster build`: the binaries of a version, and of the add-ons asked for."""
    build_p = sub.add_parser(
        "build", help="build the binaries (or check they are cached) and print where they are"
    )
    build_p.add_argument(
        "--kube-version",
        metavar="V",
        default=None,
        help=f"the Kubernetes version to build: {_supported()} (default: "
        f"${gomodules.KUBE_VERSION_ENV} if set, else {gomodules.DEFAULT_KUBE_VERSION})",
    )
    build_p.add_argument("--force", action="store_true", help="rebuild even if cached")
    build_p.add_argument(
        "--helm", action="store_true", help="also build helm (for the Helm chart's tests)"
    )
    build_p.add_argument(
        "--lws",
        action="store_true",
        help="also build lws-manager (LeaderWorkerSet, for `cliques bench scale --operators lws`)",
    )
    _with_option(build_p, "also build an add-on ({}; repeatable)")
    build_p.set_defaults(func=_build)


def _with_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--with ADDON` (repeatable), whose help names the add-ons in place of `{}`."""
    parser.add_argument(
        "--with",
        dest="addons",
        metavar="ADDON",
        action="append",
        default=None,
        help=help_text.format(", ".join(addons.ADDONS)),
    )


def _supported() -> str:
    return ", ".join(gomodules.KUBE_VERSIONS)


def _up_epilog() -> str:
    """`up --help`'s tail: each version's gang gates and API versions, the environment."""
    lines = [
        "gang scheduling, on in a new cluster unless --no-gang-scheduling (its feature gates,",
        "then the API versions the API server serves through --runtime-config):",
    ]
    for version in gomodules.KUBE_VERSIONS:
        for i, items in enumerate((kwok.GANG_FEATURE_GATES, kwok.GANG_RUNTIME_CONFIG)):
            text = textwrap.wrap(", ".join(items[version]), 76)
            lead = f"  {version:<8}" if i == 0 else " " * 10
            lines += [lead + text[0], *(" " * 10 + more for more in text[1:])]
    lines += ["", "add-ons (--with; their processes' logs are beside the control plane's):"]
    lines += [f"  {a.name:<16}{a.summary}" for a in addons.ADDONS.values()]
    lines += [
        "",
        "environment:",
        f"  {gomodules.KUBE_VERSION_ENV}  the Kubernetes version when --kube-version is not given",
        f"  {'':<{len(gomodules.KUBE_VERSION_ENV)}}  (default {gomodules.DEFAULT_KUBE_VERSION}); "
        "the tests' cluster runs it too",
    ]
    return "\n".join(lines)


def _kube_version(flag: str | None) -> str | None:
    """The version asked for: the flag, else $CLIQUES_KUBE_VERSION, else None (the existing
    cluster's, or the default); ValueError naming the supported ones."""
    if flag is not None:
        return gomodules.kube_version(flag)
    from_env = os.environ.get(gomodules.KUBE_VERSION_ENV)
    if not from_env:
        return None
    try:
        return gomodules.kube_version(from_env)
    except ValueError as exc:
        raise ValueError(f"{gomodules.KUBE_VERSION_ENV}: {exc}") from None


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _fail(exc: Exception) -> int:
    print(f"cliques dev-cluster: {exc}", file=sys.stderr)
    return 1


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _up(args: argparse.Namespace) -> int:
    try:
        version = _kube_version(args.kube_version)
        gates = None if args.feature_gates is None else kwok.parse_feature_gates(args.feature_gates)
        wanted = None if args.addons is None else addons.parse(args.addons)
    except ValueError as exc:
        return _fail(exc)
    reporter = progress.make_reporter()
    try:
        with progress.ReporterScope(reporter):
            if args.dry_run:
                output = cluster.dry_run(
                    args.name,
                    disable_qps_limits=args.disable_qps_limits,
                    gang_scheduling=args.gang_scheduling,
                    kube_version=version,
                    feature_gates=gates,
                    addons=wanted,
                    reporter=reporter,
                )
            else:
                _say(f"starting dev cluster '{args.name}'...")
                result = cluster.up(
                    args.name,
                    args.nodes,
                    disable_qps_limits=args.disable_qps_limits,
                    gang_scheduling=args.gang_scheduling,
                    kube_version=version,
                    feature_gates=gates,
                    addons=wanted,
                    reporter=reporter,
                    timeout=args.timeout,
                    start_defaults=_start_defaults(args),
                    audit=args.audit,
                )
    except (DevClusterError, ValueError) as exc:
        return _fail(exc)
    if args.dry_run:
        print(output, end="")
        remote = kwok.remote_sources(output)
        if remote:
            _say("would download: " + ", ".join(remote))
            return 1
        _say(
            f"dry run: every binary is a local file ({len(kwok.dry_run_sources(output))}); "
            "nothing would be downloaded"
        )
        return 0
    _report_up(args.name, result)
    return 0


def _start_defaults(args: argparse.Namespace) -> startmodel.Defaults | None:
    """The node defaults asked for (None: not asked, the cluster keeps its own)."""
    if args.pull_seconds is None and args.load_seconds is None:
        return None
    return startmodel.Defaults(args.pull_seconds or 0.0, args.load_seconds or 0.0)


def _report_up(name: str, result: cluster.UpResult) -> None:
    what = {
        "reused": f"dev cluster '{name}' is already running; reusing it",
        "restarted": f"dev cluster '{name}' was not (fully) running; restarted it",
        "created": f"dev cluster '{name}' created",
    }[result.action]
    _say(f"{what} ({len(result.nodes)} nodes Ready, {result.seconds:.1f}s)")
    for note in result.notes:
        _say(f"note: {note}")
    _say(f"  Kubernetes: {result.kube_version}")
    _say(f"  gates:      {kwok.gates_text(result.feature_gates) or 'none'}")
    if result.addons:
        _say(f"  add-ons:    {', '.join(result.addons)} (logs in {result.info.logs_dir})")
    _say(f"  API server: {result.info.server}")
    _say(f"  kubeconfig: {result.info.kubeconfig}")
    audit_log = cluster.status(name).audit_log
    if audit_log is not None:
        _say(f"  audit log:  {audit_log} (every write)")
    _say(f'  use it:     eval "$(cliques dev-cluster env --name {name})"')
    _say(f"  stop it:    cliques dev-cluster down --name {name}")


def _down(args: argparse.Namespace) -> int:
    try:
        names = cluster.list_clusters() if args.all else [kwok.validate_name(args.name)]
        for name in names:
            _report_down(name, cluster.down(name))
    except (DevClusterError, ValueError) as exc:
        return _fail(exc)
    if args.all and not names:
        _say("no dev clusters")
    return 0


def _report_down(name: str, result: cluster.DownResult) -> None:
    if not result.existed:
        _say(f"there is no dev cluster named '{name}'")
        return
    stopped = f"stopped {len(result.stopped)} processes"
    if result.killed:
        stopped += f" ({len(result.killed)} needed SIGKILL)"
    removed = ", ".join(str(p) for p in result.removed) or "nothing left to remove"
    _say(f"dev cluster '{name}': {stopped}; removed {removed}")


def _status(args: argparse.Namespace) -> int:
    try:
        names = cluster.list_clusters() if args.all else [kwok.validate_name(args.name)]
        if args.all and not names:
            print("no dev clusters")
            return 1
        states = [cluster.status(name) for name in names]
    except (DevClusterError, ValueError) as exc:
        return _fail(exc)
    for st in states:
        _print_status(st)
    root = build.cache_root()
    usage = build.disk_usage(root) if root.exists() else 0
    print(f"cache: {root} ({usage / 2**20:.0f} MiB)")
    return 0 if all(st.state == "running" for st in states) else 1


def _print_status(st: cluster.ClusterStatus) -> None:
    if st.state == "absent":
        print(f"{st.name}: not created (cliques dev-cluster up --name {st.name})")
        return
    qps = "off" if st.disable_qps_limits else "on"
    gangs = "on" if st.gang_scheduling else "off"
    print(f"{st.name}: {st.state}  server {st.server}  QPS limits {qps}  gang scheduling {gangs}")
    print(f"  Kubernetes {st.kube_version or 'unknown'}")
    print(f"  feature gates {kwok.gates_text(st.feature_gates) or 'none'}")
    print(f"  add-ons {', '.join(st.addons) or 'none'}")
    print(f"  kubeconfig {st.kubeconfig}")
    if st.audit_log is not None:
        print(f"  audit log {st.audit_log}")
    for c in st.components:
        pid = c.pid if c.pid is not None else "-"
        state = (
            f"running  pid {pid:<8} rss {c.rss_bytes / 2**20:7.1f} MiB" if c.running else "stopped"
        )
        print(f"  {c.name:<24} {state}  log {c.log}")
    print(f"  control plane rss {st.rss_bytes / 2**20:.0f} MiB")


def _kubeconfig(args: argparse.Namespace) -> int:
    try:
        print(cluster.info(args.name).kubeconfig)
    except (DevClusterError, ValueError) as exc:
        return _fail(exc)
    return 0


def _env(args: argparse.Namespace) -> int:
    try:
        lines = cluster.info(args.name).env_lines()
    except (DevClusterError, ValueError) as exc:
        return _fail(exc)
    print("\n".join(lines))
    return 0


def _build(args: argparse.Namespace) -> int:
    try:
        version = _kube_version(args.kube_version)
        wanted = addons.parse(args.addons or ())
    except ValueError as exc:
        return _fail(exc)
    reporter = progress.make_reporter()
    try:
        with progress.ReporterScope(reporter):
            binaries = build.ensure_binaries(reporter, force=args.force, kube_version=version)
            extra = [
                build.ensure_tool(addons.ADDONS[name].module, reporter, force=args.force)
                for name in wanted
            ]
            helm = (
                build.ensure_tool(gomodules.HELM, reporter, force=args.force) if args.helm else None
            )
            lws = build.ensure_tool(gomodules.LWS, reporter, force=args.force) if args.lws else None
    except DevClusterError as exc:
        return _fail(exc)
    for field_name in (
        "kube_apiserver",
        "kube_controller_manager",
        "kube_scheduler",
        "kubectl",
        "etcd",
        "kwok",
        "kwokctl",
    ):
        print(getattr(binaries, field_name))
    if helm is not None:
        print(helm.binary("helm"))
    if lws is not None:
        print(lws.binary("lws-manager"))
    for tool in extra:
        print(*(tool.binary(name) for name in tool.module.binaries()), sep="\n")
    return 0
