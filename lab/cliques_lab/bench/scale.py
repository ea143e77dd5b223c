"""`cliques bench scale`: one workload, several operators, one cluster, one run.

For each operator under test, in turn, in a namespace of its own: start it as a process,
apply the workload (CliqueSets; LeaderWorkerSets for LWS, with the same pod templates), and
time each phase from its first API call:

- deploy: pods-created, pods-ready, available (cumulative from the apply);
- steady-state: bump an annotation that changes nothing, measure for `--steady` seconds;
- rolling-update: change the image, until every pod runs it and every set is Available;
- in-place-update (cliques only): change the image again with `updateStrategy.inPlace:
  IfPossible`, until every pod reports the new image running and every set is Available
  (want no pod replaced);
- reorder-apply: apply the same desired state re-ordered and re-spelled (must replace 0);
- drain, node-loss (opt-in, `--with-phases`; `disruption_run`): nodes drained or lost while
  the workload serves, whole Ready gangs sampled every second;
- delete: delete the CliqueSets, until every pod is gone.

Per phase: wall time, operator CPU seconds (its whole process tree, from /proc), peak RSS,
API requests by verb and code from the API server's own counters, spurious creates and
deletes (judged from a watch of the namespace's pods), and pods replaced. On a dev
cluster also the control plane's CPU by component, and the operator's CPU plus the
controller-manager's (`cpu_operator_and_kcm`): an operator that makes StatefulSets, as
LWS does, leaves the pods' creation to the controller-manager.

The workload's writes (apply, the annotation, the deletes) go through kubernetes-asyncio
(`loadgen`), as a user's tooling would send them; the benchmark's reads and its own
bookkeeping (namespaces, the observer's watches, metrics) use the project's client.

A peer with more to set up than a process (LWS: its CRDs, webhook certificate and
webhook configurations) plugs in through `Peer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shlex
import subprocess
import sys
import time
import traceback
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.kubeconfig import ConfigError
from cliques.kube.resources import CLIQUESETS, NAMESPACES, PODS, Resource
from cliques_lab.bench import (
    apimetrics,
    children,
    crash,
    disruption,
    disruption_run,
    kcmmetrics,
    kinds,
    opmetrics,
    procstats,
    workload,
)
from cliques_lab.bench.kinds import WorkloadKind
from cliques_lab.bench.loadgen import LoadGenerator
from cliques_lab.bench.observer import Observer

#: The field manager of every write the benchmark makes.
FIELD_MANAGER = "cliques-bench"


class Peer(Protocol):
    """What an operator needs around its process, beyond `argv` (LWS's CRDs, certificate and
    webhooks). Each hook gets the benchmark's client and the run's namespace."""

    async def prepare(self, client: KubeClient, namespace: str, port: int) -> dict[str, str]:
        """Before the process starts (`port` is its {metrics_port}): set up, and return
        more {placeholders} for `argv`."""
        ...

    async def started(self, client: KubeClient, namespace: str) -> None:
        """After the process is ready, before the first phase (e.g. register webhooks)."""
        ...

    async def stopped(self, client: KubeClient, namespace: str) -> None:
        """After the process stopped, also after a failure: undo what `prepare` and
        `started` did outside the namespace."""
        ...


@dataclass
class OperatorSpec:
    name: str
    argv: list[str]  # may hold {kubeconfig}, {namespace}, {metrics_port}, {python}
    readyz: bool = False  # serves /readyz on {metrics_port}
    scrape_metrics: bool = False  # serves cliques' /metrics on {metrics_port}
    kind: WorkloadKind = kinds.CLIQUESET
    peer: Peer | None = None
    #: how the operator was configured (client QPS, ...), recorded in the results
    settings: dict[str, Any] = field(default_factory=dict)
    #: it updates pods in place (`updateStrategy.inPlace`): the in-place-update phase runs
    in_place: bool = False
    #: more environment for its process (another cliques build's PYTHONPATH)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class PhaseResult:
    phase: str
    wall: float
    cpu: float
    rss_peak_mib: float
    api: dict[str, int]
    spurious_creates: int = 0
    spurious_deletes: int = 0
    replaced: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    completed: bool = True
    #: seconds from the phase's start until every gang was whole and Ready on the phase's
    #: template (every pod it should have Ready and running the phase's image); None when
    #: that did not happen within the phase (or does not apply: delete)
    time_to_serve: float | None = None
    #: the node phases (`disruption`): whole Ready gangs sampled every second, as
    #: (seconds from the phase's start, whole gangs); the moments of the phase's actions
    #: (seconds, what); the nodes it disrupted; what went wrong on the way
    samples: list[tuple[float, int]] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class OperatorRun:
    operator: str
    workload_kind: str = ""
    pod_template_hash: str = ""  # kinds.WorkloadKind.template_hash of the deployed workload
    settings: dict[str, Any] = field(default_factory=dict)
    phases: list[PhaseResult] = field(default_factory=list)
    cpu_timeline: list[tuple[float, float]] = field(default_factory=list)  # (t, cpu s)
    rss_by_process: dict[str, float] = field(default_factory=dict)  # name -> peak MiB
    error: str = ""
    log: str = ""
    #: spec.subdomainPolicy of the CliqueSets of this run ("": left out)
    subdomain_policy: str = ""


def cliques_operator(workers: int, extra: list[str] | None = None) -> OperatorSpec:
    """cliques' operator on `workers` workers, with `extra` operator options (recorded)."""
    return OperatorSpec(
        f"cliques-w{workers}",
        [
            "{python}",
            "-m",
            "cliques",
            "operator",
            "--workers",
            str(workers),
            "--kubeconfig",
            "{kubeconfig}",
            "--namespace",
            "{namespace}",
            "--metrics-port",
            "{metrics_port}",
            "--qps",
            "0",
            "--log-level",
            "warning",
            *(extra or ()),
        ],
        readyz=True,
        scrape_metrics=True,
        settings={"options": " ".join(extra)} if extra else {},
        in_place=True,
    )


