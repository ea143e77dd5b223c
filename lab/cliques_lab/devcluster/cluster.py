"""Named dev clusters: `up`, `down`, `status`, and where their kubeconfig and binaries are.

A cluster is five processes on 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok-controller) that `kwokctl --runtime binary` starts from the binaries
`build` made, plus KWOK fake nodes created here with `kubectl`. All state lives under the
cache directory, never in the repository or ~/.kube / ~/.kwok:

    <cache>/kwok/clusters/<name>/   kwokctl's work dir (kubeconfig.yaml, pki, etcd data,
                                    logs/<component>.log, pids/<component>.pid)
    <cache>/run/<name>/             ours: the kwokctl configuration, kwokctl's own log,
                                    kubectl's discovery cache, the add-ons (addons.json)
                                    and their files (kueue/: configuration, certificates)
    <cache>/run/<name>.lock         serialises up/down of one cluster

`up` reuses a running cluster, restarts a stopped one (after a reboot) and otherwise creates
it (restarting the brand-new API server once, so that a watch from an ancient
resourceVersion gets 410 Gone as on any cluster that has run for a while). A cluster runs
the Kubernetes version and feature gates it was created with (kwokctl records both in its
kwok.yaml); `up` asked for another version or other gates refuses to reuse it and names
the command that removes it, and `up` that asked for neither reuses it as it is, with a
note when it differs from what a new cluster would get. Then `up` waits,
with a deadline, until the API server is ready, the scheduler and the
controller-manager hold their leader leases, the default ServiceAccount exists and every node
is Ready, so that a pod created right after `up` schedules and runs. `down` stops every
process it finds in the pid files (waiting for them, killing stragglers by pid) and removes
every file above. The pure parts (configuration, node objects, command lines) are in `kwok`.

Add-ons (`addons`: `up(addons=...)`, `--with`) are recorded with the cluster: a new cluster
gets those asked for; an existing one keeps its own and gets those asked for that can be
added later (kueue), while one that only a new cluster can have (metrics-server, a kwokctl
component) is refused as other gates are. `addons_up` builds and starts them; their
processes count among the cluster's components in `status` and `down`.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cliques_lab.devcluster import addons, addons_up, gomodules, kwok, processes, startmodel
from cliques_lab.devcluster.build import (
    Binaries,
    ModuleBuild,
    cache_root,
    ensure_binaries,
    installed_binaries,
    installed_tool,
    module_source,
)
from cliques_lab.devcluster.errors import ComponentError, DevClusterError
from cliques_lab.devcluster.progress import Reporter

State = Literal["running", "degraded", "stopped", "absent"]

_KUBECTL_TIMEOUT = 30.0
# What each readiness condition waits for, and whose log explains a timeout.
_LEASES = {"kube-scheduler": "kube-scheduler", "kube-controller-manager": "kube-controller-manager"}


@dataclass(frozen=True)
class ClusterPaths:
    """Every file and directory of one named cluster (see the module docstring)."""

    root: Path
    name: str

    @property
    def kwok_home(self) -> Path:
        return self.root / "kwok"

    @property
    def workdir(self) -> Path:
        return self.kwok_home / "clusters" / self.name

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def state_dir(self) -> Path:
        return self.run_dir / self.name

    @property
    def lock_file(self) -> Path:
        return self.run_dir / f"{self.name}.lock"

    @property
    def create_lock_file(self) -> Path:
        return self.run_dir / "create.lock"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    @property
    def saved_config(self) -> Path:
        return self.workdir / "kwok.yaml"

    @property
    def kwokctl_config(self) -> Path:
        return self.state_dir / "kwokctl.yaml"

    @property
    def kwokctl_log(self) -> Path:
        return self.state_dir / "kwokctl.log"

    @property
    def kube_cache(self) -> Path:
        return self.state_dir / "kube-cache"

    @property
    def addons_record(self) -> Path:
        return self.state_dir / addons.RECORD_FILE

    @property
    def logs_dir(self) -> Path:
        return self.workdir / "logs"

    def component_log(self, component: str) -> Path:
        return self.logs_dir / f"{component}.log"

    def pid_file(self, component: str) -> Path:
        return self.workdir / "pids" / f"{component}.pid"


def paths_for(name: str, root: Path | None = None) -> ClusterPaths:
    return ClusterPaths(root if root is not None else cache_root(), kwok.validate_name(name))


@dataclass(frozen=True)
class ClusterInfo:
    """How to talk to a dev cluster: what the CLI prints and the test fixture yields."""

    name: str
    kubeconfig: Path
    server: str
    kubectl: Path
    bin_dir: Path
    logs_dir: Path
    kube_cache: Path

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """`base` (default os.environ) with KUBECONFIG, KUBECACHEDIR and kubectl on PATH."""
        env = dict(os.environ if base is None else base)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["KUBECACHEDIR"] = str(self.kube_cache)
        env["PATH"] = os.pathsep.join([str(self.bin_dir), env.get("PATH", "")])
        return env

    def env_lines(self) -> list[str]:
        return kwok.env_lines(self.kubeconfig, self.kube_cache, self.bin_dir)


@dataclass(frozen=True)
class ComponentState:
    name: str
    pid: int | None
    running: bool
    rss_bytes: int
    log: Path


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    state: State
    components: list[ComponentState]
    server: str | None
    kubeconfig: Path
    disable_qps_limits: bool
    #: Whether the cluster was created with the gang-scheduling gates
    #: (`kwok.has_gang_scheduling`).
    gang_scheduling: bool = False
    #: The Kubernetes version it runs (`v1.37.2`), as kwokctl recorded it; None if unknown.
    kube_version: str | None = None
    #: The feature gates it was created with, as kwokctl recorded them.
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: Its add-ons (`addons.ADDONS`), as recorded when they were added.
    addons: tuple[str, ...] = ()
    #: The API server's audit log of writes (`up --audit`); None if it keeps none.
    audit_log: Path | None = None

    @property
    def rss_bytes(self) -> int:
        return sum(c.rss_bytes for c in self.components)


@dataclass(frozen=True)
class UpResult:
    info: ClusterInfo
    action: Literal["reused", "restarted", "created"]
    seconds: float
    nodes: list[str]
    notes: list[str] = field(default_factory=list)
    #: The Kubernetes version the cluster runs (`v1.37.2`), its feature gates and add-ons.
    kube_version: str = ""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    addons: tuple[str, ...] = ()


@dataclass(frozen=True)
class DownResult:
    existed: bool
    stopped: list[int]
    killed: list[int]
    removed: list[Path]


# --- processes ----------------------------------------------------------------------------


def _is_ours(proc: processes.Proc, paths: ClusterPaths, component: str) -> bool:
    """Guards against a recycled pid (after a reboot) naming somebody else's process."""
    return component in proc.args and f"{paths.workdir}{os.sep}" in proc.args


