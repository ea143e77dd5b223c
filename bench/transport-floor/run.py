"""The floor of a deploy's operator CPU with cliques' own client and caches, measured.

A deploy of the scale benchmark's SETSxGANGSxPODS workload cannot be done with fewer writes
than: one create per Clique, per pod and per Service the planner wants (one per set, or
one per gang for `subdomainPolicy: UniquePerGang`), one status write per Clique (its
pods Ready) and one per CliqueSet. This script makes exactly those writes against a running
dev cluster, with no controller at all: the same `KubeClient` (aiohttp session, token bucket,
deadlines, request metrics), the same four label-selected `Informer`s the operator runs
(CliqueSets, Cliques, pods, Services; every watch event decoded into the operator's slim
Structs and kept in its store), the same write-through of answers into the caches, uvloop and
the operator's garbage-collector tuning, and the same 16 writes in flight. A pod is created
when its Clique's ADDED event arrives, a Clique's status is written once its pods are Ready
and a CliqueSet's once all its Cliques are written, as a perfect operator would.

Every body is built before the clock starts (pods are copied from a prepared body and given
their Clique's uid), so what is measured is the process CPU of the requests and the watch
streams alone: a floor under any operator built on this client, whatever its logic. The
kopf target of `cliques bench scale` (5x less CPU than the kopf peer) is then compared with
it.

On a dev cluster (`--cluster`) each round also records what the control plane spent
(kube-apiserver, etcd, kube-controller-manager, kube-scheduler, from /proc) from the first
write until every pod was Ready, and when that was. `--work pods` makes only the pods and
the Service, with no Cliques and no status: the control plane's floor under any operator
that deploys these pods, whatever objects of its own it adds.

    cliques dev-cluster up --nodes 100 --disable-qps-limits
    .venv/bin/python bench/transport-floor/run.py --shape 100x5x2 --rounds 3
    .venv/bin/python bench/transport-floor/run.py --shape 1x500x2 --work pods,cliques
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

import msgspec
import uvloop

from cliques import argtypes
from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.pod import Pod
from cliques.api.service import Service
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique import bodies as pod_bodies
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, CLIQUESETS, NAMESPACES, PODS, SERVICES
from cliques.operator.process import tune_gc
from cliques_lab.bench import curves, procstats, workload

IN_FLIGHT = 16  # the operator's default --concurrency
NOW = "2026-01-01T00:00:00Z"


class _Ignore(msgspec.Struct):
    """Decode target for answers nobody reads (as the operator's executor does)."""


def _condition(type_: str, reason: str, message: str, generation: int) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": NOW,
        "observedGeneration": generation,
    }