def kopf_operator(python: str, peer: Path) -> OperatorSpec:
    """The kopf peer: `peer` is its directory (bench/peers/kopf in the source tree), `python`
    the interpreter of its own virtualenv."""
    return OperatorSpec(
        "kopf",
        [
            python,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "--quiet",
            "--namespace",
            "{namespace}",
            str(peer.resolve() / "operator.py"),
        ],
    )


def cliques_from(text: str, extra: list[str] | None = None) -> OperatorSpec:
    """`NAME=DIR`: cliques-w1 as another source tree DIR builds it (its `python/` put first
    on the operator's PYTHONPATH), named NAME: two versions of cliques measured in one
    interleaved run, on one control plane. DIR's package needs its native core beside it
    (`cliques/_core*.so`: built there, or copied from a build of the same Rust sources)."""
    name, sep, where = text.partition("=")
    if not sep or not name or not where:
        raise ValueError(f"--cliques-from {text!r}: expected NAME=DIR")
    root = Path(where).expanduser().resolve()
    source = root / "python" if (root / "python" / "cliques").is_dir() else root
    if not (source / "cliques" / "__main__.py").is_file():
        raise ValueError(f"--cliques-from {text!r}: no cliques package in {root}/python or {root}")
    if not any((source / "cliques").glob("_core*.so")):
        raise ValueError(
            f"--cliques-from {text!r}: {source / 'cliques'} has no native core (_core*.so): "
            "build it there (maturin develop) or copy one built from the same Rust sources"
        )
    spec = cliques_operator(1, extra)
    spec.name = name
    spec.env = {"PYTHONPATH": str(source)}
    spec.settings = {**spec.settings, "source": str(root)}
    return spec


def custom_operator(text: str) -> OperatorSpec:
    name, sep, cmd = text.partition("=")
    if not sep or not name or not cmd:
        raise ValueError(f"--operator-cmd {text!r}: expected NAME=COMMAND")
    return OperatorSpec(name, shlex.split(cmd))


class Sampler:
    """Samples the operator tree's CPU and RSS every `period` seconds in a thread-free way."""

    def __init__(self, pid: int, period: float = 0.5) -> None:
        self.meter = procstats.TreeMeter(pid)
        self.period = period
        self.t0 = time.monotonic()
        self.timeline: list[tuple[float, float]] = []
        self.rss_peak_total = 0
        self.rss_peak: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> float:
        procs = self.meter.sample()
        cpu = sum(s.cpu_seconds for s in self.meter._last.values())
        total = sum(s.rss_bytes for s in procs)
        self.rss_peak_total = max(self.rss_peak_total, total)
        for s in procs:
            self.rss_peak[s.name] = max(self.rss_peak.get(s.name, 0), s.rss_bytes)
        self.timeline.append((time.monotonic() - self.t0, cpu))
        return cpu

    def reset_peak(self) -> None:
        self.rss_peak_total = 0

    async def _run(self) -> None:
        while True:
            await asyncio.to_thread(self.sample)
            await asyncio.sleep(self.period)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


