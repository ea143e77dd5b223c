"""The floor of an in-place image roll's control-plane CPU and time on the dev cluster,
measured with no operator at all.

`cliques bench scale`'s `in-place-update` phase changes the image of every pod of a
SETSxGANGSxPODS CliqueSet in place, `maxUnavailable` gangs at a time. Whatever operator
does it, the least it can write is one patch per pod; what the control plane then spends
is the kubelet's side (KWOK's `pod-image-*` stages: Ready drops, the container restarts,
Ready returns) and what follows each Ready flip (kube-controller-manager rewriting the
EndpointSlices of the pods' headless Service). This script makes exactly that: the same
pods (the benchmark's pod template, one headless Service over them), created and Ready
before the clock starts; then, with no Clique, no CliqueSet and no status writes, it
patches the image of each gang's pods as a perfect in-place operator would, keeping
`--max-unavailable` gangs in flight and starting the next as soon as one has every pod on
the new image and Ready. It records the wall time and the CPU of the control plane (the
components `cliques bench scale` counts: kube-apiserver, etcd, kube-controller-manager,
kube-scheduler, and KWOK's controller) from the first patch until the last pod is back.

    cliques dev-cluster up --name cliques-floor
    .venv/bin/python bench/inplace-floor/run.py --cluster cliques-floor --shape 1x500x2

Compare with the `in-place-update` and `rolling-update` rows of the same shape in
docs/performance.md: no in-place roll on this cluster costs less than this.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from cliques.api.pod import Pod
from cliques.controllers.features import inplace
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer
from cliques.kube.resources import NAMESPACES, PODS, SERVICES
from cliques_lab.bench import procstats, workload
from cliques_lab.devcluster import cluster as devcluster

PLANE = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok-controller")
GANG = "floor.cliques.dev/gang"


def pod_body(ns: str, name: str, gang: int, role: str, image: str) -> dict[str, Any]:
    tmpl = workload.pod_template(role, image)
    meta = {**tmpl["metadata"], "name": name, "namespace": ns}
    meta["labels"] = {**meta["labels"], GANG: str(gang)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]}


def service_body(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "floor", "namespace": ns},
        "spec": {
            "clusterIP": "None",
            "selector": {"app": "bench"},
            "ports": [{"name": "http", "port": 8000}, {"name": "metrics", "port": 9000}],
        },
    }


def settled(pod: Pod, image: str) -> bool:
    statuses = {s.name: s for s in pod.status.container_statuses}
    main = statuses.get("main")
    return pod.is_ready and main is not None and inplace.image_matches(image, main.image)


async def until(cond: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.05)


async def one_round(
    kubeconfig: str, shape: workload.Shape, budget: int, plane: dict[str, int], timeout: float
) -> dict[str, Any]:
    client = await KubeClient.connect(kubeconfig, qps=0)
    ns = f"inplace-floor-{int(time.time() * 1000) % 10**8}"
    pods: Any = Informer(client, PODS, Pod, namespace=ns)
    task = asyncio.create_task(pods.run())
    try:
        await client.create(NAMESPACES, None, {"metadata": {"name": ns}}, dict)
        await until(pods.synced.is_set, "the pod watch", 30)
        await client.create(SERVICES, ns, service_body(ns), dict)
        gangs: dict[int, list[str]] = {}
        sem = asyncio.Semaphore(16)

        async def create(body: dict[str, Any]) -> None:
            async with sem:
                await client.create(PODS, ns, body, dict)

        bodies = []
        for g in range(shape.gangs * shape.sets):
            for role, n in shape.roles():
                for i in range(n):
                    name = f"g{g}-{role}-{i}"
                    gangs.setdefault(g, []).append(name)
                    bodies.append(pod_body(ns, name, g, role, "busybox:1.36"))
        await asyncio.gather(*(create(b) for b in bodies))
        total = len(bodies)

        def all_on(image: str) -> bool:
            objs = pods.store.objects()
            return len(objs) == total and all(settled(p, image) for p in objs)

        await until(lambda: all_on("busybox:1.36"), "every pod Ready", timeout)
        new = "busybox:1.37"

        def gang_done(g: int) -> bool:
            return all(
                (p := pods.store.get(f"{ns}/{n}")) is not None and settled(p, new) for n in gangs[g]
            )

        async def roll(g: int) -> None:
            for name in gangs[g]:
                patch = [{"op": "replace", "path": "/spec/containers/0/image", "value": new}]
                await client.patch(PODS, ns, name, patch, dict, patch_type="json")
            await until(lambda: gang_done(g), f"gang {g} on {new}", timeout)

        cpu0 = procstats.cpu_of(plane)
        wall0 = time.monotonic()
        queue = list(gangs)
        running: set[asyncio.Task[None]] = set()
        while queue or running:
            while queue and len(running) < budget:
                running.add(asyncio.create_task(roll(queue.pop(0))))
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()
        wall = time.monotonic() - wall0
        spent = procstats.cpu_delta(procstats.cpu_of(plane), cpu0)
        return {"wall": wall, "patches": total, "cpu": spent}
    finally:
        task.cancel()
        await client.delete(NAMESPACES, None, ns)
        await client.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cluster", default="cliques-floor", help="a running dev cluster's name")
    p.add_argument("--shape", default="1x500x2", help="SETSxGANGSxPODS (default 1x500x2)")
    p.add_argument(
        "--max-unavailable", type=int, default=50, help="gangs in flight (the bench's 50)"
    )
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300.0, help="per wait, s")
    args = p.parse_args()
    shape = workload.Shape.parse(args.shape)
    found = devcluster.status(args.cluster)
    plane = {c.name: c.pid for c in found.components if c.running and c.pid and c.name in PLANE}
    if set(plane) != set(PLANE):
        print(
            f"dev cluster {args.cluster} is not running (cliques dev-cluster up --name "
            f"{args.cluster})",
            file=sys.stderr,
        )
        return 2
    kubeconfig = str(devcluster.info(args.cluster).kubeconfig)
    for r in range(args.rounds):
        result = asyncio.run(
            one_round(kubeconfig, shape, args.max_unavailable, plane, args.timeout)
        )
        cpu = result["cpu"]
        parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(cpu.items()))
        print(
            f"round {r + 1}: {result['patches']} pods in place in {result['wall']:.1f} s; "
            f"control plane CPU {cpu.get('cpu_control_plane', 0.0):.2f} s ({parts})"
        )
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