def _components(paths: ClusterPaths, *, host_addons: bool = True) -> tuple[str, ...]:
    """The cluster's processes: the control plane, then those of its add-ons that kwokctl
    starts, then (with `host_addons`) those cliques starts after the cluster is usable."""
    recorded = addons.read_record(paths.addons_record)
    extra = addons.components(recorded, by_kwokctl=None if host_addons else True)
    return (*kwok.COMPONENTS, *extra, *(_podstart_components(paths) if host_addons else ()))


def _component_states(paths: ClusterPaths, *, host_addons: bool = True) -> list[ComponentState]:
    components = _components(paths, host_addons=host_addons)
    pids = {c: processes.read_pid(paths.pid_file(c)) for c in components}
    live = processes.ps(p for p in pids.values() if p is not None)
    states: list[ComponentState] = []
    for component, pid in pids.items():
        proc = live.get(pid) if pid is not None else None
        running = proc is not None and _is_ours(proc, paths, component)
        rss = proc.rss_kib * 1024 if proc is not None and running else 0
        states.append(ComponentState(component, pid, running, rss, paths.component_log(component)))
    return states


# --- status, kubeconfig, env --------------------------------------------------------------


def list_clusters(root: Path | None = None) -> list[str]:
    base = (root if root is not None else cache_root()) / "kwok" / "clusters"
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "kwok.yaml").is_file())


def status(name: str = kwok.DEFAULT_NAME, root: Path | None = None) -> ClusterStatus:
    paths = paths_for(name, root)
    if not paths.saved_config.is_file():
        return ClusterStatus(name, "absent", [], None, paths.kubeconfig, False)
    components = _component_states(paths)
    alive = sum(c.running for c in components)
    state: State = (
        "running" if alive == len(components) else "stopped" if alive == 0 else "degraded"
    )
    try:
        server = kwok.apiserver_url(paths.kubeconfig.read_text(encoding="utf-8"))
    except OSError:
        server = None
    options = _saved_options(paths)
    kube_version = str(options["kubeVersion"]) if options.get("kubeVersion") else None
    try:
        gates = kwok.parse_feature_gates(str(options.get("kubeFeatureGates") or ""))
    except ValueError:
        gates = {}
    return ClusterStatus(
        name,
        state,
        components,
        server,
        paths.kubeconfig,
        bool(options.get("disableQPSLimits", False)),
        kwok.has_gang_scheduling(kube_version or "", gates),
        kube_version,
        gates,
        addons.read_record(paths.addons_record),
        paths.workdir / kwok.AUDIT_LOG if options.get("kubeAuditPolicy") else None,
    )


