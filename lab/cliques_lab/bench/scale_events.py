"""What one scale of one scaling-group instance costs the operator, in a set of many gangs.

A CliqueSet of `--gangs` gangs, each a leader and a `workers` scaling group (one instance
of one worker pod to start with), runs under `cliques operator` (one worker process, QPS
limits off) on a dev cluster. Once every gang is Available and the operator has been idle
for `--idle` seconds (its idle CPU rate measured), the script scales `--events` different
gangs' CliqueScalingGroups one after the other through the scale subresource, each from 1
instance to 2 (`--down` also back to 1, as a second event), waiting for each to settle: the
new instance's pod Ready (or gone), the CliqueScalingGroup's status reporting it, and the
set Available. The operator's CPU (its whole process tree, from /proc) over the events,
less its idle rate over the same time, divided by the events, is the cost of one scale
event; the wall time of each event is recorded too.

    cliques dev-cluster up --name cliques-events --nodes 100 --disable-qps-limits
    cliques bench scale-events --cluster cliques-events --gangs 1000 --events 24 --down

The result goes to bench/results/scale-events-<gangs>-<backend>-<time>.json (`--results`
says where) and is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cliques import data
from cliques.controllers.features import scaling
from cliques.kube.client import KubeClient
from cliques.kube.resources import CLIQUESETS, NAMESPACES, PODS, SCALING_GROUPS
from cliques_lab.bench import opmetrics, workload
from cliques_lab.bench.scale import Sampler
from cliques_lab.devcluster import cluster as devcluster

NAME = "events"


def manifest(gangs: int, backend: str = "Auto") -> dict[str, Any]:
    """The CliqueSet: per gang a leader and one instance of a `workers` group of one pod,
    gang-scheduled through `backend` (on 1.37, `Auto` makes each gang a CompositePodGroup
    with a PodGroup per instance)."""
    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": NAME},
        "spec": {
            "replicas": gangs,
            "gangScheduling": {"backend": backend},
            "template": {
                "cliques": [
                    {"name": "leader", "template": workload.pod_template("leader", "busybox:1")},
                    {"name": "worker", "template": workload.pod_template("worker", "busybox:1")},
                ],
                "scalingGroups": [
                    {"name": "workers", "cliques": ["worker"], "replicas": 1, "minAvailable": 1}
                ],
            },
        },
    }


def spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start the operator in its own process group, its output to `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def install_crds(cluster: str) -> None:
    """Apply the operator's CRDs to the dev cluster and wait until they are established."""
    info = devcluster.info(cluster)
    kubectl = [str(info.kubectl)]
    with data.as_path(data.CRDS) as crds:
        for args in (
            ["apply", "--server-side", "--force-conflicts", "-f", str(crds)],
            ["wait", "--for=condition=established", "--timeout=60s", "crd", "--all"],
        ):
            subprocess.run(kubectl + args, env=info.env(), check=True, capture_output=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def until(check: Any, what: str, timeout: float) -> float:
    """Poll the async `check` until it is true; the seconds it took."""
    t0 = time.monotonic()
    while not await check():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


async def available(client: KubeClient, ns: str, generation_seen: bool = True) -> bool:
    raw = json.loads(await client.get_path(CLIQUESETS.path(ns, NAME)))
    st = raw.get("status") or {}
    ok = any(c["type"] == "Available" and c["status"] == "True" for c in st.get("conditions", []))
    fresh = st.get("observedGeneration") == raw["metadata"]["generation"]
    return ok and (fresh or not generation_seen)


async def ready_pods(client: KubeClient, ns: str, selector: str) -> int:
    raw = json.loads(await client.list_page(PODS, ns, label_selector=selector, limit=100))
    return sum(
        1
        for p in raw["items"]
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions", [])
        )
    )


async def one_event(client: KubeClient, ns: str, gang: int, instances: int) -> float:
    """Scale gang `gang`'s group to `instances` and wait until it settled; the wall time."""
    group = f"{NAME}-{gang}-workers"
    t0 = time.monotonic()
    await client.patch(
        SCALING_GROUPS, ns, group, {"spec": {"replicas": instances}}, dict, sub="scale"
    )
    selector = scaling.selector(NAME, gang, "workers")

    async def settled() -> bool:
        if await ready_pods(client, ns, selector) != instances:
            return False
        raw = json.loads(await client.get_path(SCALING_GROUPS.path(ns, group)))
        st = raw.get("status") or {}
        if (st.get("replicas"), st.get("readyReplicas")) != (instances, instances):
            return False
        return await available(client, ns)

    await until(settled, f"{group} at {instances} instance(s)", 120)
    return time.monotonic() - t0