@dataclass
class Settings:
    kubeconfig: str
    shape: workload.Shape
    steady: float = 30.0
    timeout: float = 600.0
    log_dir: Path = Path("/tmp")
    gang_scheduling: str = workload.DEFAULT_GANG_SCHEDULING
    #: spec.subdomainPolicy of cliques' CliqueSets, "" to leave it out
    subdomain_policy: str = ""
    #: spec.podReadiness of cliques' CliqueSets (Pod, Gang), "" to leave it out
    pod_readiness: str = ""
    #: component name -> pid of the dev cluster's control plane (etcd, kube-apiserver,
    #: kube-controller-manager, kube-scheduler, kwok-controller), whose CPU every phase
    #: records beside the operator's; empty for a cluster given by --kubeconfig
    control_plane: dict[str, int] = field(default_factory=dict)
    #: phases left out (a subset of report.SKIPPABLE): the large shapes of the cost curve
    #: measure deploy and steady state and leave the long rolling update out
    skip: frozenset[str] = frozenset()
    #: the dev cluster's start model in every pod template: seconds of an image pull (once
    #: per node and image) and of a container's load (every start); None: left out
    pull_seconds: float | None = None
    load_seconds: float | None = None
    #: the node phases to run after the others, before the delete (`disruption.PHASES`)
    node_phases: tuple[str, ...] = ()
    #: node-loss: seconds from the power-off to the out-of-service taint
    out_of_service_after: float = 120.0
    #: the cluster's kubectl, for the node phases
    kubectl: str = "kubectl"
    #: the gang-crash phase (`crash`): the leaders of this many gangs of every set crash;
    #: 0 leaves the phase out
    crash_gangs: int = 0


Progress = Callable[[str, int, int], None]  # (phase, done, total)


class ClusterError(Exception):
    """The cluster cannot run the benchmark (unreachable, bad kubeconfig, no CRDs)."""


async def preflight(kubeconfig: str, api: Resource = CLIQUESETS) -> str:
    """Check, before any operator starts, that the cluster answers and serves the cliques
    API (`api`'s group and version); return the API server's address. Raises ClusterError
    with what to do."""
    try:
        client = await KubeClient.connect(kubeconfig, qps=0, field_manager=FIELD_MANAGER)
    except ConfigError as exc:
        raise ClusterError(str(exc)) from None
    try:
        await client.get_path("/version")
        try:
            await client.get_path(f"/apis/{api.group}/{api.version}")
        except errors.NotFound:
            raise ClusterError(
                f"the API server at {client.host} does not serve "
                f"{api.group}/{api.version}: install the CRDs first "
                "(kubectl apply --server-side -f deploy/crds/)"
            ) from None
    except errors.API_FAILURES as exc:
        raise ClusterError(f"the API server at {client.host} does not answer: {exc}") from None
    finally:
        await client.close()
    return client.host