def _saved_options(paths: ClusterPaths) -> dict[str, Any]:
    """The options kwokctl saved for the cluster ({} if there are none)."""
    try:
        return kwok.saved_options(paths.saved_config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _recorded_version(paths: ClusterPaths) -> str | None:
    """The supported Kubernetes version (`1.37.2`) an existing cluster runs; None if there is
    no cluster or it recorded none; DevClusterError if cliques cannot build that version."""
    recorded = _saved_options(paths).get("kubeVersion")
    if not recorded:
        return None
    try:
        return gomodules.kube_version(str(recorded))
    except ValueError as exc:
        raise DevClusterError(
            f"dev cluster '{paths.name}' runs Kubernetes {recorded} ({exc}); remove it with "
            f"`cliques dev-cluster down --name {paths.name}`, then `up` it again"
        ) from None


def info(
    name: str = kwok.DEFAULT_NAME, root: Path | None = None, binaries: Binaries | None = None
) -> ClusterInfo:
    """How to reach an existing cluster (it need not be running)."""
    paths = paths_for(name, root)
    if not paths.kubeconfig.is_file():
        raise DevClusterError(
            f"there is no dev cluster named '{name}'; start one with "
            f"`cliques dev-cluster up --name {name}`"
        )
    bins = binaries if binaries is not None else _installed_binaries_of(paths)
    server = kwok.apiserver_url(paths.kubeconfig.read_text(encoding="utf-8")) or ""
    return ClusterInfo(
        name=name,
        kubeconfig=paths.kubeconfig,
        server=server,
        kubectl=bins.kubectl,
        bin_dir=bins.kube_bin_dir,
        logs_dir=paths.logs_dir,
        kube_cache=paths.kube_cache,
    )


def _installed_binaries_of(paths: ClusterPaths) -> Binaries:
    """The cached binaries of the Kubernetes version an existing cluster runs."""
    version = _recorded_version(paths) or gomodules.kube_version()
    bins = installed_binaries(paths.root, version)
    if bins is None:
        raise DevClusterError(
            f"the dev-cluster binaries of Kubernetes v{version} are not built; run "
            f"`cliques dev-cluster build --kube-version {version}` or `up`"
        )
    return bins


# --- locking and kwokctl ------------------------------------------------------------------


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _kwokctl(
    paths: ClusterPaths, argv: list[str], what: str, *, timeout: float = 180.0, watch: bool = False
) -> None:
    """Run kwokctl with its output in the cluster's kwokctl.log.

    With `watch`, a component that dies while kwokctl still waits for the API server (it
    waits up to two minutes) ends the wait at once, with that component's log tail.
    """
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    env = kwok.kwokctl_environment(os.environ, paths.kwok_home)
    deadline = time.monotonic() + timeout
    with paths.kwokctl_log.open("a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(argv)}\n")
        log.flush()
        with subprocess.Popen(argv, stdout=log, stderr=log, env=env) as proc:
            try:
                while proc.poll() is None:
                    if watch:
                        _check_components(paths, started_only=True)
                    if time.monotonic() > deadline:
                        raise DevClusterError(
                            f"`kwokctl {what}` did not finish in {timeout:.0f}s; its log is "
                            f"{paths.kwokctl_log}\n{processes.tail(paths.kwokctl_log)}"
                        )
                    time.sleep(processes.POLL_SECONDS)
            except BaseException:
                proc.terminate()
                raise
    if proc.returncode != 0:
        raise DevClusterError(
            f"`kwokctl {what}` failed (exit status {proc.returncode}) for dev cluster "
            f"'{paths.name}'; its log is {paths.kwokctl_log}\n"
            + processes.tail(paths.kwokctl_log, 15)
        )


class _Kubectl:
    def __init__(self, kubectl: Path, paths: ClusterPaths) -> None:
        self.argv = [str(kubectl), "--kubeconfig", str(paths.kubeconfig)]
        self.env = dict(os.environ, KUBECACHEDIR=str(paths.kube_cache))

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [*self.argv, "--request-timeout=10s", *args],
                input=stdin,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=_KUBECTL_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, 124, "", "kubectl timed out")

    def json(self, *args: str) -> Any:
        done = self.run(*args, "-o", "json")
        if done.returncode != 0:
            return None
        return json.loads(done.stdout)


# --- up -----------------------------------------------------------------------------------


def up(
    name: str = kwok.DEFAULT_NAME,
    nodes: int | None = None,
    *,
    disable_qps_limits: bool = False,
    gang_scheduling: bool = True,
    kube_version: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    addons: Sequence[str] | None = None,
    reporter: Reporter | None = None,
    timeout: float = 120.0,
    root: Path | None = None,
    start_defaults: startmodel.Defaults | None = None,
    audit: bool = False,
) -> UpResult:
    """Start (or reuse) cluster `name` with `nodes` Ready fake nodes, and wait until usable.

    `nodes=None` means the default for a new cluster and "leave as is" for an existing one.
    `kube_version` (`1.37.2` or `v1.37.2`) picks the Kubernetes release of a new cluster;
    None means the existing cluster's, else `gomodules.kube_version()`. `gang_scheduling`
    turns on the gang gates of that release (`kwok.GANG_FEATURE_GATES`), `feature_gates`
    are set on top (`K=False` turns one off). An existing cluster keeps what it was made
    with: asked for another version or other gates, `up` raises DevClusterError naming the
    command that removes it; asked for neither, it reuses the cluster with a note.
    `addons` (None: a new cluster has none, an existing one keeps its own) start last; an
    existing cluster gets those it lacks if they can be added (`addons.plan`). Builds what
    is missing first (reported through `reporter`). `start_defaults` (None: a new cluster
    has none, an existing one keeps its own) are the nodes' pull and load seconds of the
    start model (`startmodel`); the `podstart` process is started unless it runs. `audit`
    makes a new cluster's API server log every write (`kwok.AUDIT_POLICY`) to
    `ClusterStatus.audit_log`; an existing cluster without one is reused with a note.
    """
    paths = paths_for(name, root)
    if nodes is not None:
        kwok.validate_nodes(nodes)
    want = _wanted(
        paths, kube_version, feature_gates, gang_scheduling, disable_qps_limits, addons, audit
    )
    before = status(name, paths.root)
    if before.state != "absent":  # refuse before building what will not be used
        _reuse_notes(before, want.version, want.gates, gang_scheduling, want.explicit)
        _addon_plan(before, want.addons)
        _check_start_defaults(paths, start_defaults)
    binaries = ensure_binaries(reporter, root=paths.root, kube_version=want.version)
    builds = addons_up.ensure_built(_addons_after(before, want.addons), reporter, paths.root)
    started = time.monotonic()
    with _locked(paths.lock_file):
        if before.state == "absent":
            _record_start_defaults(paths, start_defaults or startmodel.Defaults())
        action, notes = _start_or_create(paths, binaries, builds, want)
        deadline = started + timeout
        kubectl = _Kubectl(binaries.kubectl, paths)
        _wait_for_apiserver(paths, kubectl, deadline, timeout)
        if action == "created":
            _restart_apiserver(paths, binaries, kubectl, deadline, timeout)
        if nodes is None and action == "created":
            nodes = kwok.DEFAULT_NODES
        node_names = _scale_nodes(kubectl, nodes, paths)
        _wait_until_usable(paths, kubectl, node_names, deadline, timeout)
        _start_podstart(paths, kubectl)
        live = _recorded_builds(paths, builds)
        alive = functools.partial(_running, paths)
        addons_up.start(paths, kubectl, live, alive, timeout=timeout, reporter=reporter)
    made = status(name, paths.root)
    return UpResult(
        info(name, paths.root, binaries),
        action,
        time.monotonic() - started,
        node_names,
        notes,
        made.kube_version or binaries.kube_version,
        made.feature_gates,
        made.addons,
    )


