"""Several operator replicas on the real control plane, started exactly as the shipped
Deployment starts them (its args, `POD_NAME` and `POD_NAMESPACE` set, each replica a
supervisor with worker processes in a process group of its own, like a container):

- every shard Lease is held by exactly one worker, named `<pod>-worker-<n>`;
- `kill -9` of a whole replica in the middle of a rollout: the other replica takes its
  shards within the lease duration, no pod is created twice for one template, no pod of the
  new template is deleted, and `maxUnavailable` holds for every set (sampled every 100 ms);
- `SIGSTOP` of a replica for longer than the lease while its sets are edited: the other
  replica does the work, and after `SIGCONT` the frozen one sends no write at all (its
  writes are fenced at its renew deadline; it gives its shards up and, when it takes its
  share again, finds nothing to do).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from cliques import _core
from cliques.api.pod import Pod
from cliques.kube import errors
from cliques.kube.resources import CLIQUESETS, LEASES, PODS
from cliques.operator.shard_leases import Lease
from tests.support.harness import Cluster, cliqueset, wait_for

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
SHARDS = 16  # the shipped default
LEASE_DURATION, RETRY_PERIOD = 15.0, 2.0  # the shipped defaults
GANGS, PODS_PER_GANG = 3, 2


def shipped_args() -> list[str]:
    """The operator container's args in deploy/operator/deployment.yaml."""
    docs = yaml.safe_load_all((ROOT / "deploy/operator/deployment.yaml").read_text())
    deployment = next(d for d in docs if d and d.get("kind") == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = list(container["args"])
    assert args[0] == "operator" and "--leases" in args, args
    return args


def drop_flag(args: list[str], flag: str) -> list[str]:
    """`args` without `flag` (and its value): the test gives its own metrics address."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == flag:
            skip = True
            continue
        if a.startswith(flag + "="):
            continue
        out.append(a)
    return out


class Replica:
    """One operator pod: a supervisor and its workers in one process group."""

    def __init__(
        self, pod: str, kubeconfig: str, ns: str, tmp: Path, env: dict[str, str] | None = None
    ) -> None:
        self.pod = pod
        self.tmp = tmp / pod
        self.tmp.mkdir()
        self.log_path = self.tmp / "operator.log"
        args = drop_flag(drop_flag(shipped_args(), "--metrics-port"), "--metrics-bind-address")
        args = drop_flag(args, "--log-format")
        env = {
            **os.environ,
            "POD_NAME": pod,
            "POD_NAMESPACE": ns,
            "TMPDIR": str(self.tmp),  # its runtime (and metrics) directory lands here
            **(env or {}),
        }
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable, "-m", "cliques", *args,
                    "--kubeconfig", kubeconfig, "--namespace", ns,
                    "--metrics-bind-address", "127.0.0.1:0", "--metrics-port", "0",
                    "--log-format", "text",
                ],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def signal(self, sig: int) -> None:
        os.killpg(self.proc.pid, sig)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def writes(self) -> int:
        """Write requests this replica's processes have sent (answered), Leases aside,
        from the Prometheus files they keep (readable while they are stopped)."""
        from prometheus_client import CollectorRegistry, multiprocess

        dirs = list(self.tmp.glob("cliques-operator-*/metrics"))
        if not dirs:
            return 0
        reg = CollectorRegistry()
        multiprocess.MultiProcessCollector(reg, path=str(dirs[0]))  # type: ignore[no-untyped-call]
        total = 0
        for metric in reg.collect():
            if metric.name != "cliques_api_requests":
                continue
            for s in metric.samples:
                if (
                    s.name.endswith("_total")
                    and s.labels["verb"] in ("create", "update", "patch", "delete")
                    and s.labels["resource"] != "leases"
                ):
                    total += int(s.value)
        return total

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.signal(signal.SIGCONT)
                self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait()
        with contextlib.suppress(ProcessLookupError):
            self.signal(signal.SIGKILL)  # no worker outlives its replica


@contextlib.contextmanager
def replicas(kubeconfig: str, ns: str, tmp: Path, a_env: dict[str, str] | None = None) -> Any:
    started = [
        Replica(f"cliques-operator-5c8d-{c}", kubeconfig, ns, tmp, a_env if c == "a" else None)
        for c in "ab"
    ]
    try:
        yield started
    finally:
        for r in started:
            r.stop()


async def shard_holders(cluster: Cluster) -> dict[int, str]:
    raw = await cluster.client.list_page(
        LEASES, cluster.namespace, label_selector="cliques.dev/lease=shard"
    )
    out = {}
    for lease in msgspec.json.decode(raw, type=_Leases).items:
        if lease.spec.holder_identity:
            out[int(lease.metadata.name.rsplit("-", 1)[1])] = lease.spec.holder_identity
    return out


class _Leases(msgspec.Struct):
    items: list[Lease] = []


def set_names(ns: str, count: int) -> list[str]:
    """CliqueSet names in `count` different shards."""
    names, shards = [], set()
    for i in range(10_000):
        shard = _core.bucket_of(ns, f"s{i}") * SHARDS // 256
        if shard not in shards:
            shards.add(shard)
            names.append(f"s{i}")
            if len(names) == count:
                return names
    raise AssertionError("not enough shards")


async def split_evenly(cluster: Cluster, pods: list[str]) -> dict[int, str]:
    workers = {f"{p}-worker-{n}" for p in pods for n in range(2)}

    async def even() -> dict[int, str] | None:
        held = await shard_holders(cluster)
        counts: dict[str, int] = defaultdict(int)
        for holder in held.values():
            counts[holder] += 1
        share = SHARDS // len(workers)
        ok = len(held) == SHARDS and set(counts) == workers and set(counts.values()) == {share}
        return held if ok else None

    return await wait_for(even, timeout=90, what=f"{SHARDS} shards split between {sorted(workers)}")


class Sampler:
    """Every 100 ms: each set's gangs with fewer Ready pods than they should have; and,
    from a watch, every pod's UIDs and which pods were deleted with which template hash."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.max_down: dict[str, int] = defaultdict(int)
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            pods = await self.cluster.list(PODS, Pod)
            ready: dict[tuple[str, str], int] = defaultdict(int)
            for p in pods:
                key = (
                    p.metadata.labels.get("cliques.dev/cliqueset", ""),
                    p.metadata.labels.get("cliques.dev/gang-index", ""),
                )
                ready[key] += 1 if p.is_ready and not p.metadata.deletion_timestamp else 0
            down: dict[str, int] = defaultdict(int)
            for (cqs, _gang), n in ready.items():
                down[cqs] += n < PODS_PER_GANG
            for cqs, n in down.items():
                self.max_down[cqs] = max(self.max_down[cqs], n)
            self.samples += 1
            await asyncio.sleep(0.1)

    async def __aenter__(self) -> Sampler:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@contextlib.asynccontextmanager
async def pod_history(cluster: Cluster) -> AsyncIterator[dict[str, Any]]:
    """Every pod's UIDs and the template hashes of the pods that were deleted."""
    from cliques.kube.informer import Informer

    history: dict[str, Any] = {"uids": defaultdict(set), "deleted": []}
    informer: Any = Informer(cluster.client, PODS, Pod, namespace=cluster.namespace)

    def on(kind: str, _old: Any, new: Pod) -> None:
        history["uids"][new.metadata.name].add(new.metadata.uid)
        if kind == "DELETED":
            history["deleted"].append(
                (new.metadata.name, new.metadata.labels.get("cliques.dev/template-hash"))
            )

    informer.add_handler(on)
    task = asyncio.create_task(informer.run())
    try:
        await wait_for(lambda: _synced(informer), timeout=30, what="pod history synced")
        yield history
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _synced(informer: Any) -> bool:
    return bool(informer.synced.is_set())


async def test_replicas_split_shards_and_survive_a_kill_mid_rollout(
    cluster: Cluster, crds: str, tmp_path: Path
) -> None:
    ns = cluster.namespace
    names = set_names(ns, 8)
    with replicas(crds, ns, tmp_path) as (a, b):
        held = await split_evenly(cluster, [a.pod, b.pod])
        for name in names:
            await cluster.apply(cliqueset(name=name, replicas=GANGS, leader=1, workers=1))
        for name in names:
            await cluster.wait_available(name)
        a_sets = [
            n for n in names if held[_core.bucket_of(ns, n) * SHARDS // 256].startswith(a.pod)
        ]
        assert a_sets and len(a_sets) < len(names), held  # both replicas have sets

        async with pod_history(cluster) as history, Sampler(cluster) as sampler:
            for name in names:
                await cluster.apply(
                    cliqueset(name=name, replicas=GANGS, leader=1, workers=1, image="busybox:1.37")
                )

            async def rolling() -> bool:  # some of a's pods replaced, not all
                return sum(len(u) > 1 for u in history["uids"].values()) >= 2

            await wait_for(rolling, timeout=60, what="the rollout under way")
            killed = time.monotonic()
            a.signal(signal.SIGKILL)

            async def taken() -> bool:
                held = await shard_holders(cluster)
                return len(held) == SHARDS and all(h.startswith(b.pod) for h in held.values())

            await wait_for(taken, timeout=60, what="b to hold every shard")
            takeover = time.monotonic() - killed
            for name in names:
                await cluster.wait_available(name, timeout=120)
            final = {p.metadata.name: p for p in await cluster.pods()}

        assert takeover <= LEASE_DURATION + 2 * RETRY_PERIOD + 2, f"takeover took {takeover:.1f}s"
        new_hashes = {p.metadata.labels["cliques.dev/template-hash"] for p in final.values()}
        assert len(final) == len(names) * GANGS * PODS_PER_GANG
        # every pod replaced exactly once: no duplicate create, nothing created twice
        assert {n: len(history["uids"][n]) for n in final} == {n: 2 for n in final}
        wrong = [(n, h) for n, h in history["deleted"] if h in new_hashes]
        assert wrong == [], f"pods of the new template deleted: {wrong}"
        assert sampler.samples > 50
        over = {k: v for k, v in sampler.max_down.items() if v > 1}
        assert over == {}, f"maxUnavailable 1 exceeded: {over}"
        assert "Traceback" not in b.log(), b.log()[-3000:]


async def test_a_frozen_replica_writes_nothing_after_its_renew_deadline(
    cluster: Cluster, crds: str, tmp_path: Path
) -> None:
    ns = cluster.namespace
    names = set_names(ns, 8)
    # a's Clique and Pod watch events come 3 s late (its CliqueSet events do not): when it
    # wakes up it sees the new gang counts before the Cliques b made for them, the stale
    # cache that would make it create them again
    stale = {"CLIQUES_FAULT_WATCH_DELAY": "3"}
    with replicas(crds, ns, tmp_path, a_env=stale) as (a, b):
        held = await split_evenly(cluster, [a.pod, b.pod])
        for name in names:
            await cluster.apply(cliqueset(name=name, replicas=2, leader=1, workers=1))
        for name in names:
            await cluster.wait_available(name)
        a_sets = [
            n for n in names if held[_core.bucket_of(ns, n) * SHARDS // 256].startswith(a.pod)
        ]
        assert a_sets, held

        # a is idle (no write for longer than the status hold) before it is frozen
        last = {"n": a.writes(), "at": time.monotonic()}

        async def idle() -> bool:
            n = a.writes()
            if n != last["n"]:
                last.update(n=n, at=time.monotonic())
            return time.monotonic() - last["at"] > 11

        await wait_for(idle, timeout=60, what="replica a idle")
        a.signal(signal.SIGSTOP)
        frozen_writes = a.writes()
        for name in names:  # work for a's shards while it is frozen
            await cluster.apply(cliqueset(name=name, replicas=3, leader=1, workers=1))

        async def taken() -> bool:
            held = await shard_holders(cluster)
            return len(held) == SHARDS and all(h.startswith(b.pod) for h in held.values())

        await wait_for(taken, timeout=60, what="b to take a's shards")
        for name in names:
            await cluster.wait_available(name, timeout=120)
        synced_before = a.log().count("caches synced")
        a.signal(signal.SIGCONT)
        # a gives its shards up, rejoins, takes its share back and syncs its caches...
        await split_evenly(cluster, [a.pod, b.pod])

        async def a_synced_again() -> bool:
            return a.log().count("caches synced") >= synced_before + SHARDS // 2

        await wait_for(a_synced_again, timeout=60, what="a's managers synced again")
        quiet_until = time.monotonic() + 5

        async def quiet() -> bool:  # it reconciles what it took back: 5 s, no write
            assert a.writes() == frozen_writes, a.log()[-4000:]
            return time.monotonic() > quiet_until

        await wait_for(quiet, timeout=30, what="5 s of a's reconciles")
        assert a.writes() == frozen_writes, a.log()[-4000:]
        assert a.proc.poll() is None, a.log()[-3000:]
        pods = await cluster.pods()
        assert len(pods) == len(names) * 3 * PODS_PER_GANG
    # the guard itself: a write refused before it is sent
    guard_client = cluster.client
    guard_client.write_guard = lambda: "test fence"
    try:
        body = cliqueset(name="fenced")
        body["metadata"]["namespace"] = cluster.namespace
        with pytest.raises(errors.Fenced, match="test fence"):
            await guard_client.patch(
                CLIQUESETS, cluster.namespace, "fenced", body, dict, patch_type="apply", force=True
            )
    finally:
        guard_client.write_guard = None
    with pytest.raises(errors.NotFound):
        await cluster.cliqueset("fenced")


async def test_workers_do_not_outlive_a_killed_supervisor(
    cluster: Cluster, crds: str, tmp_path: Path
) -> None:
    """Outside a container nothing else would stop them: they would go on reconciling."""
    replica = Replica("cliques-operator-5c8d-c", crds, cluster.namespace, tmp_path)
    try:
        await split_evenly(cluster, [replica.pod])
        workers = [
            int(line.split("pid ")[1].split(",")[0])
            for line in replica.log().splitlines()
            if "worker-" in line and " started (pid " in line
        ]
        assert len(workers) == 2, replica.log()
        replica.proc.kill()  # the supervisor alone
        replica.proc.wait()

        def gone(pid: int) -> bool:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return False

        async def all_gone() -> bool:
            return all(gone(p) for p in workers)

        await wait_for(all_gone, timeout=30, what="the workers gone")

        async def handed_back() -> bool:  # they drained and handed their leases back
            return await shard_holders(cluster) == {}

        await wait_for(handed_back, timeout=30, what="the leases handed back")
    finally:
        replica.stop()