async def run_operator(
    spec: OperatorSpec, cfg: Settings, progress: Progress, result: OperatorRun | None = None
) -> OperatorRun:
    """One operator through every phase, in a namespace of its own. Failures end up in
    `result.error`; a cancellation (the benchmark interrupted) still stops the operator's
    process group, deletes the namespace and keeps the phases measured so far in `result`
    before it propagates."""
    result = result if result is not None else OperatorRun(spec.name)
    result.workload_kind = spec.kind.name
    result.pod_template_hash = spec.kind.template_hash(
        cfg.shape, cfg.gang_scheduling, cfg.pull_seconds, cfg.load_seconds
    )
    result.settings = dict(spec.settings)
    client = await KubeClient.connect(cfg.kubeconfig, qps=0, field_manager=FIELD_MANAGER)
    ns = f"bench-{spec.name}-{int(time.time()) % 100000}"
    log_path = cfg.log_dir / f"{ns}.log"
    result.log = str(log_path)
    proc: subprocess.Popen[bytes] | None = None
    observer = Observer(client, ns, spec.kind.resource)
    sampler: Sampler | None = None
    try:
        await client.create(NAMESPACES, None, {"metadata": {"name": ns}}, dict)
        port = children.free_port()
        values = {
            "kubeconfig": cfg.kubeconfig,
            "namespace": ns,
            "metrics_port": str(port),
            "python": sys.executable,
        }
        if spec.peer is not None:
            values |= await spec.peer.prepare(client, ns, port)
        argv = [a.format(**values) for a in spec.argv]
        env = dict(os.environ, KUBECONFIG=cfg.kubeconfig, **spec.env)
        proc = _spawn(argv, env, log_path)
        await observer.start()
        await _wait_started(proc, spec, port)
        if spec.peer is not None:
            await spec.peer.started(client, ns)
        sampler = Sampler(proc.pid)
        sampler.start()
        async with LoadGenerator.connect(cfg.kubeconfig, FIELD_MANAGER) as load:
            await _phases(
                client,
                load,
                ns,
                cfg,
                observer,
                sampler,
                result,
                progress,
                proc,
                spec.kind,
                port if spec.scrape_metrics else 0,
                in_place=spec.in_place,
            )
    except Exception as exc:  # a failed operator is a result, not a crash of the benchmark
        result.error = f"{type(exc).__name__}: {exc}"
        # Where it failed goes to the run's log, after whatever the operator wrote there.
        _append(log_path, f"\ncliques bench: the run failed:\n{traceback.format_exc()}")
    finally:
        if sampler is not None:
            await sampler.stop()
            result.cpu_timeline = sampler.timeline
            result.rss_by_process = {k: v / 2**20 for k, v in sampler.rss_peak.items()}
        if proc is not None:
            children.stop(proc, grace=30)
        if spec.peer is not None:
            with contextlib.suppress(errors.ApiError):
                await spec.peer.stopped(client, ns)
        await observer.stop()
        with contextlib.suppress(errors.ApiError):
            await client.delete(NAMESPACES, None, ns)
            # The namespace controller deletes what is left (events, endpoint slices) in the
            # background: the next operator's run starts once that work is done, or it
            # would be counted in that run's control-plane CPU.
            await _gone(client, ns, NAMESPACE_GONE_TIMEOUT)
        await client.close()
    return result


#: Seconds over which the control plane's idle CPU rate is measured before a deploy.
PLANE_IDLE_WINDOW = 5.0

#: How long a run waits for its namespace to be deleted before the next one starts.
NAMESPACE_GONE_TIMEOUT = 300.0


def _check_alive(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"operator exited with code {proc.returncode}")