@dataclass(frozen=True)
class _Wanted:
    """What `up` was asked for, resolved: a new cluster's version, gates and add-ons."""

    version: str
    gates: Mapping[str, bool]
    feature_gates: Mapping[str, bool] | None
    gang_scheduling: bool
    disable_qps_limits: bool
    explicit: bool  # a version or gates were asked for
    addons: tuple[str, ...] | None  # None: not asked for
    audit: bool = False  # an audit log of writes (a new cluster only)


def _wanted(
    paths: ClusterPaths,
    kube_version: str | None,
    feature_gates: Mapping[str, bool] | None,
    gang_scheduling: bool,
    disable_qps_limits: bool,
    addon_names: Sequence[str] | None,
    audit: bool = False,
) -> _Wanted:
    if kube_version is not None:
        version = gomodules.kube_version(kube_version)
    else:
        version = _recorded_version(paths) or gomodules.kube_version()
    return _Wanted(
        version=version,
        gates=kwok.feature_gates(version, gang_scheduling=gang_scheduling, overrides=feature_gates),
        feature_gates=feature_gates,
        gang_scheduling=gang_scheduling,
        disable_qps_limits=disable_qps_limits,
        explicit=kube_version is not None or feature_gates is not None,
        addons=None if addon_names is None else addons.parse(addon_names),
        audit=audit,
    )


def _start_or_create(
    paths: ClusterPaths,
    binaries: Binaries,
    builds: Mapping[str, ModuleBuild],
    want: _Wanted,
) -> tuple[Literal["reused", "restarted", "created"], list[str]]:
    """Reuse, restart or create the cluster (under its lock); the action and the notes."""
    current = status(paths.name, paths.root)
    notes: list[str] = []
    if current.state != "absent":
        notes += _reuse_notes(
            current, want.version, want.gates, want.gang_scheduling, want.explicit
        )
        plan = _addon_plan(current, want.addons)
        notes += plan.notes()
        if plan.add:
            _record_addons(paths, [*current.addons, *plan.add])
    if current.state != "absent" and want.audit and current.audit_log is None:
        notes.append(
            "the existing cluster keeps no audit log (only a new one can); `down` it first "
            "to have one"
        )
    if current.state == "running":
        notes += _running_notes(current, want)
        return "reused", notes + _stale_stages(paths)
    if current.state in ("stopped", "degraded"):
        # kwokctl starts a component unless its pid file names a live process; a dead
        # one may linger as a zombie where nothing reaps it, so drop stale pid files.
        for component in current.components:
            if not component.running:
                paths.pid_file(component.name).unlink(missing_ok=True)
        _kwokctl(
            paths, kwok.start_command(binaries.kwokctl, paths.name), "start cluster", watch=True
        )
        return "restarted", notes + _stale_stages(paths)
    _create(paths, binaries, want, builds)
    return "created", notes + kwok.gate_notes(want.version, want.gates)


def _running_notes(current: ClusterStatus, want: _Wanted) -> list[str]:
    """What a running cluster, reused as it is, has that differs from what was asked."""
    notes = []
    if current.disable_qps_limits != want.disable_qps_limits:
        notes.append(
            "QPS limits are "
            + ("off" if current.disable_qps_limits else "on")
            + " in the running cluster; `down` it first to change that"
        )
    if current.gang_scheduling != want.gang_scheduling:
        notes.append(
            "gang scheduling (Workload API) is "
            + ("on" if current.gang_scheduling else "off")
            + " in the running cluster; `down` it first to change that"
        )
    return notes


def _addon_plan(current: ClusterStatus, wanted: Sequence[str] | None) -> addons.Plan:
    """What to do with the add-ons of an existing cluster; DevClusterError for one asked for
    that only a new cluster can have."""
    plan = addons.plan(current.addons, wanted)
    if plan.refused:
        raise DevClusterError(plan.refusal(current.name))
    return plan


