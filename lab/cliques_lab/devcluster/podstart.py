"""`python -m cliques_lab.devcluster.podstart`: the dev cluster's image cache and model load
(`startmodel`), as a process `cliques dev-cluster up` starts beside the control plane.

It watches every pod and our KWOK nodes. For a pod under the start model (`startmodel.
modelled`) on a KWOK node, not being deleted, its start gate open:

- a first start (no container reports running yet): its containers start now; each image
  new to the node is pulled, then every container loads;
- an in-place restart (Running, some container's spec image differs from the image its
  status reports): the changed containers start now, pulling their image if it is new to
  the node, and load.

It writes the outcome once per (pod, images) as the pod condition `startmodel.CONDITION`
through `pods/status` (a strategic merge patch, as KWOK writes status), which the stages of
`startmodel.with_start_model` wait for. At start it lists everything first and rebuilds the
cache from the pods already on the nodes (`startmodel.rebuild`), so a restart of this
process forgets no image a pod still shows; images of pods deleted while it was down are
forgotten. Logs go to stdout (the cluster's `logs/podstart.log`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from typing import Any

import msgspec

from cliques.api.meta import ObjectMeta
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer
from cliques.kube.resources import PODS, Resource
from cliques_lab.devcluster import startmodel
from cliques_lab.devcluster.startmodel import PodView, StartModel

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
FIELD_MANAGER = "cliques-dev-cluster-podstart"
START_GATE = "cliques.dev/start-gate"
KWOK_NODE = "kwok.x-k8s.io/node"

log = logging.getLogger("podstart")


class _Container(msgspec.Struct):
    name: str = ""
    image: str = ""


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""
    containers: list[_Container] = []


class _Condition(msgspec.Struct, rename="camel"):
    type: str = ""
    message: str = ""
    last_probe_time: str | None = None


class _CtrStatus(msgspec.Struct):
    name: str = ""
    image: str = ""
    state: dict[str, Any] = {}


class _Status(msgspec.Struct, rename="camel"):
    phase: str = ""
    conditions: list[_Condition] = []
    container_statuses: list[_CtrStatus] = []


class Pod(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)

    def start_condition(self) -> _Condition | None:
        key = startmodel.image_key(c.image for c in self.spec.containers)
        return next(
            (
                c
                for c in self.status.conditions
                if c.type == startmodel.CONDITION and c.message == key
            ),
            None,
        )


class Node(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


def starting_images(pod: Pod) -> list[str] | None:
    """The images whose containers start now, or None when nothing starts: all of them
    for a pod whose containers never ran, the changed ones for a Running pod whose images
    changed."""
    reported = {c.name: c.image for c in pod.status.container_statuses}
    if not reported:
        return [c.image for c in pod.spec.containers]
    if pod.status.phase != "Running":
        return None
    changed = [c.image for c in pod.spec.containers if reported.get(c.name, c.image) != c.image]
    return changed or None


class PodStart:
    """The controller: informers of pods and nodes, the cache, one writer."""

    def __init__(self, client: KubeClient, *, every_pod: bool) -> None:
        self.client = client
        self.every_pod = every_pod
        self.pods: Informer[Pod] = Informer(client, PODS, Pod)
        self.nodes: Informer[Node] = Informer(client, NODES, Node)
        self.model = StartModel()
        #: (pod uid, images asked for, images reported) -> the condition decided for that
        #: start (written again, unchanged, if a status patch of KWOK's raced with ours;
        #: never decided twice; a later restart to the same images reports others)
        self.decided: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.ready = False

    def _node(self, name: str) -> Node | None:
        node = self.nodes.store.get(name)
        if node is None or node.metadata.annotations.get(KWOK_NODE) != "fake":
            return None
        return node

    def _load(self, pod: Pod) -> float:
        node = self._node(pod.spec.node_name)
        annotations = node.metadata.annotations if node is not None else {}
        return startmodel.durations(pod.metadata.annotations, annotations)[1]

    def rebuild(self) -> None:
        views = []
        for pod in self.pods.store.objects():
            cond = None
            for c in pod.status.conditions:
                at = startmodel.parse_time(c.last_probe_time or "")
                if c.type == startmodel.CONDITION and at is not None:
                    cond = (c.message, at)
            running = tuple(c.image for c in pod.status.container_statuses if "running" in c.state)
            views.append(PodView(pod.spec.node_name, running, cond, self._load(pod)))
        self.model = startmodel.rebuild(views)
        nodes = {n for n, _ in self.model.images}
        log.info("cache rebuilt: %d images on %d nodes", len(self.model.images), len(nodes))

    def on_node(self, kind: str, old: Node | None, new: Node) -> None:
        """A new node, or new defaults on one: pods waiting there may start now."""
        if kind == "ADDED" or (
            old is not None and old.metadata.annotations != new.metadata.annotations
        ):
            self._requeue_all()

    def on_pod(self, kind: str, old: Any, new: Pod) -> None:
        if self.ready and kind != "DELETED":
            self.queue.put_nowait(f"{new.metadata.namespace}/{new.metadata.name}")

    def decide(self, pod: Pod, now: float) -> dict[str, Any] | None:
        """The condition to write for `pod` now, or None."""
        meta = pod.metadata
        if meta.deletion_timestamp is not None or not pod.spec.node_name:
            return None
        if not startmodel.modelled(meta.annotations, every_pod=self.every_pod):
            return None
        if meta.annotations.get(START_GATE) == "closed":
            return None
        node = self._node(pod.spec.node_name)
        if node is None or pod.start_condition() is not None:
            return None
        key = startmodel.image_key(c.image for c in pod.spec.containers)
        this = (meta.uid, key, startmodel.image_key(c.image for c in pod.status.container_statuses))
        if this in self.decided:
            return self.decided[this]
        images = starting_images(pod)
        if images is None:
            return None
        pull, load = startmodel.durations(meta.annotations, node.metadata.annotations)
        start = self.model.start(pod.spec.node_name, images, pull, load, now)
        cond = startmodel.condition(key, start, now)
        self.decided[this] = cond
        log.info(
            "%s/%s on %s: %s %s, ready in %.1fs",
            meta.namespace,
            meta.name,
            pod.spec.node_name,
            start.reason.lower(),
            ",".join(start.pulled) or key,
            start.ready_at - now,
        )
        return cond

    async def write(self, pod: Pod, cond: dict[str, Any]) -> None:
        body = {"status": {"conditions": [cond]}}
        try:
            await self.client.patch(
                PODS,
                pod.metadata.namespace,
                pod.metadata.name,
                body,
                dict,
                patch_type="strategic",
                sub="status",
            )
        except errors.NotFound:
            pass
        except errors.API_FAILURES as exc:
            log.warning("%s/%s: %s (retried)", pod.metadata.namespace, pod.metadata.name, exc)
            await asyncio.sleep(1.0)
            self.queue.put_nowait(f"{pod.metadata.namespace}/{pod.metadata.name}")

    async def run(self) -> None:
        tasks = [asyncio.create_task(i.run()) for i in (self.nodes, self.pods)]
        self.pods.add_handler(self.on_pod)
        self.nodes.add_handler(self.on_node)
        await asyncio.gather(self.nodes.synced.wait(), self.pods.synced.wait())
        self.rebuild()
        self.ready = True
        self._requeue_all()
        log.info("watching %d pods on %d nodes", len(self.pods.store), len(self.nodes.store))
        try:
            while True:
                key = await self.queue.get()
                pod = self.pods.store.get(key)
                if pod is None:
                    continue
                cond = self.decide(pod, time.time())
                if cond is not None:
                    await self.write(pod, cond)
        finally:
            for task in tasks:
                task.cancel()

    def _requeue_all(self) -> None:
        if self.ready:
            for key in self.pods.store:
                self.queue.put_nowait(key)


async def _main(kubeconfig: str, every_pod: bool) -> None:
    client = await KubeClient.connect(kubeconfig, qps=0, field_manager=FIELD_MANAGER)
    client.user_agent = FIELD_MANAGER
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    for sig in (signal.SIGTERM, signal.SIGINT):
        if main is not None:
            loop.add_signal_handler(sig, main.cancel)
    try:
        await PodStart(client, every_pod=every_pod).run()
    except asyncio.CancelledError:
        log.info("stopped")
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="podstart", description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument(
        "--every-pod", action="store_true", help="every pod goes through the start model"
    )
    # Names the process in its command line, for `cliques dev-cluster status` and `down`.
    parser.add_argument("--component", default=startmodel.COMPONENT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout
    )
    asyncio.run(_main(args.kubeconfig, args.every_pod))
    return 0


if __name__ == "__main__":
    sys.exit(main())
