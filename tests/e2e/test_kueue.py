"""CliqueSets queued by Kueue, end to end: the operator (in this event loop) and Kueue's
manager (`cliques dev-cluster up --with kueue`, a dev cluster of its own) on one control
plane, each test with a ClusterQueue of 4 CPUs of its own.

- A gang that fits runs; a second set's gang waits, no pod of it bound, and is admitted
  whole within a minute of the first set's deletion; the quota is never exceeded (a pod
  watch sums the CPU of the bound pods all along); a scale of the running set queues the
  new gang.
- A gang bigger than the ClusterQueue never binds a pod, and the set says why (Kueue's
  message).
- A set naming a LocalQueue that does not exist creates no pod and says so; once the
  queue is made, its gang is admitted.
- A higher-priority set preempts the whole gang of a lower one: every pod of that gang
  goes, the gang queues again, and the quota holds throughout.
- Two sets whose longest names share all but two characters run side by side in one
  queue, each gang in a pod group of its own, and no pod of either is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.pod import Pod
from cliques.controllers.features import kueue as cq_kueue
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, CLIQUESETS, PODS
from cliques_lab.devcluster import kueue as dev_kueue
from tests.support.addon_cluster import addon_cluster, make_namespace
from tests.support.cluster_fixtures import KubeCluster, addon_build_error
from tests.support.harness import (
    Cluster,
    cliqueset,
    connected,
    install_crds,
    running_operator,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.addons("kueue")]

NAME = "cliques-kueue"
QUOTA_MILLI = 4000
PRIORITIES = {"cliques-e2e-low": 10, "cliques-e2e-high": 1000}


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    failed = addon_build_error(request.config)
    if failed is not None:
        pytest.fail(f"the dev cluster's add-ons could not be built:\n{failed}", pytrace=False)
    with addon_cluster(NAME, ["kueue"]) as cluster:
        install_crds(str(cluster.kubeconfig))
        classes = [
            {
                "apiVersion": dev_kueue.API_VERSION,
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            for name, value in PRIORITIES.items()
        ]
        cluster.kubectl_run("apply", "-f", "-", stdin=_as_list(classes))
        yield cluster


def _as_list(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


@pytest.fixture
def namespace(kube: KubeCluster) -> Iterator[str]:
    """A namespace with LocalQueue `lq` of its own ClusterQueue of 4 CPUs, which preempts
    lower priorities."""
    ns = make_namespace(kube, "t-cq-kueue")
    flavor, cq = f"{ns}-flavor", f"{ns}-cq"
    objects = [
        {
            "apiVersion": dev_kueue.API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor},
        },
        {
            "apiVersion": dev_kueue.API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 4}]}
                        ],
                    }
                ],
            },
        },
        local_queue(ns, "lq", cq),
    ]
    kube.kubectl_run("create", "-f", "-", stdin=_as_list(objects))
    try:
        yield ns
    finally:
        kube.kubectl_run("delete", "namespace", ns, "--wait=false", check=False)
        kube.kubectl_run("delete", "clusterqueue", cq, "--wait=false", check=False)
        kube.kubectl_run("delete", "resourceflavor", flavor, "--wait=false", check=False)


def local_queue(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": dev_kueue.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


@pytest.fixture
async def cluster(kube: KubeCluster, namespace: str) -> AsyncIterator[Cluster]:
    async with connected(str(kube.kubeconfig), namespace) as cluster:
        yield cluster


def queued_set(name: str, gangs: int, cpu: str, queue: str = "lq", priority: str = "") -> Any:
    """`gangs` gangs of a leader and a worker, each asking `cpu` (CPU only: the
    ClusterQueue covers CPU alone)."""
    body = cliqueset(name, gangs, leader=1, workers=1)
    for clique in body["spec"]["template"]["cliques"]:
        spec = clique["template"]["spec"]
        spec["containers"] = [{**spec["containers"][0], "resources": {"requests": {"cpu": cpu}}}]
    body["metadata"]["labels"] = {cq_kueue.QUEUE_LABEL: queue}
    if priority:
        body["metadata"]["labels"][cq_kueue.PRIORITY_LABEL] = priority
    return body


def _milli(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


class Quota:
    """Watches the namespace's pods: the most CPU ever bound at once (pods on a node and not
    being deleted), and every pod name seen bound."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.informer: Any = Informer(client, PODS, Pod, namespace=namespace)
        self.most = 0
        self.bound: set[str] = set()
        #: the UIDs of the pods seen deleted or being deleted
        self.deleted: set[str] = set()
        self.informer.add_handler(self._on)

    def _on(self, kind: str, old: Any, new: Pod) -> None:
        if kind == "DELETED" or new.metadata.deletion_timestamp is not None:
            self.deleted.add(new.metadata.uid)
        total = 0
        for pod in self.informer.store.objects():
            if pod.spec.node_name and pod.metadata.deletion_timestamp is None:
                self.bound.add(pod.metadata.name)
                total += sum(
                    _milli(c.resources.requests.get("cpu", "0")) for c in pod.spec.containers
                )
        self.most = max(self.most, total)

    async def __aenter__(self) -> Quota:
        self._task = asyncio.create_task(self.informer.run())
        await wait_for(self._synced, timeout=30, what="pod watch synced")
        return self

    async def _synced(self) -> bool:
        return bool(self.informer.synced.is_set())

    async def __aexit__(self, *exc: object) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def admitted(
    cluster: Cluster, name: str, status: str, reason: str = "", timeout: float = 60
) -> Any:
    async def check() -> Any:
        cond = await cluster.condition(name, cq_kueue.CONDITION_ADMITTED)
        if cond is None or cond.status != status:
            return None
        return cond if not reason or cond.reason == reason else None

    return await wait_for(check, timeout=timeout, what=f"{name} Admitted={status} {reason}")