async def main(args: argparse.Namespace) -> dict[str, Any]:
    info = devcluster.info(args.cluster)
    kubeconfig = str(info.kubeconfig)
    client = await KubeClient.connect(kubeconfig, qps=0, field_manager="cliques-bench")
    ns = f"bench-events-{int(time.time())}"
    port = free_port()
    log = Path(args.log or f"/tmp/{ns}.log")
    proc: subprocess.Popen[bytes] | None = None
    try:
        await client.create(
            NAMESPACES,
            None,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            dict,
        )
        argv = [
            sys.executable, "-m", "cliques", "operator", "--workers", "1",
            "--kubeconfig", kubeconfig, "--namespace", ns, "--metrics-port", str(port),
            "--qps", "0", "--log-level", "warning",
        ]  # fmt: skip
        proc = spawn(argv, log)
        sampler = Sampler(proc.pid)
        body = manifest(args.gangs, args.backend)
        body["metadata"]["namespace"] = ns
        t_apply = time.monotonic()
        await client.patch(CLIQUESETS, ns, NAME, body, dict, patch_type="apply", force=True)
        deploy = await until(lambda: available(client, ns), "the set Available", args.timeout)
        print(f"{args.gangs} gangs Available in {deploy:.1f}s", file=sys.stderr)
        await asyncio.sleep(args.settle)  # the status writes that follow Available
        cpu0, t0 = sampler.sample(), time.monotonic()
        await asyncio.sleep(args.idle)
        idle_rate = (sampler.sample() - cpu0) / (time.monotonic() - t0)
        print(f"operator idle: {idle_rate * 1000:.1f} ms CPU per second", file=sys.stderr)

        walls: list[float] = []
        own0 = await asyncio.to_thread(opmetrics.scrape, port)
        cpu0, t0 = sampler.sample(), time.monotonic()
        step = max(1, args.gangs // args.events)
        for i in range(args.events):
            gang = (i * step) % args.gangs
            walls.append(await one_event(client, ns, gang, 2))
            if args.down:
                walls.append(await one_event(client, ns, gang, 1))
            print(f"event {len(walls)}: gang {gang}, {walls[-1]:.2f}s", file=sys.stderr)
        # the writes that follow the last event's settling (status holds, debounces)
        await asyncio.sleep(args.settle)
        elapsed = time.monotonic() - t0
        spent = sampler.sample() - cpu0
        own = opmetrics.delta(await asyncio.to_thread(opmetrics.scrape, port), own0)
        events = len(walls)
        per_event = (spent - idle_rate * elapsed) / events
        result = {
            "benchmark": "scale-events",
            "cluster": args.cluster,
            "gangs": args.gangs,
            "backend": args.backend,
            "pods": args.gangs * 2,
            "events": events,
            "down": args.down,
            "deploy_seconds": round(deploy, 2),
            "operator_idle_cpu_ms_per_s": round(idle_rate * 1000, 2),
            "operator_cpu_seconds": round(spent, 3),
            "elapsed_seconds": round(elapsed, 2),
            "operator_cpu_ms_per_event": round(per_event * 1000, 1),
            "operator_cpu_ms_per_event_with_idle": round(spent / events * 1000, 1),
            "event_wall_seconds_median": round(statistics.median(walls), 2),
            "event_wall_seconds": [round(w, 2) for w in walls],
            "python": sys.version.split()[0],
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "apply_to_events_seconds": round(t0 - t_apply, 1),
            "operator_counters_per_event": {k: round(v / events, 2) for k, v in own.items()},
        }
        return result
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        await client.delete(NAMESPACES, None, ns)
        await client.close()


def run(args: argparse.Namespace) -> int:
    """Run the benchmark: print the result, and save it unless `--no-save`."""
    install_crds(args.cluster)
    out = asyncio.run(main(args))
    print(json.dumps(out, indent=2))
    if not args.no_save:
        args.results.mkdir(parents=True, exist_ok=True)
        stamp = out["time"].replace("-", "").replace(":", "")
        path = args.results / f"scale-events-{args.gangs}-{args.backend.lower()}-{stamp}.json"
        path.write_text(json.dumps(out, indent=2) + "\n")
        print(f"saved {path}", file=sys.stderr)
    return 0