async def _gone(client: KubeClient, ns: str, timeout: float) -> bool:
    """Whether namespace `ns` was gone within `timeout` seconds (polled every second)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            await client.get(NAMESPACES, None, ns, dict)
        except errors.NotFound:
            return True
        await asyncio.sleep(1.0)
    return False


async def _phases(
    client: KubeClient,
    load: LoadGenerator,
    ns: str,
    cfg: Settings,
    obs: Observer,
    sampler: Sampler,
    result: OperatorRun,
    progress: Progress,
    proc: subprocess.Popen[bytes],
    kind: WorkloadKind = kinds.CLIQUESET,
    metrics_port: int = 0,
    *,
    in_place: bool = False,
) -> None:
    """Every phase in order. `metrics_port`: the operator's own /metrics (cliques), or 0;
    `in_place`: the operator updates pods in place (cliques, not a peer)."""
    shape = cfg.shape
    desired = kind.desired_pods(shape)
    total = shape.total_pods
    names = shape.names()

    async def wait(phase: str, done: Callable[[], int], want: int) -> bool:
        deadline = time.monotonic() + cfg.timeout
        while True:
            n = done()
            progress(phase, n, want)
            if n >= want:
                return True
            if proc.poll() is not None:
                raise RuntimeError(f"operator exited with code {proc.returncode}")
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.1)

    async def own_counters() -> Counter[str]:
        if not metrics_port:
            return Counter()
        try:
            return await asyncio.to_thread(opmetrics.scrape, metrics_port)
        except OSError:
            return Counter()

    own0: Counter[str] = Counter()
    plane0: dict[str, float] = {}

    async def record(
        phase: str,
        t0: float,
        cpu0: float,
        api0: Any,
        mark: tuple[int, int],
        ok: bool,
        *,
        scrape: bool = True,
        more: dict[str, float] | None = None,
        replaceable: frozenset[str] = frozenset(),
        **extra: float,
    ) -> None:
        """End a phase: wall and CPU first, then the (slower) API server counters. The
        deploy milestones before `available` skip the scrape so that it cannot delay
        noticing the next one; `available` counts the requests of the whole deploy."""
        wall = time.monotonic() - t0
        cpu = sampler.sample() - cpu0
        extra.update(more or {})
        extra.update(procstats.cpu_delta(procstats.cpu_of(cfg.control_plane), plane0))
        if "cpu_kube-controller-manager" in extra:
            extra["cpu_operator_and_kcm"] = cpu + extra["cpu_kube-controller-manager"]
        judged = workload.judge(
            phase, obs.added[mark[0] :], obs.deleted[mark[1] :], desired, replaceable
        )
        api1 = await apimetrics.scrape(client) if scrape else api0
        if scrape:
            extra.update(opmetrics.delta(await own_counters(), own0))
            extra.update(
                {f"plane {k}": v for k, v in apimetrics.plane_delta(api1.plane, api0.plane).items()}
            )
        result.phases.append(
            PhaseResult(
                phase=phase,
                wall=wall,
                cpu=cpu,
                rss_peak_mib=sampler.rss_peak_total / 2**20,
                api=apimetrics.delta(api1.requests, api0.requests),
                spurious_creates=judged.spurious_creates,
                spurious_deletes=judged.spurious_deletes,
                replaced=judged.replaced,
                extra=dict(extra),
                completed=ok,
                time_to_serve=_time_to_serve(obs, t0, phase),
            )
        )

    async def begin(image: str) -> tuple[Any, float, tuple[int, int], float]:
        """Start a phase whose template runs `image`: API counters, CPU, event marks, peak
        RSS reset, then the clock and the watch for the moment it serves."""
        nonlocal own0, plane0
        api = await apimetrics.scrape(client)
        own0 = await own_counters()
        plane0 = procstats.cpu_of(cfg.control_plane)
        cpu = sampler.sample()
        sampler.reset_peak()
        obs.serve_from(image, desired)
        return api, cpu, (len(obs.added), len(obs.deleted)), time.monotonic()

    async def apply(bodies: list[dict[str, Any]]) -> None:
        await asyncio.gather(*(load.apply(kind.resource, ns, b) for b in bodies))

    # The control plane's idle rate before the apply (node heartbeats of the fake kubelets,
    # leases): what "settled after Ready" is measured against.
    plane_idle0 = procstats.cpu_of(cfg.control_plane)
    await asyncio.sleep(PLANE_IDLE_WINDOW)
    plane_idle = {
        f"idle_{k}": v / PLANE_IDLE_WINDOW
        for k, v in procstats.cpu_delta(procstats.cpu_of(cfg.control_plane), plane_idle0).items()
    }

    # -- deploy ----------------------------------------------------------------------------
    api0, cpu0, mark, t0 = await begin(kinds.FIRST_IMAGE)
    await apply([_manifest(kind, cfg, n, kinds.FIRST_IMAGE) for n in names])
    for phase, fn in (
        ("pods-created", lambda: len(obs.live_pods())),
        ("pods-ready", lambda: obs.count(ready=True)),
        ("available", lambda: obs.available_sets() * (total // len(names))),
    ):
        ok = await wait(phase, fn, total)
        await record(
            phase,
            t0,
            cpu0,
            api0,
            mark,
            ok,
            scrape=phase == "available" or not ok,
            more=plane_idle if phase == "available" else None,
        )
        if not ok:
            return

    await _steady(load, ns, cfg, sampler, kind, names, progress, begin, record)
    new_image = kinds.FIRST_IMAGE

    if "rolling-update" not in cfg.skip:
        # -- rolling update ----------------------------------------------------------------
        api0, cpu0, mark, t0 = await begin(kinds.NEXT_IMAGE)
        new_image = kinds.NEXT_IMAGE
        await apply([_manifest(kind, cfg, n, new_image) for n in names])
        ok = await wait(
            "rolling-update",
            lambda: min(
                obs.count(ready=True, image=new_image),
                obs.available_sets() * (total // len(names)),
            ),
            total,
        )
        await record("rolling-update", t0, cpu0, api0, mark, ok)
        if not ok:
            return
    if "in-place-update" not in cfg.skip and in_place:
        # -- in-place update: the same change of image, updateStrategy.inPlace IfPossible --
        # (cliques only: the peers have no in-place update; their roll is rolling-update.)
        api0, cpu0, mark, t0 = await begin(kinds.IN_PLACE_IMAGE)
        new_image = kinds.IN_PLACE_IMAGE
        await apply([_in_place(_manifest(kind, cfg, n, new_image)) for n in names])
        ok = await wait(
            "in-place-update",
            lambda: min(
                obs.count(ready=True, image=new_image, running=True),
                obs.available_sets() * (total // len(names)),
            ),
            total,
        )
        await record("in-place-update", t0, cpu0, api0, mark, ok)
        if not ok:
            return
    if not await _crash_phase(client, ns, cfg, obs, kind, new_image, begin, record, wait):
        return
    if "reorder-apply" not in cfg.skip:
        # -- re-order-only apply -----------------------------------------------------------
        api0, cpu0, mark, t0 = await begin(new_image)
        await apply([kind.reordered(_manifest(kind, cfg, n, new_image)) for n in names])
        # Settle: every set observed the new generation and stays Available for 10 s.
        # An operator that replaces pods here is followed until it is done (quiet for 2 s).
        settle_until = time.monotonic() + 10.0
        seen_deletes = len(obs.deleted)
        while time.monotonic() < settle_until:
            progress("reorder-apply", obs.available_sets(), len(names))
            if obs.available_sets() < len(names) or len(obs.deleted) != seen_deletes:
                seen_deletes = len(obs.deleted)
                settle_until = max(settle_until, time.monotonic() + 2.0)
            if time.monotonic() - t0 > cfg.timeout:
                break
            await asyncio.sleep(0.2)
        await record("reorder-apply", t0, cpu0, api0, mark, True)
    # -- drain, node-loss (opt-in): whole gangs while nodes go away -----------------------
    await _node_phases(cfg, obs, kind, proc, progress, result, begin, record, new_image)
    if "delete" not in cfg.skip:
        # -- delete ------------------------------------------------------------------------
        api0, cpu0, mark, t0 = await begin(new_image)
        await asyncio.gather(*(load.delete(kind.resource, ns, n) for n in names))
        ok = await wait("delete", lambda: total - len(obs.pods.store), total)
        await record("delete", t0, cpu0, api0, mark, ok)


async def _crash_phase(
    client: KubeClient,
    ns: str,
    cfg: Settings,
    obs: Observer,
    kind: WorkloadKind,
    image: str,
    begin: Callable[[str], Awaitable[tuple[Any, float, tuple[int, int], float]]],
    record: Callable[..., Awaitable[None]],
    wait: Callable[[str, Callable[[], int], int], Awaitable[bool]],
) -> bool:
    """The gang-crash phase (`crash`): the leaders of `cfg.crash_gangs` gangs of every set
    crash at once; done when every pod of those gangs is a new one, Ready, and every set
    Available. Whether it finished within the phase's limit (True when not asked for)."""
    if not cfg.crash_gangs:
        return True
    shape = cfg.shape
    api0, cpu0, mark, t0 = await begin(image)
    doomed = crash.gang_pods(kind, shape, crash.crashed_gangs(shape, cfg.crash_gangs))
    members = [n for gang in doomed.values() for n in gang]
    before = {n: _uid(obs, ns, n) for n in members}
    await asyncio.gather(*(_crash(client, ns, leader) for leader in doomed))
    # Serving is judged afresh once the watch shows every crashed leader down.
    ok = await wait(crash.PHASE, lambda: sum(not _serving(obs, ns, n) for n in doomed), len(doomed))
    if ok:
        obs.serve_from(image, kind.desired_pods(shape))
        sets = len(shape.names())
        ok = await wait(
            crash.PHASE,
            lambda: (
                sum(_serving(obs, ns, n) and _uid(obs, ns, n) != before[n] for n in members)
                if obs.available_sets() == sets
                else 0
            ),
            len(members),
        )
    await record(
        crash.PHASE,
        t0,
        cpu0,
        api0,
        mark,
        ok,
        replaceable=frozenset(members),
        crashed_gangs=float(len(doomed)),
    )
    return ok