async def pods_of(cluster: Cluster, name: str) -> list[Pod]:
    return [
        p
        for p in await cluster.pods()
        if p.metadata.labels.get(labels.LABEL_CLIQUESET) == name
        and p.metadata.deletion_timestamp is None
    ]


def gated(pod: Pod) -> bool:
    return any(g.name == cq_kueue.GATE for g in pod.spec.scheduling_gates)


async def test_a_gang_waits_for_quota_and_is_admitted_whole_when_it_frees(
    kube: KubeCluster, cluster: Cluster, namespace: str
) -> None:
    async with (
        Quota(cluster.client, namespace) as quota,
        running_operator(str(kube.kubeconfig), namespace),
    ):
        await cluster.apply(queued_set("first", 1, "2"))
        await cluster.wait_available("first", timeout=90)
        await admitted(cluster, "first", "True")
        await cluster.apply(queued_set("second", 1, "2"))
        cond = await admitted(cluster, "second", "False", "Queued")
        pods = await pods_of(cluster, "second")
        assert len(pods) == 2 and all(gated(p) and not p.spec.node_name for p in pods), pods
        cqs = await cluster.cliqueset("second")
        assert cqs.status is not None and cqs.status.queue is not None
        assert cqs.status.queue.admitted_gangs == 0
        assert [g.state for g in cqs.status.queue.gangs] == ["Queued"], cond.message

        # A scale of the running set queues its new gang; the first keeps running.
        await cluster.apply(queued_set("first", 2, "2"))
        await admitted(cluster, "first", "False", "Queued")
        cqs = await cluster.cliqueset("first")
        assert cqs.status is not None and cqs.status.queue is not None
        assert cqs.status.queue.admitted_gangs == 1
        await cluster.apply(queued_set("first", 1, "2"))
        await cluster.wait_available("first", timeout=60)

        await cluster.client.delete(CLIQUESETS, namespace, "first")
        await cluster.wait_available("second", timeout=60)
        await admitted(cluster, "second", "True")
        assert all(p.spec.node_name and not gated(p) for p in await pods_of(cluster, "second"))
        assert quota.most <= QUOTA_MILLI, f"{quota.most}m CPU bound at once (quota 4000m)"


