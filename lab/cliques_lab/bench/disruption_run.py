"""The node phases of `cliques bench scale` against a cluster: `drain` and `node-loss`
(`disruption` holds what they decide and how their samples sum up).

Both sample the whole Ready gangs once a second from the observer's pod cache while they
run, and act on the nodes with the cluster's kubectl, as an administrator would:

- drain: `kubectl drain --ignore-daemonsets --delete-emptydir-data` of the chosen nodes at
  once; the phase ends when every drain has returned and every gang is whole again (or at
  the phase's timeout), then the nodes are uncordoned;
- node-loss: the node's Lease in kube-node-lease is taken (`node_power`: no heartbeat, the
  node lifecycle marks it lost after its grace period), `out_of_service_after` seconds
  later the node is tainted out of service; the phase ends once that is done and every gang
  is whole again (or at the timeout); then the taint is removed and the Lease deleted, so
  that KWOK takes the node back, and the node is waited for until Ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cliques_lab.bench import disruption
from cliques_lab.bench.observer import Observer
from cliques_lab.bench.workload import Shape
from cliques_lab.devcluster import node_power

#: Seconds between two samples of the whole gangs.
PERIOD = 1.0
#: How long the node-loss cleanup waits for the node to be Ready again.
NODE_BACK_TIMEOUT = 120.0
#: A node's Ready condition's status, for `kubectl get node -o`.
READY_JSONPATH = 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'


@dataclass
class Context:
    """What a node phase needs from the run."""

    kubectl: str
    kubeconfig: str
    obs: Observer
    kind: str  # the workload kind's name: CliqueSet, LeaderWorkerSet
    shape: Shape
    timeout: float
    out_of_service_after: float
    #: (phase, done, total)
    progress: Callable[[str, int, int], None]
    #: raises when the operator under test exited
    check: Callable[[], None]


@dataclass
class Outcome:
    """One node phase: its samples (seconds from its start, whole gangs), the moments of its
    actions (seconds, label), its figures, and whether it ended with every gang whole."""

    samples: list[tuple[float, int]] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)
    completed: bool = False
    notes: list[str] = field(default_factory=list)


async def kubectl(ctx: Context, *args: str, timeout: float = 60.0) -> tuple[int, str]:
    """Run the cluster's kubectl; (exit code, stdout and stderr)."""
    proc = await asyncio.create_subprocess_exec(
        ctx.kubectl,
        "--kubeconfig",
        ctx.kubeconfig,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return -1, f"kubectl {' '.join(args)}: no answer within {timeout:.0f} s"
    return proc.returncode or 0, out.decode(errors="replace")


class _Sampler:
    """Whole Ready gangs every PERIOD seconds from the observer's cache, from `t0`."""

    def __init__(self, ctx: Context, phase: str, t0: float) -> None:
        self.ctx = ctx
        self.phase = phase
        self.t0 = t0
        self.gangs = disruption.gangs(ctx.kind, ctx.shape)
        self.samples: list[tuple[float, int]] = []
        self._task: asyncio.Task[None] | None = None

    def now(self) -> int:
        ready = {p.metadata.name for p in self.ctx.obs.live_pods() if p.ready}
        return disruption.whole(self.gangs, ready)

    def sample(self) -> None:
        n = self.now()
        self.samples.append((round(time.monotonic() - self.t0, 2), n))
        self.ctx.progress(self.phase, n, len(self.gangs))

    async def _run(self) -> None:
        tick = self.t0
        while True:
            self.sample()
            tick += PERIOD
            await asyncio.sleep(max(0.0, tick - time.monotonic()))

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop sampling, with a last sample of the moment the phase ended."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
            self.sample()

    async def until_whole(self, deadline: float, ready: Callable[[], bool] = lambda: True) -> bool:
        """Wait until `ready()` and every gang whole, or `deadline`; whether it happened."""
        while time.monotonic() < deadline:
            self.ctx.check()
            if ready() and self.now() == len(self.gangs):
                return True
            await asyncio.sleep(0.2)
        return False


def _placement(ctx: Context) -> tuple[dict[str, int], dict[str, int]]:
    """(pods per node, gangs per node) of the workload's live pods."""
    node_of = {p.metadata.name: p.spec.nodeName for p in ctx.obs.live_pods() if p.spec.nodeName}
    pods: dict[str, int] = {}
    for node in node_of.values():
        pods[node] = pods.get(node, 0) + 1
    return pods, disruption.gangs_by_node(disruption.gangs(ctx.kind, ctx.shape), node_of)


async def drain(ctx: Context, t0: float, out: Outcome) -> None:
    """The drain phase, from `t0` (time.monotonic of its start), into `out`."""
    pods_on, _ = _placement(ctx)
    out.nodes = disruption.drain_nodes(pods_on)
    sampler = _Sampler(ctx, disruption.DRAIN, t0)
    sampler.start()
    deadline = t0 + ctx.timeout
    took: dict[str, float] = {}

    async def one(node: str) -> None:
        code, text = await kubectl(
            ctx,
            "drain",
            node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            f"--timeout={int(ctx.timeout)}s",
            timeout=ctx.timeout + 30,
        )
        took[node] = time.monotonic() - t0
        out.marks.append((round(took[node], 2), f"drained {node}"))
        if code != 0:
            out.notes.append(f"kubectl drain {node} exited {code}: {text.strip()[-300:]}")

    try:
        await asyncio.gather(*(one(n) for n in out.nodes))
        drained = all(n in took for n in out.nodes) and not out.notes
        out.completed = drained and await sampler.until_whole(deadline)
    finally:
        await sampler.stop()
        out.samples = sampler.samples
        for node in out.nodes:
            code, text = await kubectl(ctx, "uncordon", node)
            if code != 0:
                out.notes.append(f"kubectl uncordon {node} exited {code}: {text.strip()}")
    for i, node in enumerate(out.nodes):
        if node in took:
            out.extra[f"drain_s node{i}"] = took[node]
    if took:
        out.extra["drain_s"] = max(took.values())
    out.extra["drained_nodes"] = float(len(out.nodes))
    out.extra["nodes_holding_pods"] = float(len(pods_on))
    summary = disruption.summarize(out.samples, len(sampler.gangs), PERIOD)
    out.extra.update(summary.as_extra())


async def node_loss(ctx: Context, t0: float, out: Outcome) -> None:
    """The node-loss phase, from `t0`, into `out` (its `nodes` are set before the node is
    powered off: the caller powers it on again, whatever happens)."""
    _, gangs_on = _placement(ctx)
    node = disruption.lost_node(gangs_on)
    if node is None:
        out.notes.append("no node holds a gang pod")
        return
    out.nodes = [node]
    out.extra["gangs_on_lost_node"] = float(gangs_on[node])
    sampler = _Sampler(ctx, disruption.NODE_LOSS, t0)
    sampler.start()
    tainted = False
    try:
        patch = json.dumps(node_power.power_off_patch())
        code, text = await kubectl(
            ctx, "-n", node_power.NODE_LEASE_NAMESPACE, "patch", "lease", node,
            "--type=merge", "-p", patch,
        )  # fmt: skip
        if code != 0:
            out.notes.append(f"power-off of {node} failed: {text.strip()}")
            return
        out.marks.append((round(time.monotonic() - t0, 2), "power off"))
        deadline = t0 + max(ctx.timeout, ctx.out_of_service_after + 60.0)

        async def taint_later() -> None:
            nonlocal tainted
            await asyncio.sleep(max(0.0, t0 + ctx.out_of_service_after - time.monotonic()))
            code, text = await kubectl(ctx, "taint", "node", node, disruption.OUT_OF_SERVICE_TAINT)
            if code != 0:
                out.notes.append(f"out-of-service taint of {node} failed: {text.strip()}")
            out.marks.append((round(time.monotonic() - t0, 2), "out-of-service"))
            tainted = True

        tainter = asyncio.create_task(taint_later())
        try:
            out.completed = await sampler.until_whole(deadline, lambda: tainted)
        finally:
            if not tainter.done():
                tainter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await tainter
    finally:
        await sampler.stop()
        out.samples = sampler.samples
    summary = disruption.summarize(out.samples, len(sampler.gangs), PERIOD)
    out.extra.update(summary.as_extra())
    out.extra["out_of_service_after_s"] = ctx.out_of_service_after


async def power_on(ctx: Context, node: str) -> tuple[bool, list[str]]:
    """Undo a node loss: remove the out-of-service taint, delete the Lease so that KWOK
    takes the node back, wait for it to be Ready. (Ready again, notes.)"""
    notes = []
    code, text = await kubectl(ctx, "taint", "node", node, f"{disruption.OUT_OF_SERVICE}-")
    if code != 0 and "not found" not in text:
        notes.append(f"removing the out-of-service taint of {node}: {text.strip()}")
    code, text = await kubectl(
        ctx, "-n", node_power.NODE_LEASE_NAMESPACE, "delete", "lease", node, "--ignore-not-found"
    )
    if code != 0:
        notes.append(f"deleting the Lease of {node}: {text.strip()}")
    deadline = time.monotonic() + NODE_BACK_TIMEOUT
    while time.monotonic() < deadline:
        code, text = await kubectl(ctx, "get", "node", node, "-o", READY_JSONPATH)
        if code == 0 and text.strip() == "True":
            return True, notes
        await asyncio.sleep(2.0)
    notes.append(f"node {node} not Ready {NODE_BACK_TIMEOUT:.0f} s after its Lease was deleted")
    return False, notes