def _addons_after(current: ClusterStatus, wanted: Sequence[str] | None) -> tuple[str, ...]:
    """The add-ons the cluster will have once `up` is done (those to build)."""
    if current.state == "absent":
        return addons.parse(wanted or ())
    return addons.parse([*current.addons, *addons.plan(current.addons, wanted).add])


def _record_addons(paths: ClusterPaths, names: Sequence[str]) -> None:
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    paths.addons_record.write_text(addons.record_text(names), encoding="utf-8")


def _recorded_builds(
    paths: ClusterPaths, builds: Mapping[str, ModuleBuild]
) -> dict[str, ModuleBuild]:
    """The builds of the add-ons the cluster has now (another `up` may have added one
    while this one waited for the lock: it is built by then)."""
    recorded = addons.read_record(paths.addons_record)
    missing = [n for n in recorded if n not in builds]
    found = {**builds, **addons_up.ensure_built(missing, None, paths.root)}
    return {n: found[n] for n in recorded}


def _running(paths: ClusterPaths, component: str) -> bool:
    return any(c.running for c in _component_states(paths) if c.name == component)


def _reuse_notes(
    current: ClusterStatus,
    version: str,
    gates: Mapping[str, bool],
    gang_scheduling: bool,
    explicit: bool,
) -> list[str]:
    """What keeps an existing cluster from being what `up` was asked for: DevClusterError if
    the version or gates were asked for explicitly, else notes (the cluster is reused)."""
    have = (current.kube_version or f"v{version}").removeprefix("v")
    if have != version:
        differs = f"runs Kubernetes v{have}, not v{version}"
    elif dict(current.feature_gates) != dict(gates):
        differs = f"has the feature gates {_gate_difference(current.feature_gates, gates)}"
    else:
        return []
    if explicit:
        raise DevClusterError(
            f"dev cluster '{current.name}' {differs}, and `up` does not recreate an existing "
            f"cluster: remove it with `cliques dev-cluster down --name {current.name}` (which "
            "deletes everything in it) and run `up` again, or choose another --name"
        )
    if current.state == "running" and current.gang_scheduling != gang_scheduling:
        return []  # the note on gang scheduling says it
    return [f"the existing cluster {differs}; `down` it first to change that"]


def _gate_difference(have: Mapping[str, bool], want: Mapping[str, bool]) -> str:
    """`A=true,B unset, not A=false,B=true`: only the gates whose settings differ."""
    names = [n for n in dict.fromkeys([*have, *want]) if have.get(n) != want.get(n)]

    def side(gates: Mapping[str, bool]) -> str:
        return ",".join(
            f"{n}={str(gates[n]).lower()}" if n in gates else f"{n} unset" for n in names
        )

    return f"{side(have)}, not {side(want)}"


def _stale_stages(paths: ClusterPaths) -> list[str]:
    """A note for a cluster whose KWOK stages predate some of ours (`kwok.stage_changes`)."""
    try:
        missing = kwok.stage_changes(paths.saved_config.read_text(encoding="utf-8"))
    except OSError:
        return []
    if not missing:
        return []
    return [
        "the running cluster's KWOK stages were made by an older version, without the "
        + " and the ".join(missing)
        + "; `down` it first to get them"
    ]


def _create(
    paths: ClusterPaths, binaries: Binaries, want: _Wanted, builds: Mapping[str, ModuleBuild]
) -> None:
    _record_addons(paths, list(builds))  # first: a failed creation is removed with them
    policy = None
    if want.audit:  # kwokctl copies it into the cluster's work directory
        policy = paths.state_dir / "audit-policy.json"
        policy.write_text(json.dumps(kwok.AUDIT_POLICY, indent=2) + "\n", encoding="utf-8")
    config = _configuration(binaries, want, builds, policy)
    every_pod = startmodel.read_record(paths.state_dir / startmodel.RECORD_FILE).every_pod
    stage_docs = kwok.stages(module_source(gomodules.KWOK), every_pod=every_pod)
    paths.kwokctl_config.write_text(kwok.config_text(config, stage_docs), encoding="utf-8")
    # kwokctl picks free ports while it creates; one creation at a time keeps two clusters
    # from picking the same ones, and holding the ports other clusters were given keeps a
    # new one from taking those of a component that is down (it would not start again).
    with _locked(paths.create_lock_file), _holding_ports_of_others(paths):
        _kwokctl(
            paths,
            kwok.create_command(binaries.kwokctl, paths.name, paths.kwokctl_config, dry_run=False),
            "create cluster",
            watch=True,
        )