async def test_a_gang_bigger_than_the_queue_never_binds_and_says_why(
    kube: KubeCluster, cluster: Cluster, namespace: str
) -> None:
    async with (
        Quota(cluster.client, namespace) as quota,
        running_operator(str(kube.kubeconfig), namespace),
    ):
        await cluster.apply(queued_set("big", 1, "4"))
        cond = await admitted(cluster, "big", "False", "Queued")

        async def told() -> Any:
            c = await cluster.condition("big", cq_kueue.CONDITION_ADMITTED)
            return c if c is not None and "cpu" in c.message else None

        cond = await wait_for(told, timeout=60, what="Kueue's reason on the set")
        assert "gang 0 queued" in cond.message, cond.message
        assert not quota.bound, quota.bound
        assert all(gated(p) for p in await pods_of(cluster, "big"))


async def test_a_queue_that_does_not_exist_creates_no_pod_until_it_does(
    kube: KubeCluster, cluster: Cluster, namespace: str
) -> None:
    async with running_operator(str(kube.kubeconfig), namespace):
        await cluster.apply(queued_set("lost", 1, "1", queue="nope"))
        cond = await admitted(cluster, "lost", "False", "LocalQueueNotFound")
        assert "LocalQueue nope does not exist" in cond.message
        assert not await cluster.list(CLIQUES, dict)
        assert not await pods_of(cluster, "lost")
        cq = f"{namespace}-cq"
        kube.kubectl_run("create", "-f", "-", stdin=json.dumps(local_queue(namespace, "nope", cq)))
        await cluster.wait_available("lost", timeout=90)
        await admitted(cluster, "lost", "True")


async def test_a_higher_priority_set_preempts_a_whole_lower_gang(
    kube: KubeCluster, cluster: Cluster, namespace: str
) -> None:
    async with (
        Quota(cluster.client, namespace) as quota,
        running_operator(str(kube.kubeconfig), namespace),
    ):
        await cluster.apply(queued_set("low", 1, "2", priority="cliques-e2e-low"))
        await cluster.wait_available("low", timeout=90)
        before = {p.metadata.uid for p in await pods_of(cluster, "low")}
        await cluster.apply(queued_set("high", 1, "2", priority="cliques-e2e-high"))
        await cluster.wait_available("high", timeout=90)

        async def requeued() -> Any:
            pods = await pods_of(cluster, "low")
            uids = {p.metadata.uid for p in pods}
            whole = len(pods) == 2 and not uids & before and all(gated(p) for p in pods)
            return pods if whole else None

        await wait_for(requeued, timeout=60, what="the low gang's pods all made again, gated")
        cond = await admitted(cluster, "low", "False")
        assert cond.reason in ("Queued", "Evicted"), cond
        assert quota.most <= QUOTA_MILLI, f"{quota.most}m CPU bound at once (quota 4000m)"


async def test_two_sets_whose_long_names_share_fifty_characters_run_side_by_side(
    kube: KubeCluster, cluster: Cluster, namespace: str
) -> None:
    """Two queued sets with names of the longest length the CRD allows that differ only in
    their last two characters: each gang gets a Kueue pod group of its own (the name is cut
    with a hash of what it stands for), both are admitted and run in one queue, and Kueue
    deletes no pod of either as the "excess" of a group it thinks they share."""
    stem = "a" * (labels.MAX_CLIQUESET_NAME_LENGTH - 2)
    first, second = f"{stem}-x", f"{stem}-y"
    assert len(first) == len(second) == labels.MAX_CLIQUESET_NAME_LENGTH
    async with (
        Quota(cluster.client, namespace) as quota,
        running_operator(str(kube.kubeconfig), namespace),
    ):
        await cluster.apply(queued_set(first, 1, "1"))
        await cluster.apply(queued_set(second, 1, "1"))
        await cluster.wait_available(first, timeout=90)
        await cluster.wait_available(second, timeout=90)
        await admitted(cluster, first, "True")
        await admitted(cluster, second, "True")
        made = {name: await pods_of(cluster, name) for name in (first, second)}
        groups = {
            name: {p.metadata.labels.get(cq_kueue.GROUP_LABEL) for p in pods}
            for name, pods in made.items()
        }
        assert all(len(pods) == 2 for pods in made.values()), made
        assert all(len(g) == 1 and None not in g for g in groups.values()), groups
        assert groups[first].isdisjoint(groups[second]), groups
        # Kueue removes a group's excess pods as soon as it sees them: give it the time a
        # sync of each Workload takes, then no pod of either set may have gone.
        uids = {p.metadata.uid for pods in made.values() for p in pods}

        async def settled() -> bool:
            workloads = json.loads(
                kube.kubectl_run(
                    "get", "workloads.kueue.x-k8s.io", "-n", namespace, "-o", "json"
                ).stdout
            )["items"]
            conditions = [w.get("status", {}).get("conditions", []) for w in workloads]
            return len(workloads) == 2 and all(
                any(c["type"] == "Admitted" and c["status"] == "True" for c in cs)
                for cs in conditions
            )

        await wait_for(settled, timeout=60, what="one admitted Workload per set")
        now = {p.metadata.uid for name in (first, second) for p in await pods_of(cluster, name)}
        assert now == uids, f"pods replaced or deleted: {sorted(uids - now)}"
        assert not quota.deleted & uids, f"pods deleted: {sorted(quota.deleted & uids)}"