async def _node_phases(
    cfg: Settings,
    obs: Observer,
    kind: WorkloadKind,
    proc: subprocess.Popen[bytes],
    progress: Progress,
    result: OperatorRun,
    begin: Callable[[str], Awaitable[tuple[Any, float, tuple[int, int], float]]],
    record: Callable[..., Awaitable[None]],
    image: str,
) -> None:
    """The node phases of `cfg` in turn (`disruption_run`), each recorded with its samples;
    after a node loss the node is powered on again (also after a failure), outside the
    phase's time."""
    for node_phase in cfg.node_phases:
        api0, cpu0, mark, t0 = await begin(image)
        ctx = disruption_run.Context(
            kubectl=cfg.kubectl,
            kubeconfig=cfg.kubeconfig,
            obs=obs,
            kind=kind.name,
            shape=cfg.shape,
            timeout=cfg.timeout,
            out_of_service_after=cfg.out_of_service_after,
            progress=progress,
            check=lambda: _check_alive(proc),
        )
        run = disruption_run.drain if node_phase == disruption.DRAIN else disruption_run.node_loss
        outcome = disruption_run.Outcome()
        try:
            await run(ctx, t0, outcome)
            await record(node_phase, t0, cpu0, api0, mark, outcome.completed, **outcome.extra)
            ph = result.phases[-1]
            ph.samples, ph.marks, ph.nodes = outcome.samples, outcome.marks, outcome.nodes
            ph.time_to_serve = outcome.extra.get("whole_again_s")
        finally:
            if node_phase == disruption.NODE_LOSS and outcome.nodes:
                back, notes = await disruption_run.power_on(ctx, outcome.nodes[0])
                outcome.notes += notes
                if result.phases and result.phases[-1].phase == node_phase:
                    result.phases[-1].extra["node_back_ready"] = float(back)
            if result.phases and result.phases[-1].phase == node_phase:
                result.phases[-1].notes = outcome.notes