class Floor:
    """One run: the writes of one deploy, driven by the watch events, with its CPU."""

    def __init__(
        self,
        client: KubeClient,
        ns: str,
        shape: workload.Shape,
        *,
        peer_work: bool = False,
        pods_only: bool = False,
    ) -> None:
        self.client = client
        self.ns = ns
        self.shape = shape
        #: only what the kopf peer does: no Clique status, no watch of Cliques or Services
        self.peer_work = peer_work
        #: only the pods and the Services, created at once: no Cliques, no status
        self.pods_only = pods_only
        self.total_pods = shape.total_pods
        self.ready_names: set[str] = set()
        self.all_ready = asyncio.Event()
        self.ready_at = 0.0
        sel = labels.LABEL_BUCKET
        self.cqs_inf = Informer(client, CLIQUESETS, CliqueSet, namespace=ns)
        self.cq_inf = Informer(client, CLIQUES, Clique, namespace=ns, label_selector=sel)
        self.pod_inf = Informer(client, PODS, Pod, namespace=ns, label_selector=sel)
        self.svc_inf = Informer(client, SERVICES, Service, namespace=ns, label_selector=sel)
        self.informers: list[Informer[Any]] = (
            [self.cqs_inf, self.pod_inf]
            if peer_work or pods_only
            else [self.cqs_inf, self.cq_inf, self.pod_inf, self.svc_inf]
        )
        self.gate = asyncio.Semaphore(IN_FLIGHT)
        self.tasks: set[asyncio.Task[None]] = set()
        self.pods_of: dict[str, list[dict[str, Any]]] = {}  # clique -> prepared pod bodies
        self.cliques_of: dict[str, list[str]] = defaultdict(list)  # set -> clique names
        self.clique_status: dict[str, dict[str, Any]] = {}
        self.set_status: dict[str, dict[str, Any]] = {}
        self.started: set[str] = set()  # cliques whose pods were sent
        self.ready_pods: dict[str, set[str]] = defaultdict(set)  # clique -> ready pod names
        self.cliques_done: dict[str, int] = defaultdict(int)  # set -> Cliques done
        self.status_sent: set[str] = set()
        self.writes = 0
        self.done = asyncio.Event()
        self.total_writes = 0
        self.failures: list[str] = []

    async def start(self) -> None:
        await self.client.create(NAMESPACES, None, {"metadata": {"name": self.ns}}, _Ignore)
        for inf in self.informers:
            asyncio.get_running_loop().create_task(inf.run())
        for inf in self.informers:
            await asyncio.wait_for(inf.synced.wait(), 60)

    async def prepare(self) -> list[tuple[Any, dict[str, Any]]]:
        """Apply the CliqueSets (the user's part) and build every body the deploy writes."""
        names = self.shape.names()
        await asyncio.gather(
            *(
                self.client.patch(
                    CLIQUESETS,
                    self.ns,
                    n,
                    {**b, "metadata": {**b["metadata"], "namespace": self.ns}},
                    _Ignore,
                    patch_type="apply",
                    force=True,
                )
                for n in names
                for b in [workload.manifest(n, self.shape)]
            )
        )
        await _until(lambda: len(self.cqs_inf.store) == len(names), "CliqueSets cached")
        hasher = Hasher()
        creates: list[tuple[Any, dict[str, Any]]] = []
        for cqs in self.cqs_inf.store.objects():
            hashes = {c.name: hasher.template_hash(c.template) for c in cqs.spec.template.cliques}
            set_name = cqs.metadata.name
            for c, clique in _set_creates(cqs, hashes):
                creates.append((c.resource, c.body))
                if clique is None:
                    continue
                body = c.body
                tmpl_hash = body["metadata"]["labels"][labels.LABEL_TEMPLATE_HASH]
                self.pods_of[c.name] = [
                    pod_bodies.pod_body(clique, i, tmpl_hash, hasher.algorithm)
                    for i in range(clique.spec.replicas)
                ]
                self.cliques_of[set_name].append(c.name)
                self.clique_status[c.name] = {
                    "observedGeneration": 1,
                    "replicas": clique.spec.replicas,
                    "readyReplicas": clique.spec.replicas,
                    "updatedReplicas": clique.spec.replicas,
                    "templateHash": tmpl_hash,
                    "hashAlgorithm": hasher.algorithm,
                    "selector": f"{labels.LABEL_CLIQUE}={c.name}",
                    "conditions": [
                        _condition("Ready", "MinAvailable", "all pods ready", 1),
                        _condition("Available", "MinAvailable", "all pods ready", 1),
                    ],
                }
            gangs = cqs.spec.replicas
            self.set_status[set_name] = {
                "observedGeneration": cqs.metadata.generation,
                "replicas": gangs,
                "readyReplicas": gangs,
                "availableReplicas": gangs,
                "updatedReplicas": gangs,
                "templateHash": "x" * 16,
                "hashAlgorithm": hasher.algorithm,
                "selector": f"{labels.LABEL_CLIQUESET}={set_name}",
                "conditions": [
                    _condition("Available", "MinAvailable", f"{gangs}/{gangs} gangs ready", 1),
                    _condition("Progressing", "Complete", "every gang updated", 1),
                ],
            }
        if self.pods_only:
            # The Services and every pod, sent at once, owned by nobody (no Clique exists).
            pods = [pod for bodies in self.pods_of.values() for pod in bodies]
            for pod in pods:
                pod["metadata"].pop("ownerReferences", None)
            creates = [(r, b) for r, b in creates if r is SERVICES] + [(PODS, p) for p in pods]
            self.total_writes = len(creates)
            self.pod_inf.add_handler(self._on_pod)
            return creates
        self.total_writes = len(creates) + sum(len(p) for p in self.pods_of.values())
        self.total_writes += len(self.set_status)
        if not self.peer_work:
            self.total_writes += len(self.clique_status)
            self.cq_inf.add_handler(self._on_clique)
        self.pod_inf.add_handler(self._on_pod)
        return creates

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _write(self, inf: Informer[Any] | None, coro_fn: Any) -> None:
        async with self.gate:
            try:
                raw = await coro_fn()
            except Exception as exc:  # counted and reported
                self.failures.append(f"{type(exc).__name__}: {exc}")
                raw = None
        if raw is not None and inf is not None:
            inf.observe_write(bytes(raw))
        self.writes += 1
        if self.writes == self.total_writes:
            self.done.set()

    def create(self, resource: Any, body: dict[str, Any]) -> None:
        """A create whose answer nobody reads (the operator's executor decodes it into an
        empty Struct and leaves the new object to the watch)."""
        self._spawn(self._write(None, lambda: self.client.create(resource, self.ns, body, _Ignore)))

    async def _create_clique(self, body: dict[str, Any]) -> None:
        """The peer's way: create a Clique, then its pods with the uid from the answer."""
        answer: list[Clique] = []

        async def send() -> msgspec.Raw:
            raw = await self.client.create(CLIQUES, self.ns, body, msgspec.Raw)
            answer.append(self.client.decoder(Clique).decode(raw))
            return raw

        await self._write(None, send)
        if answer:
            self._on_clique("ADDED", None, answer[0])

    def _on_clique(self, kind: str, old: Any, new: Clique) -> None:
        name = new.metadata.name
        if kind != "ADDED" or name in self.started:
            return
        self.started.add(name)
        for pod in self.pods_of[name]:
            pod["metadata"]["ownerReferences"][0]["uid"] = new.metadata.uid
            self.create(PODS, pod)

    def _on_pod(self, kind: str, old: Any, new: Pod) -> None:
        if kind == "DELETED" or not new.is_ready:
            return
        if new.metadata.name not in self.ready_names:
            self.ready_names.add(new.metadata.name)
            if len(self.ready_names) == self.total_pods:
                self.ready_at = time.monotonic()
                self.all_ready.set()
        ref = new.metadata.controller_ref()
        clique = ref.name if ref is not None else None
        if clique is None or clique in self.status_sent:
            return
        ready = self.ready_pods[clique]
        ready.add(new.metadata.name)
        if len(ready) == len(self.pods_of[clique]):
            self.status_sent.add(clique)
            if self.peer_work:
                self._clique_done(clique)
            else:
                self._spawn(self._write_clique_status(clique))

    async def _write_clique_status(self, clique: str) -> None:
        await self._patch_status(self.cq_inf, CLIQUES, clique, self.clique_status[clique])
        self._clique_done(clique)

    def _clique_done(self, clique: str) -> None:
        """One more Clique of its set is done: the set's status goes once all are."""
        set_name = clique.rsplit("-", 2)[0]
        self.cliques_done[set_name] += 1
        if self.cliques_done[set_name] == len(self.cliques_of[set_name]):
            status = self.set_status[set_name]
            self._spawn(self._patch_status(self.cqs_inf, CLIQUESETS, set_name, status))

    async def _patch_status(
        self, inf: Informer[Any], resource: Any, name: str, status: dict[str, Any]
    ) -> None:
        await self._write(
            inf,
            lambda: self.client.patch(
                resource, self.ns, name, {"status": status}, msgspec.Raw, sub="status"
            ),
        )

    async def measure(self, creates: list[tuple[Any, dict[str, Any]]], timeout: float) -> float:
        """Send the creates and let the events drive the rest; the CPU seconds it took."""
        cpu0 = time.process_time()
        for resource, body in creates:
            if self.peer_work and resource is CLIQUES:
                self._spawn(self._create_clique(body))
            else:
                self.create(resource, body)
        await asyncio.wait_for(self.done.wait(), timeout)
        await asyncio.wait_for(self.all_ready.wait(), timeout)
        # Let the watch events of the last writes arrive, as they do to an operator.
        await _until(self._caught_up, "watch events of the last writes", timeout=30)
        return time.process_time() - cpu0

    def _caught_up(self) -> bool:
        if self.pods_only:
            return True
        sets = self.cqs_inf.store.objects()
        cliques = [] if self.peer_work else self.cq_inf.store.objects()
        return all(s.status is not None and s.status.ready_replicas for s in sets) and all(
            c.status is not None and c.status.ready_replicas for c in cliques
        )

    async def stop(self, timeout: float) -> None:
        """Delete the namespace and wait until it is gone: the garbage collection of the
        last round must not run during the next one."""
        for task in list(self.tasks):
            task.cancel()
        await self.client.delete(NAMESPACES, None, self.ns)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                await self.client.get(NAMESPACES, None, self.ns, _Ignore)
            except errors.NotFound:
                return
            await asyncio.sleep(1)
        raise TimeoutError(f"namespace {self.ns} still there after {timeout:g}s")


