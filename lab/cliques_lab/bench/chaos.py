"""`cliques bench chaos`: random objects, edits, deletes and faults against the real control
plane with the operator running, its invariants checked all along.

One run, in a namespace of its own: the operator runs as a real supervisor with worker
processes (`cliques operator --workers N`), talking to the API server through a
fault-injecting proxy (`chaos_proxy`). The steps come from one seed (`chaos_actions.Draw`):
valid CliqueSets, invalid and hostile ones, edits (rolls, resizes, scale through the
subresource, re-orders, annotations), deletes with every propagation policy, re-creation
over orphans, and faults (worker `kill -9`, watch cuts and stalls, 429s, pod loss, an API
server restart). `chaos_monitor` judges every pod event as it happens. When the steps end
the faults stop, and then:

- every valid set must be Available with exactly its pods, Ready, on its template, within
  `converge_bound` seconds (stated in the result);
- every invalid one must have been refused by the API server with a message naming the
  problem, or carry Degraded/InvalidSpec naming it; every set whose Service name a
  foreign object held must have reported ReplicaFailure/NameConflict;
- the supervisor must still run, and have restarted workers no more often than the run
  killed them (more is a crash loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cliques.controllers.base.revision import Hasher
from cliques.kube import errors
from cliques.kube.client import WATCH_READ_TIMEOUT, KubeClient
from cliques.kube.resources import CLIQUESETS, NAMESPACES, PODS, Resource
from cliques_lab.bench import children, procstats
from cliques_lab.bench.chaos_actions import FAULTS, Draw, Invalid, Shape, Step, manifest
from cliques_lab.bench.chaos_monitor import Monitor, desired_of
from cliques_lab.bench.chaos_proxy import FaultProxy

SERVICES = Resource("", "v1", "services", "Service")
#: Seconds every valid set gets, after the faults stop, to be Available with its pods.
CONVERGE_BOUND = 90.0
#: How often the control plane's components are checked while the sets converge, s
#: (`_healing`).
HEAL_EVERY = 2.0
#: How long a create waits for an earlier set of its name to finish being deleted (s).
GONE_WITHIN = 120.0

Progress = Callable[[str, int, int], None]  # (what, done, total)


class StepTimeout(Exception):
    """A step could not be made within its bound (an earlier object never went away)."""


#: What a step may fail with and the run goes on (counted, logged in the step log).
STEP_FAILURES: tuple[type[BaseException], ...] = (*errors.API_FAILURES, StepTimeout)


@dataclass
class Settings:
    kubeconfig: str
    seed: int
    duration: float = 60.0  # seconds of steps (ignored when `steps` is set)
    steps: int | None = None
    faults: tuple[str, ...] = FAULTS
    workers: int = 2
    max_sets: int = 4
    cluster: str | None = None  # dev cluster name: needed for apiserver-restart
    namespace: str | None = None  # default: a new namespace, deleted at the end
    log_dir: Path = Path("/tmp")
    converge_bound: float = 0.0  # 0: CONVERGE_BOUND, plus the watch read deadline on stalls

    def bound(self) -> float:
        if self.converge_bound:
            return self.converge_bound
        stall = WATCH_READ_TIMEOUT if "stall-watches" in self.faults else 0.0
        return CONVERGE_BOUND + stall


@dataclass
class Result:
    seed: int
    namespace: str = ""
    steps: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    deletes: dict[str, int] = field(default_factory=dict)  # by propagation policy
    edits: dict[str, int] = field(default_factory=dict)
    invalid: dict[str, int] = field(default_factory=dict)
    pods: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    convergence: dict[str, float] = field(default_factory=dict)  # set -> seconds
    converge_bound: float = 0.0
    worker_restarts: int = 0
    max_rollout_down: int = 0
    proxy: dict[str, int] = field(default_factory=dict)
    wall: float = 0.0
    log: str = ""
    step_log: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.violations and not self.error


async def run(cfg: Settings, progress: Progress | None = None) -> Result:
    """One chaos run. Never raises for what it finds: violations and errors are in the
    result (a failure to start, such as an unreachable cluster, is `error`)."""
    result = Result(cfg.seed, converge_bound=cfg.bound())
    t0 = time.monotonic()
    client = await KubeClient.connect(cfg.kubeconfig, qps=0, field_manager="cliques-chaos")
    ns = cfg.namespace or f"chaos-{cfg.seed % 100000}-{int(time.time()) % 100000}"
    result.namespace = ns
    cfg.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = cfg.log_dir / f"{ns}-operator.log"
    result.log = str(log_path)
    proxy = FaultProxy(cfg.kubeconfig, seed=cfg.seed)
    monitor = Monitor(client, ns)
    proc: subprocess.Popen[bytes] | None = None
    engine: Engine | None = None
    try:
        if cfg.namespace is None:
            await client.create(NAMESPACES, None, {"metadata": {"name": ns}}, dict)
        await proxy.start()
        kubeconfig = proxy.write_kubeconfig(cfg.log_dir / f"{ns}-kubeconfig.yaml")
        port = children.free_port()
        proc = _spawn_operator(cfg.workers, kubeconfig, ns, port, log_path)
        await _wait_ready(proc, port)
        await monitor.start()
        engine = Engine(cfg, client, ns, proxy, monitor, proc, port, result, progress)
        await engine.run()
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if engine is not None:
            engine.fill()
        monitor.settle()
        result.violations = monitor.violations + (engine.violations if engine else [])
        result.pods = dict(monitor.counts)
        result.max_rollout_down = monitor.max_rollout_down
        result.proxy = dict(proxy.counts)
        if proc is not None:
            children.stop(proc, grace=60)
        await monitor.stop()
        await proxy.close()
        if cfg.namespace is None:
            with contextlib.suppress(*errors.API_FAILURES):
                await client.delete(NAMESPACES, None, ns)
        await client.close()
        result.wall = round(time.monotonic() - t0, 1)
    return result


class Engine:
    def __init__(
        self,
        cfg: Settings,
        client: KubeClient,
        ns: str,
        proxy: FaultProxy,
        monitor: Monitor,
        proc: subprocess.Popen[bytes],
        metrics_port: int,
        result: Result,
        progress: Progress | None,
    ) -> None:
        self.cfg = cfg
        self.client = client
        self.ns = ns
        self.proxy = proxy
        self.monitor = monitor
        self.proc = proc
        self.metrics_port = metrics_port
        self.result = result
        self.progress = progress or (lambda what, done, total: None)
        self.draw = Draw(cfg.seed, cfg.faults, max_sets=cfg.max_sets)
        self.hasher = Hasher()
        self.live: dict[str, Shape] = {}
        self.orphaned: dict[str, Shape] = {}
        self.conflicts: dict[str, bool] = {}  # set name -> NameConflict seen
        self.blocked: set[str] = set()  # sets whose Service name is still held
        self.held: dict[str, str] = {}  # set name -> the Service name a foreign object holds
        self.reported: list[Invalid] = []  # invalid objects stored: to be reported
        self.counts: Counter[str] = Counter()
        self.violations: list[str] = []
        self.kills = 0

    # -- the run ------------------------------------------------------------------------------

    async def run(self) -> None:
        cfg = self.cfg
        start = time.monotonic()
        n = 0
        while True:
            if cfg.steps is not None:
                if n >= cfg.steps:
                    break
                self.progress("steps", n, cfg.steps)
            else:
                elapsed = time.monotonic() - start
                if elapsed >= cfg.duration:
                    break
                self.progress("steps", int(elapsed), int(cfg.duration))
            n += 1
            self.result.steps = n
            step = self._next()
            where = f"step {n} ({step.describe()}, seed {cfg.seed})"
            self.monitor.step = where
            self.result.step_log.append(where)
            try:
                await self._do(step)
            except STEP_FAILURES as exc:
                self.counts["step errors"] += 1
                self.result.step_log.append(f"  failed: {exc}")
            if self.proc.poll() is not None:
                self.violations.append(f"the operator exited ({self.proc.returncode}) at {where}")
                return
            await asyncio.sleep(self.draw.pause())
        self.monitor.step = "convergence (faults stopped)"
        self.proxy.throttle(0, 0)
        healing = asyncio.create_task(self._healing(), name="chaos-healing")
        try:
            await self._converge()
        finally:
            healing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await healing
        await self._crash_loop()

    def _next(self) -> Step:
        step = self.draw.step(self.live, sorted(k for k in self.blocked if k in self.live))
        if step.op == "create" and self.orphaned and self.draw.rng.random() < 0.5:
            name, shape = sorted(self.orphaned.items())[0]
            return Step("create", "over-orphans", name, shape=shape)
        return step

    async def _do(self, step: Step) -> None:
        c = self.counts
        if step.op == "create":
            assert step.shape is not None
            self.orphaned.pop(step.name, None)
            c["objects valid"] += 1
            c[f"create {step.kind}"] += 1
            await self._until_gone(step.name)
            await self._apply(step.shape)
        elif step.op == "edit":
            assert step.shape is not None
            c[f"edit {step.kind}"] += 1
            await self._apply(step.shape, scale=step.kind == "scale")
        elif step.op == "delete":
            c[f"delete {step.kind}"] += 1
            shape = self.live.pop(step.name)
            self.monitor.deleted(step.name, step.kind)
            if step.kind == "Orphan":
                self.orphaned[step.name] = shape
            await self.client.delete(CLIQUESETS, self.ns, step.name, propagation=step.kind)
        elif step.op == "invalid":
            assert step.invalid is not None
            c["objects invalid"] += 1
            c[f"invalid {step.kind}"] += 1
            await self._invalid(step.invalid)
        elif step.op == "unblock":
            await self._unblock(step.name)
        elif step.op == "fault":
            c[f"fault {step.kind}"] += 1
            await self._fault(step)

    async def _until_gone(self, name: str) -> None:
        """Wait until no earlier CliqueSet of `name` is left, even one being deleted.

        An apply onto a set still being deleted (the garbage collector has not yet released
        what an Orphan deletion leaves) updates that dying object instead of making a new
        one, and the set is gone a moment later: the step would test nothing."""
        deadline = time.monotonic() + GONE_WITHIN
        while True:
            try:
                await self.client.get(CLIQUESETS, self.ns, name, dict)
            except errors.NotFound:
                return
            if time.monotonic() > deadline:
                raise StepTimeout(
                    f"CliqueSet {name} was still being deleted after {GONE_WITHIN:.0f}s"
                )
            self.counts["creates that waited for a deletion"] += 1
            await asyncio.sleep(0.5)

    async def _apply(self, shape: Shape, *, scale: bool = False) -> None:
        self.monitor.desire(shape.name, desired_of(shape, self.hasher))
        self.live[shape.name] = shape
        if scale:
            await self.client.patch(
                CLIQUESETS,
                self.ns,
                shape.name,
                {"spec": {"replicas": shape.replicas}},
                dict,
                sub="scale",
            )
            return
        body = manifest(shape)
        body["metadata"]["namespace"] = self.ns
        await self.client.patch(
            CLIQUESETS, self.ns, shape.name, body, dict, patch_type="apply", force=True
        )

    async def _invalid(self, inv: Invalid) -> None:
        if inv.where == "conflict":
            assert inv.shape is not None
            foreign = {
                "metadata": {"name": inv.expect, "labels": {"app": "someone-else"}},
                "spec": {"ports": [{"port": 80}]},
            }
            await self.client.create(SERVICES, self.ns, foreign, dict)
            self.held[inv.name] = inv.expect
            self.conflicts[inv.name] = False
            self.blocked.add(inv.name)
            await self._apply(inv.shape)
            return
        body = {**inv.body, "metadata": {**inv.body["metadata"], "namespace": self.ns}}
        try:
            await self.client.request(
                "create",
                CLIQUESETS,
                namespace=self.ns,
                body=Invalid(inv.kind, inv.name, inv.where, inv.expect, body).raw(),
                content_type="application/json",
            )
        except errors.ApiError as exc:
            if inv.where == "api" and exc.status == 422 and inv.expect in exc.message:
                self.counts["invalid refused with the problem named"] += 1
                return
            self.violations.append(
                f"invalid {inv.kind} {inv.name}: expected a 422 naming {inv.expect!r}, got "
                f"{exc.status}: {exc.message[:300]}"
            )
            return
        if inv.where == "api":
            self.violations.append(f"invalid {inv.kind} {inv.name} was accepted")
            return
        self.reported.append(inv)

    async def _unblock(self, name: str) -> None:
        if not self.conflicts.get(name):
            self.conflicts[name] = await self._name_conflict(name)
        self.blocked.discard(name)
        with contextlib.suppress(errors.NotFound):
            await self.client.delete(SERVICES, self.ns, self.held.pop(name, name))
        self.counts["name conflicts cleared"] += 1

    async def _fault(self, step: Step) -> None:
        kind = step.kind
        if kind == "kill-worker":
            workers = sorted(p for p in procstats.tree(self.proc.pid) if p != self.proc.pid)
            if not workers:
                self.counts["fault kill-worker skipped (restarting)"] += 1
                return
            pid = workers[int(step.pick * len(workers)) % len(workers)]
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                self.kills += 1
        elif kind == "cut-watches":
            self.proxy.cut_watches()
        elif kind == "stall-watches":
            self.proxy.stall_watches()
        elif kind == "throttle":
            self.proxy.throttle(step.seconds, step.fraction)
        elif kind == "pod-loss":
            pods = sorted(self.monitor.live_pods(), key=lambda p: p.metadata.name)
            if not pods:
                return
            pod = pods[int(step.pick * len(pods)) % len(pods)]
            self.monitor.doom(pod.metadata.uid)
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self.client.delete(PODS, self.ns, pod.metadata.name, uid=pod.metadata.uid)
        elif kind == "apiserver-restart":
            if self.cfg.cluster is None:
                self.counts["fault apiserver-restart skipped (no dev cluster)"] += 1
                return
            from cliques_lab.devcluster import cluster
            from cliques_lab.devcluster.errors import ComponentError

            await self._heal()
            try:
                took = await asyncio.to_thread(cluster.restart_apiserver, self.cfg.cluster)
                self.result.step_log.append(f"  API server back after {took:.1f}s")
            except ComponentError as exc:  # another component exited meanwhile
                self.result.step_log.append(f"  {str(exc).splitlines()[0]}")
                await self._heal()

    async def _heal(self) -> None:
        """Start again the dev cluster's components that exited: the scheduler and the
        controller-manager exit when they cannot renew their leader lease while the API
        server is down (as on any cluster, where the kubelet restarts them)."""
        if self.cfg.cluster is None or "apiserver-restart" not in self.cfg.faults:
            return
        from cliques_lab.devcluster import cluster

        name = self.cfg.cluster
        now = await asyncio.to_thread(cluster.status, name)
        if now.state != "running":
            exited = [c.name for c in now.components if not c.running]
            for c in now.components:  # their logs, which a start begins anew, kept aside
                if not c.running and c.log.is_file():
                    stamp = time.strftime("%H%M%S")
                    shutil.copyfile(c.log, c.log.with_name(f"{c.name}-exited-{stamp}.log"))
            self.counts["control-plane components restarted"] += 1
            self.result.step_log.append(
                f"  {', '.join(exited) or 'a component'} exited: started again "
                f"({self.monitor.step})"
            )
            await asyncio.to_thread(cluster.up, name, disable_qps_limits=True)

    async def _healing(self) -> None:
        """`_heal` every `HEAL_EVERY` seconds, while the sets converge: a component can lose
        its leader lease and exit some seconds after the API server's last restart."""
        while True:
            await self._heal()
            await asyncio.sleep(HEAL_EVERY)

    # -- after the faults -----------------------------------------------------------------

    async def _name_conflict(self, name: str) -> bool:
        with contextlib.suppress(*errors.API_FAILURES):
            cqs = await self.client.get(CLIQUESETS, self.ns, name, dict)
            for cond in (cqs.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "ReplicaFailure" and cond.get("reason") == "NameConflict":
                    held = self.held.get(name, name)
                    return f"{self.ns}/{held} already exists" in cond.get("message", "")
        return False

    async def _converge(self) -> None:
        bound = self.cfg.bound()
        t0 = time.monotonic()
        deadline = t0 + bound  # one bound for all: the conflicts first, then convergence
        for name in sorted(self.blocked):
            if name in self.live and self.live[name].replicas > 0:
                while not await self._name_conflict(name):
                    if time.monotonic() > deadline:
                        self.violations.append(f"{name}: no ReplicaFailure/NameConflict")
                        break
                    await asyncio.sleep(0.5)
                else:
                    self.conflicts[name] = True
            await self._unblock(name)
        pending = set(self.live)
        total = len(pending) + len(self.reported)
        reported = list(self.reported)
        while pending or reported:
            self.progress("converge", total - len(pending) - len(reported), total)
            for name in sorted(pending):
                if await self._available(name) and self.monitor.converged(name) is None:
                    pending.discard(name)
                    self.result.convergence[name] = round(time.monotonic() - t0, 1)
            for inv in list(reported):
                if await self._invalid_spec(inv):
                    reported.remove(inv)
                    self.counts["invalid reported with the problem named"] += 1
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        self.progress("converge", total - len(pending) - len(reported), total)
        for name in sorted(pending):
            why = self.monitor.converged(name) or await self._unavailable(name)
            self.violations.append(f"{name} did not converge within {bound:.0f}s: {why}")
        for inv in reported:
            self.violations.append(
                f"{inv.kind} {inv.name}: no Degraded/InvalidSpec naming {inv.expect!r} "
                f"within {bound:.0f}s"
            )

    async def _unavailable(self, name: str) -> str:
        """Why set `name` does not count as available, for the violation's text."""
        try:
            cqs = await self.client.get(CLIQUESETS, self.ns, name, dict)
        except errors.NotFound:
            return "the CliqueSet does not exist"
        except errors.API_FAILURES as exc:
            return f"it could not be read: {exc}"
        st = cqs.get("status") or {}
        conditions = "; ".join(
            f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}"[:200]
            for c in st.get("conditions") or []
        )
        return (
            f"its status is not Available (generation {cqs['metadata'].get('generation')}, "
            f"observed {st.get('observedGeneration')}, updated {st.get('updatedReplicas', 0)} of "
            f"{cqs['spec'].get('replicas')}; {conditions or 'no conditions'})"
        )

    async def _available(self, name: str) -> bool:
        try:
            cqs = await self.client.get(CLIQUESETS, self.ns, name, dict)
        except errors.API_FAILURES:
            return False
        st = cqs.get("status") or {}
        if st.get("observedGeneration") != cqs["metadata"].get("generation"):
            return False
        if st.get("updatedReplicas", 0) != cqs["spec"]["replicas"]:
            return False
        return any(
            c.get("type") == "Available" and c.get("status") == "True"
            for c in st.get("conditions") or []
        )

    async def _invalid_spec(self, inv: Invalid) -> bool:
        """Degraded/InvalidSpec naming the problem (read as text: the deep one decodes in
        no JSON decoder)."""
        try:
            raw = await self.client.request("get", CLIQUESETS, namespace=self.ns, name=inv.name)
        except errors.API_FAILURES:
            return False
        text = raw.decode()
        at = text.find('"conditions":[', text.rfind('"status":{'))
        if at < 0:
            return False
        end = text.find("]", at)
        for cond in json.loads(text[at + len('"conditions":') : end + 1]):
            if (
                cond.get("type") == "Degraded"
                and cond.get("reason") == "InvalidSpec"
                and inv.expect in cond.get("message", "")
            ):
                return True
        return False

    async def _crash_loop(self) -> None:
        try:
            text = await asyncio.to_thread(_get, f"http://127.0.0.1:{self.metrics_port}/metrics")
        except OSError as exc:
            self.violations.append(f"the operator's /metrics does not answer: {exc}")
            return
        restarts = 0
        for line in text.splitlines():
            if line.startswith("cliques_worker_restarts_total{"):
                restarts += int(float(line.rsplit(" ", 1)[1]))
        self.result.worker_restarts = restarts
        if restarts > self.kills:
            self.violations.append(
                f"crash loop: {restarts} worker restarts for {self.kills} workers killed"
            )
        if self.proc.poll() is not None:
            self.violations.append(f"the operator exited ({self.proc.returncode})")

    def fill(self) -> None:
        r, c = self.result, self.counts

        def group(prefix: str) -> dict[str, int]:
            return {k.removeprefix(prefix): v for k, v in sorted(c.items()) if k.startswith(prefix)}

        r.faults = group("fault ")
        r.deletes = group("delete ")
        r.edits = group("edit ")
        r.invalid = group("invalid ")
        r.counts = dict(sorted(c.items()))
        r.counts["name conflicts reported"] = sum(self.conflicts.values())
        r.counts["name conflicts"] = len(self.conflicts)
        r.counts["workers killed"] = self.kills


# -- the operator process ------------------------------------------------------------------


def _spawn_operator(
    workers: int, kubeconfig: str, ns: str, port: int, log_path: Path
) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "cliques",
        "operator",
        "--workers",
        str(workers),
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        ns,
        "--metrics-port",
        str(port),
        "--qps",
        "0",
        "--status-hold",
        "0",
    ]
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=dict(os.environ)
        )


async def _wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited with code {proc.returncode} at start")
        with contextlib.suppress(OSError):
            await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/readyz")
            return
        await asyncio.sleep(0.3)
    raise RuntimeError(f"the operator was not ready after {timeout:.0f}s")


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as resp:
        return str(resp.read().decode())