def _manifest(kind: WorkloadKind, cfg: Settings, name: str, image: str) -> dict[str, Any]:
    """The workload object `name` running `image`, with the run's start model; a CliqueSet
    with the `podReadiness` `cfg` asks for."""
    body = kind.build(
        name,
        cfg.shape,
        image,
        cfg.gang_scheduling,
        cfg.subdomain_policy,
        cfg.pull_seconds,
        cfg.load_seconds,
    )
    if cfg.crash_gangs:
        body = crash.failure_policy(body)
    if kind is kinds.CLIQUESET:
        return workload.with_pod_readiness(body, cfg.pod_readiness)
    return body


def _uid(obs: Observer, ns: str, name: str) -> str:
    """The UID of pod `name` as the watch shows it ("" while there is none)."""
    pod = obs.pods.store.get(f"{ns}/{name}")
    return pod.metadata.uid if pod is not None else ""


def _serving(obs: Observer, ns: str, name: str) -> bool:
    """Whether pod `name` is there and Ready, as the watch shows it."""
    pod = obs.pods.store.get(f"{ns}/{name}")
    return pod is not None and bool(pod.ready)


async def _crash(client: KubeClient, ns: str, name: str) -> None:
    """Report a crash of pod `name`'s serving container (`crash.crash_status`), retried on
    a conflict with a fresh read."""
    for _ in range(5):
        pod = await client.get(PODS, ns, name, dict)
        try:
            await client.patch(PODS, ns, name, crash.crash_status(pod), dict, sub="status")
            return
        except errors.Conflict:
            continue
    raise RuntimeError(f"the crash of pod {ns}/{name} met a conflict 5 times")


def _time_to_serve(obs: Observer, t0: float, phase: str) -> float | None:
    """Seconds from `t0` until the workload served on the phase's template (0 if it did
    already: a phase that changes no template), None if it has not (or for delete)."""
    if obs.served_at is None or phase == "delete":
        return None
    return max(0.0, obs.served_at - t0)


def _in_place(manifest: dict[str, Any]) -> dict[str, Any]:
    """A CliqueSet manifest with `updateStrategy.inPlace: IfPossible`."""
    strategy = manifest["spec"].setdefault("updateStrategy", {})
    strategy["inPlace"] = "IfPossible"
    return manifest


#: The controller-manager's name among the control-plane components.
KCM = "kube-controller-manager"


async def _kcm_work(port: int | None) -> dict[str, float]:
    """The controller-manager's work-queue seconds so far (`kcmmetrics`); empty when it
    cannot be read (a cluster given by --kubeconfig, a scrape that fails)."""
    if port is None:
        return {}
    try:
        return await asyncio.to_thread(kcmmetrics.scrape, port)
    except (OSError, ValueError):
        return {}