@contextmanager
def _holding_ports_of_others(paths: ClusterPaths) -> Iterator[list[int]]:
    """Listen, for the block, on each port another cluster of this cache was given that is
    free right now (its component is down: stopped, crashed, or between the restarts of a
    chaos run). kwokctl gives a new cluster the highest free ports below 32767, which are
    exactly those; the component that owns one could then never start again ("bind:
    address already in use"). Yields the ports held."""
    held: list[socket.socket] = []
    try:
        for other in list_clusters(paths.root):
            if other == paths.name:
                continue
            try:
                text = paths_for(other, paths.root).saved_config.read_text(encoding="utf-8")
                ports = kwok.saved_ports(text)
            except (OSError, ValueError):
                continue
            for port in sorted(ports):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    sock.bind(("", port))  # every address: kwokctl tries both it and loopback
                    sock.listen(1)
                except OSError:  # in use, by its own component as it should be
                    sock.close()
                    continue
                held.append(sock)
        yield [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def _configuration(
    binaries: Binaries,
    want: _Wanted,
    builds: Mapping[str, ModuleBuild],
    audit_policy: Path | None = None,
) -> dict[str, Any]:
    """The KwokctlConfiguration of a new cluster, with the add-ons kwokctl runs (and its
    audit policy's file, `audit_policy`, when it keeps an audit log)."""
    config = kwok.kwokctl_configuration(
        binaries,
        disable_qps_limits=want.disable_qps_limits,
        gang_scheduling=want.gang_scheduling,
        gate_overrides=want.feature_gates,
        audit_policy=audit_policy,
    )
    return addons_up.kwokctl_config(config, builds)


def dry_run(
    name: str = kwok.DEFAULT_NAME,
    *,
    disable_qps_limits: bool = False,
    gang_scheduling: bool = True,
    kube_version: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    addons: Sequence[str] | None = None,
    reporter: Reporter | None = None,
    root: Path | None = None,
) -> str:
    """kwokctl's dry run of creating cluster `name` (of `kube_version`, None:
    `gomodules.kube_version()`, with `addons`), in a scratch work dir (nothing stays)."""
    paths = paths_for(name, root)
    version = gomodules.kube_version(kube_version)  # not the existing cluster's
    want = _wanted(paths, version, feature_gates, gang_scheduling, disable_qps_limits, addons)
    binaries = ensure_binaries(reporter, root=paths.root, kube_version=want.version)
    builds = addons_up.ensure_built(want.addons or (), reporter, paths.root)
    with tempfile.TemporaryDirectory(prefix="cliques-dry-run-") as scratch:
        config = Path(scratch) / "kwokctl.json"
        config.write_text(json.dumps(_configuration(binaries, want, builds)), encoding="utf-8")
        done = subprocess.run(
            kwok.create_command(binaries.kwokctl, name, config, dry_run=True),
            capture_output=True,
            text=True,
            env=kwok.kwokctl_environment(os.environ, Path(scratch) / "kwok"),
            timeout=120,
            check=False,
        )
    if done.returncode != 0:
        raise DevClusterError(f"kwokctl --dry-run failed:\n{done.stderr[-4000:]}")
    return done.stdout


def _check_components(paths: ClusterPaths, *, started_only: bool = False) -> None:
    """Fail with the log tail of the first component that is not running (`started_only`:
    of those kwokctl has started so far, that is, that have a pid file). The processes of
    add-ons that cliques starts are not among them: they start once the cluster is usable."""
    for component in _component_states(paths, host_addons=False):
        if not component.running and (component.pid is not None or not started_only):
            raise ComponentError(
                paths.name, component.name, "exited", component.log, processes.tail(component.log)
            )


def _timed_out(paths: ClusterPaths, component: str, what: str, timeout: float) -> ComponentError:
    log = paths.component_log(component)
    return ComponentError(
        paths.name,
        component,
        f"did not come up within {timeout:.0f}s (still waiting for {what})",
        log,
        processes.tail(log),
    )


def _wait_for_apiserver(
    paths: ClusterPaths, kubectl: _Kubectl, deadline: float, timeout: float
) -> None:
    while True:
        _check_components(paths)
        done = kubectl.run("get", "--raw", "/readyz")
        if done.returncode == 0 and done.stdout.strip() == "ok":
            return
        if time.monotonic() > deadline:
            raise _timed_out(paths, "kube-apiserver", "/readyz to answer ok", timeout)
        time.sleep(processes.POLL_SECONDS)


def _restart_apiserver(
    paths: ClusterPaths, binaries: Binaries, kubectl: _Kubectl, deadline: float, timeout: float
) -> None:
    """Restart a brand-new API server once, so that it behaves like one that has run a while.

    The first API server on an empty etcd fills its watch caches from resourceVersion ~1 and
    so replays everything to a watch resumed from an ancient resourceVersion. Restarted, its
    caches start at the current resourceVersion, and such a watch gets 410 Gone, as on any
    real cluster: informers' relist paths are exercised for real. SIGKILL, because a graceful
    shutdown waits a minute for the other components' watches; etcd keeps the state.
    """
    apiserver = next(c for c in _component_states(paths) if c.name == "kube-apiserver")
    if apiserver.pid is not None and apiserver.running:
        processes.send(apiserver.pid, signal.SIGKILL)
        while any(c.running for c in _component_states(paths) if c.name == "kube-apiserver"):
            if time.monotonic() > deadline:
                raise _timed_out(paths, "kube-apiserver", "its restart", timeout)
            time.sleep(processes.POLL_SECONDS)
    paths.pid_file("kube-apiserver").unlink(missing_ok=True)
    _kwokctl(paths, kwok.start_command(binaries.kwokctl, paths.name), "start cluster", watch=True)
    _wait_for_apiserver(paths, kubectl, deadline, timeout)


def _scale_nodes(kubectl: _Kubectl, wanted: int | None, paths: ClusterPaths) -> list[str]:
    """Make our fake nodes exactly kwok-node-0..wanted-1 (None: keep what is there)."""
    listed = kubectl.json("get", "nodes", "-l", kwok.NODE_LABEL)
    if listed is None:
        raise DevClusterError(f"cannot list the nodes of dev cluster '{paths.name}'")
    existing = [item["metadata"]["name"] for item in listed.get("items", [])]
    if wanted is None:
        return sorted(existing, key=lambda n: kwok.node_index(n) or 0)
    create, delete = kwok.scale_plan(existing, wanted)
    if create:
        manifest = json.dumps(kwok.node_list(create))
        done = kubectl.run("create", "-f", "-", stdin=manifest)
        if done.returncode != 0:
            raise DevClusterError(f"creating the fake nodes failed: {done.stderr.strip()}")
    if delete:
        done = kubectl.run("delete", "node", "--wait=false", *delete)
        if done.returncode != 0:
            raise DevClusterError(f"deleting surplus fake nodes failed: {done.stderr.strip()}")
    return [kwok.node_name(i) for i in range(wanted)]


def _pending(kubectl: _Kubectl, node_names: list[str]) -> tuple[str, str] | None:
    """The first readiness condition not met yet, as (what, responsible component)."""
    leases = kubectl.json("get", "leases", "-n", "kube-system")
    holders = {
        item["metadata"]["name"]: item.get("spec", {}).get("holderIdentity")
        for item in (leases or {}).get("items", [])
    }
    for lease, component in _LEASES.items():
        if not holders.get(lease):
            return f"the {lease} leader lease", component
    if kubectl.run("get", "serviceaccount", "default", "-n", "default").returncode != 0:
        return "the default ServiceAccount", "kube-controller-manager"
    if node_names:
        listed = kubectl.json("get", "nodes", "-l", kwok.NODE_LABEL)
        ready = {
            item["metadata"]["name"]
            for item in (listed or {}).get("items", [])
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (item.get("status") or {}).get("conditions") or []
            )
        }
        missing = [n for n in node_names if n not in ready]
        if missing:
            return f"node(s) {', '.join(missing)} to be Ready", "kwok-controller"
    return None


