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
    .venv/bin/python bench/inplace-floor/run.py --cluster cliques-floor --work pods,cliques

Compare with the `in-place-update` and `rolling-update` rows of the same shape in
docs/performance.md: no in-place roll on this cluster costs less than this.

`--work cliques` adds what an operator that keeps a Clique per clique of each gang (as
cliques does) cannot do without, still with no controller running: the pods are made
under a Clique each (`cliques.dev` CRDs installed, the pods owned by it), and each gang's
roll first patches its Cliques' pod template to the new image, then the pods, and once
they are back writes each Clique's status once (Ready, every pod updated), as cliques
does with its status hold. Four writes per gang of two cliques beyond `--work pods`: the
floor under any in-place roll of Cliques, however quick its controllers.
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
from cliques.kube.resources import CLIQUES, NAMESPACES, PODS, SERVICES
from cliques_lab.bench import procstats, scale_events, workload
from cliques_lab.devcluster import cluster as devcluster

PLANE = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok-controller")
GANG = "floor.cliques.dev/gang"


def pod_body(
    ns: str, name: str, gang: int, role: str, image: str, owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    tmpl = workload.pod_template(role, image)
    meta = {**tmpl["metadata"], "name": name, "namespace": ns}
    meta["labels"] = {**meta["labels"], GANG: str(gang)}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]}


def clique_body(ns: str, name: str, gang: int, role: str, n: int, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "Clique",
        "metadata": {"name": name, "namespace": ns, "labels": {GANG: str(gang)}},
        "spec": {
            "cliqueName": role,
            "gangIndex": gang,
            "replicas": n,
            "template": workload.pod_template(role, image),
        },
    }


def clique_status(generation: int, n: int, when: str) -> dict[str, Any]:
    """The status a Clique's controller writes once its pods are Ready on its template."""
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "AllPodsReady",
        "message": f"{n}/{n} pods ready",
        "lastTransitionTime": when,
    }
    return {
        "status": {
            "observedGeneration": generation,
            "replicas": n,
            "readyReplicas": n,
            "updatedReplicas": n,
            "conditions": [ready],
        }
    }


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
    kubeconfig: str,
    shape: workload.Shape,
    budget: int,
    plane: dict[str, int],
    timeout: float,
    cliques: bool = False,
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

        # gang -> its Cliques' names and generations (with `--work cliques`)
        owned: dict[int, dict[str, int]] = {}

        async def made(g: int, role: str, n: int) -> dict[str, Any] | None:
            if not cliques:
                return None
            name = f"g{g}-{role}"
            async with sem:
                obj = await client.create(
                    CLIQUES, ns, clique_body(ns, name, g, role, n, "busybox:1.36"), dict
                )
                meta = obj["metadata"]
                await client.patch(
                    CLIQUES,
                    ns,
                    name,
                    clique_status(meta["generation"], n, now()),
                    dict,
                    sub="status",
                )
            owned.setdefault(g, {})[name] = meta["generation"]
            return {
                "apiVersion": "cliques.dev/v1alpha1",
                "kind": "Clique",
                "name": name,
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }

        bodies = []
        for g in range(shape.gangs * shape.sets):
            for role, n in shape.roles():
                owner = await made(g, role, n)
                for i in range(n):
                    name = f"g{g}-{role}-{i}"
                    gangs.setdefault(g, []).append(name)
                    bodies.append(pod_body(ns, name, g, role, "busybox:1.36", owner))
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

        writes = {"pods": 0, "cliques": 0, "clique statuses": 0}

        async def roll(g: int) -> None:
            image = [{"op": "replace", "path": "/spec/containers/0/image", "value": new}]
            for name in owned.get(g, {}):
                tmpl = [{**image[0], "path": "/spec/template/spec/containers/0/image"}]
                obj = await client.patch(CLIQUES, ns, name, tmpl, dict, patch_type="json")
                owned[g][name] = obj["metadata"]["generation"]
                writes["cliques"] += 1
            for name in gangs[g]:
                await client.patch(PODS, ns, name, image, dict, patch_type="json")
                writes["pods"] += 1
            await until(lambda: gang_done(g), f"gang {g} on {new}", timeout)
            for name, generation in owned.get(g, {}).items():
                n = sum(1 for p in gangs[g] if p.startswith(f"{name}-"))
                body = clique_status(generation, n, now())
                await client.patch(CLIQUES, ns, name, body, dict, sub="status")
                writes["clique statuses"] += 1

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
        work = "cliques" if cliques else "pods"
        return {"work": work, "wall": wall, "patches": total, "writes": writes, "cpu": spent}
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
    p.add_argument(
        "--work",
        default="pods",
        help="comma list, run in turn each round: pods (the pods alone), cliques (a Clique "
        "per clique of each gang, patched and its status written once per roll)",
    )
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
    works = [w.strip() for w in args.work.split(",") if w.strip()]
    if not works or set(works) - {"pods", "cliques"}:
        p.error(f"--work {args.work!r}: a comma list of pods and cliques")
    kubeconfig = str(devcluster.info(args.cluster).kubeconfig)
    if "cliques" in works:
        scale_events.install_crds(args.cluster)
    for r in range(args.rounds):
        for work in works:
            result = asyncio.run(
                one_round(
                    kubeconfig,
                    shape,
                    args.max_unavailable,
                    plane,
                    args.timeout,
                    cliques=work == "cliques",
                )
            )
            cpu = result["cpu"]
            parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(cpu.items()))
            wrote = ", ".join(f"{v} {k}" for k, v in result["writes"].items() if v)
            print(
                f"round {r + 1} ({work}): {result['patches']} pods in place in "
                f"{result['wall']:.1f} s ({wrote}); control plane CPU "
                f"{cpu.get('cpu_control_plane', 0.0):.2f} s ({parts})"
            )
            print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