async def _steady(
    load: LoadGenerator,
    ns: str,
    cfg: Settings,
    sampler: Sampler,
    kind: WorkloadKind,
    names: list[str],
    progress: Progress,
    begin: Callable[[str], Awaitable[tuple[Any, float, tuple[int, int], float]]],
    record: Callable[..., Awaitable[None]],
) -> None:
    """The steady state: a change that changes nothing, after the idle rate is measured
    (unless the run skips it)."""
    if "steady-state" in cfg.skip:
        return
    # -- steady state: a change that changes nothing ---------------------------------------
    # The idle rate (leases, health checks, a supervisor's polling) is measured first and
    # subtracted; /proc counts 10 ms ticks, so it needs a window of seconds, not one.
    # The control plane's CPU over the same window says whether it has settled after Ready
    # (the controller-manager's endpoint controllers catching up with the Services).
    # The controller-manager is sampled every half second from here (Available) to the end
    # of the phase: when it was last busy says how long it took to settle.
    idle_window = max(3.0, min(cfg.steady, 10.0))
    idle_cpu0 = sampler.sample()
    idle_plane0 = procstats.cpu_of(cfg.control_plane)
    available = time.monotonic()
    kcm: list[tuple[float, float]] = []
    kcm_pid = cfg.control_plane.get(KCM)
    kcm_port = kcmmetrics.port_of(kcm_pid) if kcm_pid is not None else None
    kcm_work0 = await _kcm_work(kcm_port)

    def sample_kcm() -> None:
        now = procstats.cpu_of({KCM: kcm_pid}).get(KCM) if kcm_pid is not None else None
        if now is not None:
            kcm.append((time.monotonic() - available, now))

    while time.monotonic() - available < idle_window:
        sample_kcm()
        await asyncio.sleep(0.5)
    idle_rate = (sampler.sample() - idle_cpu0) / idle_window
    settle = {
        f"settle_{k}": v
        for k, v in procstats.cpu_delta(procstats.cpu_of(cfg.control_plane), idle_plane0).items()
    }
    api0, cpu0, mark, t0 = await begin(kinds.FIRST_IMAGE)
    stamp = str(time.time())
    await asyncio.gather(
        *(load.annotate(kind.resource, ns, n, {"bench/noop": stamp}) for n in names)
    )
    while time.monotonic() - t0 < cfg.steady:
        progress("steady-state", int(time.monotonic() - t0), int(cfg.steady))
        sample_kcm()
        await asyncio.sleep(0.5)
    sample_kcm()
    window = time.monotonic() - t0
    cpu_window = sampler.sample() - cpu0
    kcm_busy = procstats.busy_until(kcm)
    kcm_work = await _kcm_work(kcm_port)
    if kcm_work and kcm_work0:
        # Which of its controllers worked from Available on (seconds in their syncs).
        for queue, seconds in kcmmetrics.busiest(kcm_work, kcm_work0).items():
            settle[f"kcm work {queue}"] = seconds
    if kcm_busy is not None:
        settle["kcm_busy_until"] = kcm_busy  # s after Available
        settle["kcm_sampled_until"] = kcm[-1][0]
    await record(
        "steady-state",
        t0,
        cpu0,
        api0,
        mark,
        True,
        noop_cpu_per_set=max(0.0, cpu_window - idle_rate * window) / len(names),
        idle_cpu_per_s=idle_rate,
        more=settle,
        settle_window=idle_window,
    )


async def _wait_started(proc: subprocess.Popen[bytes], spec: OperatorSpec, port: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{spec.name} exited with code {proc.returncode} at start")
        if not spec.readyz:
            if time.monotonic() > deadline - 115:  # 5 s: peers without a readiness endpoint
                return
        elif await asyncio.to_thread(_http_ok, f"http://127.0.0.1:{port}/readyz"):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"{spec.name} not ready after 120 s")


def _append(path: Path, text: str) -> None:
    """Add `text` to the end of file `path` (a small write; failures are ignored)."""
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as out:
        out.write(text)


def _spawn(argv: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start the operator in its own process group (so its workers stop with it)."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def as_dict(run: OperatorRun) -> dict[str, Any]:
    return dataclasses.asdict(run)