def _wait_until_usable(
    paths: ClusterPaths,
    kubectl: _Kubectl,
    node_names: list[str],
    deadline: float,
    timeout: float,
) -> None:
    while True:
        _check_components(paths)
        pending = _pending(kubectl, node_names)
        if pending is None:
            return
        if time.monotonic() > deadline:
            what, component = pending
            raise _timed_out(paths, component, what, timeout)
        time.sleep(processes.POLL_SECONDS)


# --- down ---------------------------------------------------------------------------------


def down(
    name: str = kwok.DEFAULT_NAME, *, timeout: float = 30.0, root: Path | None = None
) -> DownResult:
    """Stop cluster `name` and remove every file and directory `up` made for it."""
    paths = paths_for(name, root)
    existed = paths.workdir.exists() or paths.state_dir.exists()
    stopped: list[int] = []
    killed: list[int] = []
    with _locked(paths.lock_file):
        running = {c.pid: c.name for c in _component_states(paths) if c.running and c.pid}
        stopped = sorted(running)
        removed = [p for p in (paths.workdir, paths.state_dir) if p.exists()]
        kwokctl = _kwokctl_binary(paths.root)
        if paths.saved_config.is_file() and kwokctl is not None:
            # If kwokctl fails, the processes are stopped and the files removed below anyway.
            with suppress(DevClusterError):
                _kwokctl(
                    paths,
                    kwok.delete_command(kwokctl, name, paths.kubeconfig),
                    "delete cluster",
                    timeout=60,
                )
        killed = processes.stop(
            running, lambda proc: _is_ours(proc, paths, running[proc.pid]), timeout
        )
        for directory in removed:
            shutil.rmtree(directory, ignore_errors=True)
    paths.lock_file.unlink(missing_ok=True)
    removed.extend(_remove_if_empty(paths))
    return DownResult(existed, stopped, killed, removed)


def _kwokctl_binary(root: Path) -> Path | None:
    """kwokctl, if kwok is built (whatever Kubernetes versions are)."""
    kwok_build = installed_tool(gomodules.KWOK, root)
    return kwok_build.binary("kwokctl") if kwok_build is not None else None


def _remove_if_empty(paths: ClusterPaths) -> list[Path]:
    """Drop the shared directories once the last cluster is gone."""
    removed: list[Path] = []
    clusters = paths.kwok_home / "clusters"
    if paths.kwok_home.is_dir() and not any(clusters.glob("*")):
        shutil.rmtree(paths.kwok_home, ignore_errors=True)
        removed.append(paths.kwok_home)
    leftovers = [p for p in paths.run_dir.glob("*") if p.name != paths.create_lock_file.name]
    if paths.run_dir.is_dir() and not leftovers:
        shutil.rmtree(paths.run_dir, ignore_errors=True)
        removed.append(paths.run_dir)
    return removed


def restart_apiserver(name: str, *, timeout: float = 120.0, root: Path | None = None) -> float:
    """Kill the API server of running cluster `name` (SIGKILL: no graceful shutdown, as in a
    crash) and start it again, waiting until it answers /readyz; the seconds it took. etcd
    and the other components keep running, so the cluster's state is kept."""
    paths = paths_for(name, root)
    binaries = _installed_binaries_of(paths)
    started = time.monotonic()
    with _locked(paths.lock_file):
        kubectl = _Kubectl(binaries.kubectl, paths)
        _restart_apiserver(paths, binaries, kubectl, started + timeout, timeout)
    return time.monotonic() - started