async def test_an_admitted_gang_the_nodes_cannot_hold_blocks_nothing_else(
    kube: KubeCluster, cluster: Cluster, namespace: str
) -> None:
    """Kueue admits a gang (quota is not capacity) whose pods no node takes, under the
    Workload gang-scheduling backend: the set is Admitted and not Available, its Cliques
    say PodsUnschedulable, and another set in the same queue is still admitted and runs."""
    nowhere = queued_set("nowhere", 1, "1")
    nowhere["spec"]["gangScheduling"] = {"backend": "Workload"}
    for clique in nowhere["spec"]["template"]["cliques"]:
        clique["template"]["spec"]["nodeSelector"] = {"cliques.dev/test-no-such-node": "true"}
    async with running_operator(str(kube.kubeconfig), namespace):
        await cluster.apply(nowhere)
        await admitted(cluster, "nowhere", "True")

        async def unschedulable() -> Any:
            cliques = await cluster.cliques()
            said = [
                c
                for c in cliques
                if c.metadata.labels.get(labels.LABEL_CLIQUESET) == "nowhere"
                and any(
                    x.type == "PodsUnschedulable" and x.status == "True"
                    for x in (c.status.conditions if c.status else [])
                )
            ]
            return said or None

        await wait_for(unschedulable, timeout=60, what="nowhere's Cliques PodsUnschedulable")
        pods = await pods_of(cluster, "nowhere")
        assert pods and all(not gated(p) and not p.spec.node_name for p in pods), pods
        await cluster.apply(queued_set("elsewhere", 1, "1"))
        await cluster.wait_available("elsewhere", timeout=90)
        await admitted(cluster, "elsewhere", "True")
        available = await cluster.condition("nowhere", "Available")
        assert available is not None and available.status == "False", available


async def test_the_example_queues_one_gang_of_two(kube: KubeCluster, cluster: Cluster) -> None:
    """deploy/examples/kueue: the ClusterQueue's 8 GPUs hold one of the queued set's two
    gangs of 7 GPUs; the other waits, and the set says so."""
    import yaml

    examples = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "kueue"
    queues = list(yaml.safe_load_all((examples / "queues.yaml").read_text()))
    for doc in queues:
        if doc["kind"] == "LocalQueue":
            doc["metadata"]["namespace"] = cluster.namespace
    scoped = [
        (d["kind"].lower(), d["metadata"]["name"]) for d in queues if d["kind"] != "LocalQueue"
    ]
    kube.kubectl_run("apply", "-f", "-", stdin=_as_list(queues))
    body = yaml.safe_load((examples / "cliqueset.yaml").read_text())
    try:
        async with running_operator(str(kube.kubeconfig), cluster.namespace):
            await cluster.apply(body)
            cond = await admitted(cluster, "queued-trainer", "False", "Queued", timeout=90)

            async def one_runs() -> Any:
                cqs = await cluster.cliqueset("queued-trainer")
                st = cqs.status
                ok = st is not None and st.queue is not None and st.queue.admitted_gangs == 1
                return st if ok and st.available_replicas == 1 else None

            st = await wait_for(one_runs, timeout=90, what="one gang admitted and available")
            assert [g.state for g in st.queue.gangs] == ["Queued"], cond.message
    finally:
        for kind, name in scoped:
            kube.kubectl_run("delete", kind, name, "--wait=false", check=False)