def _set_creates(cqs: CliqueSet, hashes: dict[str, str]) -> list[tuple[Any, Clique | None]]:
    """Every create of the set's deploy, with each Clique as the cache will show it: the
    planner makes at most `CREATE_BURST` creates per plan, so it plans again with what it
    made (as the operator does when the watch shows them) until nothing is left."""
    out: list[tuple[Any, Clique | None]] = []
    made: list[Clique] = []
    services: list[Service] = []
    while True:
        snap = cliqueset_planner.CliqueSetSnapshot(
            cliqueset=cqs, cliques=list(made), services=list(services), hashes=hashes
        )
        plan = cliqueset_planner.plan(snap)
        if not plan.creates:
            return out
        for c in plan.creates:
            meta = {**c.body["metadata"], "uid": f"uid-{len(out)}"}
            if c.resource is CLIQUES:
                clique = msgspec.convert({**c.body, "metadata": meta}, Clique)
                made.append(clique)
                out.append((c, clique))
            else:
                if c.resource is SERVICES:
                    services.append(msgspec.convert({**c.body, "metadata": meta}, Service))
                out.append((c, None))


async def _until(cond: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def one_round(
    kubeconfig: str | None,
    shape: workload.Shape,
    timeout: float,
    work: str,
    plane: dict[str, int],
) -> dict[str, Any]:
    client = await KubeClient.connect(kubeconfig, qps=200.0, burst=400)
    ns = f"floor-{int(time.time() * 1000) % 10**8}"
    floor = Floor(client, ns, shape, peer_work=work == "peer", pods_only=work == "pods")
    try:
        await floor.start()
        creates = await floor.prepare()
        plane0 = procstats.cpu_of(plane)
        wall0 = time.monotonic()
        cpu = await floor.measure(creates, timeout)
        wall = time.monotonic() - wall0
        spent = procstats.cpu_delta(procstats.cpu_of(plane), plane0)
    finally:
        await floor.stop(timeout)
        await client.close()
    if floor.failures:
        raise RuntimeError(f"{len(floor.failures)} writes failed, first: {floor.failures[0]}")
    return {
        "cpu": cpu,
        "wall": wall,
        "writes": floor.writes,
        "ready": floor.ready_at - wall0,
        "plane": spent.get("cpu_control_plane"),
        "spent": spent,
    }


WORK = {
    "cliques": "cliques' writes: Cliques, pods, Services, Clique and CliqueSet status",
    "peer": "the kopf peer's writes: Cliques, pods, Services, CliqueSet status",
    "pods": "the pods and Services alone, created at once (the control plane's floor)",
}


def _plane(cluster: str) -> dict[str, int]:
    """The dev cluster `cluster`'s control-plane pids, the components `cliques bench plot`
    counts (the fake kubelets left out); empty if it does not run."""
    from cliques_lab.devcluster import cluster as devcluster

    found = devcluster.status(cluster)
    return {
        c.name: c.pid
        for c in found.components
        if c.running and c.pid is not None and c.name in curves.CONTROL_PLANE
    }


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--kubeconfig", help="default: $KUBECONFIG (e.g. cliques dev-cluster env)")
    p.add_argument(
        "--shape",
        type=workload.Shape.parse,
        default=workload.Shape.parse("100x5x2"),
        help="SETSxGANGSxPODS, as for cliques bench scale (default 100x5x2)",
    )
    p.add_argument("--rounds", type=argtypes.int_at_least(1), default=3, help="default 3")
    p.add_argument(
        "--timeout", type=argtypes.seconds(), default=300.0, help="per round, s (default 300)"
    )
    p.add_argument(
        "--cluster",
        default="cliques",
        help="the dev cluster whose control plane's CPU is counted (default cliques)",
    )
    p.add_argument(
        "--work",
        default="cliques,peer",
        help="comma list, run interleaved each round:\n"
        + "\n".join(f"  {k}: {v}" for k, v in WORK.items()),
    )
    args = p.parse_args()
    works = [w.strip() for w in args.work.split(",") if w.strip()]
    unknown = [w for w in works if w not in WORK]
    if unknown or not works:
        p.error(f"--work: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(WORK)}")
    tune_gc()
    try:
        plane = _plane(args.cluster)
    except ValueError as exc:
        p.error(f"--cluster: {exc}")
    if not plane:
        print(f"(dev cluster {args.cluster!r} not found: the control plane is not counted)")
    results: dict[str, list[dict[str, Any]]] = {w: [] for w in works}
    try:
        for i in range(args.rounds):
            for work in works:
                gc.collect()
                r = uvloop.run(one_round(args.kubeconfig, args.shape, args.timeout, work, plane))
                line = (
                    f"round {i + 1} {work}: {r['writes']} writes, {r['wall']:.1f} s wall, "
                    f"{r['cpu']:.2f} s CPU ({r['cpu'] / r['writes'] * 1e6:.0f} us per write), "
                    f"every pod Ready at {r['ready']:.1f} s"
                )
                if r["plane"] is not None:
                    parts = ", ".join(
                        f"{k.removeprefix('cpu_')} {v:.1f}"
                        for k, v in r["spent"].items()
                        if k != "cpu_control_plane"
                    )
                    line += f"; control plane {r['plane']:.1f} s ({parts})"
                print(line, flush=True)
                results[work].append(r)
    except (OSError, TimeoutError, RuntimeError) as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    for work, rounds in results.items():
        line = f"{args.shape} {work}: " + _median("floor CPU", [r["cpu"] for r in rounds])
        line += "; " + _median("every pod Ready at", [r["ready"] for r in rounds])
        if all(r["plane"] is not None for r in rounds):
            line += "; " + _median("control plane CPU", [r["plane"] for r in rounds])
        print(f"{line} over {len(rounds)} rounds")
    return 0


def _median(what: str, values: list[float]) -> str:
    return (
        f"{what} median {statistics.median(values):.2f} s "
        f"(min {min(values):.2f}, max {max(values):.2f})"
    )


if __name__ == "__main__":
    sys.exit(main())