def restart_component(
    name: str, component: str, *, timeout: float = 120.0, root: Path | None = None
) -> float:
    """Kill one control-plane component of running cluster `name` (SIGKILL, as in a crash:
    kube-scheduler or kube-controller-manager, whose state is all in memory) and start it
    again with the cluster's own start command; the seconds until it runs again. The API
    server has `restart_apiserver`, which also waits until it answers."""
    if component == "kube-apiserver":
        return restart_apiserver(name, timeout=timeout, root=root)
    paths = paths_for(name, root)
    binaries = _installed_binaries_of(paths)
    started = time.monotonic()
    deadline = started + timeout
    with _locked(paths.lock_file):
        states = {c.name: c for c in _component_states(paths)}
        found = states.get(component)
        if found is None:
            raise DevClusterError(f"dev cluster '{name}' has no component {component!r}")
        if found.pid is not None and found.running:
            processes.send(found.pid, signal.SIGKILL)
            while _running(paths, component):
                if time.monotonic() > deadline:
                    raise _timed_out(paths, component, "its restart", timeout)
                time.sleep(processes.POLL_SECONDS)
        paths.pid_file(component).unlink(missing_ok=True)
        _kwokctl(
            paths, kwok.start_command(binaries.kwokctl, paths.name), "start cluster", watch=True
        )
        while not _running(paths, component):
            if time.monotonic() > deadline:
                raise _timed_out(paths, component, "its restart", timeout)
            time.sleep(processes.POLL_SECONDS)
    return time.monotonic() - started


@contextmanager
def paused(name: str, component: str, *, root: Path | None = None) -> Iterator[None]:
    """Hold one control-plane component of running cluster `name` still for the block
    (SIGSTOP: it keeps its state and its connections but acts on nothing, like a
    kube-controller-manager whose work queues lag far behind) and let it go on after
    (SIGCONT). Keep the block short: a component that takes part in leader election and
    misses its renew deadline (10 s by default) exits when it goes on."""
    if component == "kube-apiserver":
        raise DevClusterError("the API server is not paused: use restart_apiserver")
    states = {c.name: c for c in _component_states(paths_for(name, root))}
    found = states.get(component)
    if found is None or found.pid is None or not found.running:
        raise DevClusterError(f"dev cluster '{name}' has no running component {component!r}")
    processes.send(found.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        processes.send(found.pid, signal.SIGCONT)


# --- the start model's process ------------------------------------------------------------


def _podstart_components(paths: ClusterPaths) -> tuple[str, ...]:
    """`podstart`, for a cluster that ever ran it (a cluster made by an older cliques gets
    it at its next `up`, and is not called degraded before)."""
    return (startmodel.COMPONENT,) if paths.pid_file(startmodel.COMPONENT).exists() else ()


def _start_defaults_file(paths: ClusterPaths) -> Path:
    return paths.state_dir / startmodel.RECORD_FILE


def _record_start_defaults(paths: ClusterPaths, defaults: startmodel.Defaults) -> None:
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    _start_defaults_file(paths).write_text(startmodel.record_text(defaults), encoding="utf-8")


def _check_start_defaults(paths: ClusterPaths, wanted: startmodel.Defaults | None) -> None:
    """An existing cluster keeps the node defaults it was created with (they chose its
    stages): other ones asked for are refused with the command that removes it."""
    have = startmodel.read_record(_start_defaults_file(paths))
    if wanted is not None and wanted != have:
        raise DevClusterError(
            f"dev cluster '{paths.name}' was created with --pull-seconds {have.pull:g} "
            f"--load-seconds {have.load:g}, not {wanted.pull:g} and {wanted.load:g}: remove "
            f"it with `cliques dev-cluster down --name {paths.name}` (which deletes everything "
            "in it) and run `up` again, or choose another --name"
        )


def _start_podstart(paths: ClusterPaths, kubectl: _Kubectl) -> None:
    """Write the node defaults on our nodes (if the cluster has any) and start `podstart`
    unless it runs."""
    defaults = startmodel.read_record(_start_defaults_file(paths))
    if defaults.every_pod:
        pairs = [f"{k}={v}" for k, v in defaults.node_annotations().items()]
        done = kubectl.run("annotate", "nodes", "-l", kwok.NODE_LABEL, "--overwrite", *pairs)
        if done.returncode != 0:
            raise DevClusterError(f"annotating the fake nodes failed: {done.stderr.strip()}")
    if _running(paths, startmodel.COMPONENT):
        return
    argv = [
        sys.executable,
        "-m",
        "cliques_lab.devcluster.podstart",
        "--kubeconfig",
        str(paths.kubeconfig),
        *(["--every-pod"] if defaults.every_pod else []),
    ]
    # Named in its argv (`_is_ours`): `status` and `down` find it by its pid file.
    argv.append(f"--component={startmodel.COMPONENT}")
    log = paths.component_log(startmodel.COMPONENT)
    processes.spawn(argv, log, paths.pid_file(startmodel.COMPONENT), env=dict(os.environ))
