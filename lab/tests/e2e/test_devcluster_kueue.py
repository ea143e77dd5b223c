"""`cliques dev-cluster up --with kueue` end to end, in a dev cluster of its own
(`cliques-kueue`): Kueue's manager runs as a host process with its CRDs and webhooks, and
admits plain pods as a pod group (Kueue's pod integration) within a ClusterQueue's quota.

Two pods labelled with a LocalQueue and a pod group name, annotated with the group's size,
come back from their create with Kueue's scheduling gate; Kueue makes one Workload for the
group, admits it within the 4 CPUs of the ClusterQueue, and removes the gate, so the scheduler
binds both pods to KWOK nodes. A second group that asks for more than the quota gets a Workload
that stays pending and keeps its pods gated. The labels, annotation and gate are Kueue's own
(`cliques_lab.devcluster.kueue`, from Kueue's pod integration constants). Every wait has a
deadline; Kueue and the cluster are built first if they are missing
(tests/support/cluster_fixtures.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.support.addon_cluster import addon_cluster, make_namespace, wait_for
from tests.support.cluster_fixtures import KubeCluster, addon_build_error

from cliques_lab.devcluster import addons_up, kueue, kwok
from cliques_lab.devcluster import cluster as devcluster

pytestmark = [pytest.mark.cluster, pytest.mark.addons("kueue")]

NAME = "cliques-kueue"
WAIT = 120.0
WORKLOADS = "workloads.kueue.x-k8s.io"  # not scheduling.k8s.io's Workload of 1.35+


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    failed = addon_build_error(request.config)
    if failed is not None:
        pytest.fail(f"the dev cluster's add-ons could not be built:\n{failed}", pytrace=False)
    with addon_cluster(NAME, ["kueue"]) as cluster:
        yield cluster


@pytest.fixture
def queue(kube: KubeCluster) -> Iterator[str]:
    """A namespace with a LocalQueue `lq` of a ClusterQueue of 4 CPUs; deleted after."""
    namespace = make_namespace(kube, "t-kueue")
    flavor, cq = f"{namespace}-flavor", f"{namespace}-cq"
    objects = [
        {"apiVersion": kueue.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
        cluster_queue(cq, flavor, namespace),
        {
            "apiVersion": kueue.API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": cq},
        },
    ]
    kube.kubectl_run("create", "-f", "-", stdin=as_list(objects))
    wait_for(lambda: condition(get(kube, "clusterqueue", cq), "Active"), f"{cq} Active", WAIT)
    try:
        yield namespace
    finally:
        kube.kubectl_run("delete", "namespace", namespace, "--wait=false", check=False)
        kube.kubectl_run("delete", "clusterqueue", cq, "--wait=false", check=False)
        kube.kubectl_run("delete", "resourceflavor", flavor, "--wait=false", check=False)


def cluster_queue(name: str, flavor: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": kueue.API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 4}]}
                    ],
                }
            ],
        },
    }


def group_pod(namespace: str, group: str, index: int, cpu: str, size: int) -> dict[str, Any]:
    """One pod of a Kueue pod group of `size` pods (Kueue's pod integration)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{group}-{index}",
            "namespace": namespace,
            "labels": {kueue.QUEUE_LABEL: "lq", kueue.POD_GROUP_LABEL: group},
            "annotations": {kueue.POD_GROUP_TOTAL_COUNT: str(size)},
        },
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


def as_list(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def get(kube: KubeCluster, *args: str) -> Any:
    done = kube.kubectl_run("get", *args, "-o", "json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None


def condition(obj: Any, type_: str, status: str = "True") -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_ and c.get("status") == status:
            return dict(c)
    return None


def gates(pod: dict[str, Any]) -> list[str]:
    return [g["name"] for g in pod["spec"].get("schedulingGates") or []]


def create_group(kube: KubeCluster, namespace: str, group: str, cpu: str) -> list[str]:
    """Create a pod group of two pods; the names of the pods, each of which came back from
    its create with Kueue's scheduling gate (its mutating webhook ran)."""
    names = []
    for index in range(2):
        body = json.dumps(group_pod(namespace, group, index, cpu, 2))
        pod = json.loads(kube.kubectl_run("create", "-o", "json", "-f", "-", stdin=body).stdout)
        assert kueue.SCHEDULING_GATE in gates(pod), pod["spec"]
        assert pod["metadata"]["labels"][kueue.MANAGED_LABEL] == "true"
        names.append(pod["metadata"]["name"])
    return names


def group_workload(kube: KubeCluster, namespace: str, group: str) -> dict[str, Any] | None:
    """The Workload Kueue made for pod group `group` (named after the group)."""
    listed = get(kube, WORKLOADS, "-n", namespace) or {"items": []}
    found = [w for w in listed["items"] if w["metadata"]["name"] == group]
    return found[0] if found else None


def test_kueue_runs_as_a_component_of_the_cluster(kube: KubeCluster) -> None:
    st = devcluster.status(NAME)
    assert st.state == "running" and "kueue" in st.addons
    (component,) = [c for c in st.components if c.name == "kueue"]
    assert kube.logs_dir is not None
    assert component.running and component.log == kube.logs_dir / "kueue.log"
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        hooks = get(kube, kind, addons_up.webhook_name(NAME))["webhooks"]
        assert all(h["clientConfig"]["url"].startswith("https://127.0.0.1:") for h in hooks)
        assert {"mpod.kb.io", "vpod.kb.io"} & {h["name"] for h in hooks}


def test_a_pod_group_within_the_quota_is_admitted_and_bound(kube: KubeCluster, queue: str) -> None:
    pods = create_group(kube, queue, "fits", "1")
    admitted = wait_for(
        lambda: condition(group_workload(kube, queue, "fits"), "Admitted"),
        "Kueue to admit the Workload of pod group 'fits'",
        WAIT,
    )
    assert admitted["status"] == "True"
    workload = group_workload(kube, queue, "fits")
    assert workload is not None and workload["spec"]["queueName"] == "lq"

    def bound() -> list[dict[str, Any]] | None:
        listed = [get(kube, "pod", name, "-n", queue) for name in pods]
        if all(p and not gates(p) and p["spec"].get("nodeName") for p in listed):
            return [p for p in listed if p]
        return None

    for pod in wait_for(bound, "the gate to be removed and both pods bound", WAIT):
        assert kwok.node_index(pod["spec"]["nodeName"]) is not None, pod["spec"]["nodeName"]

    def phase(name: str) -> str:
        return str(((get(kube, "pod", name, "-n", queue) or {}).get("status") or {}).get("phase"))

    wait_for(lambda: all(phase(n) == "Running" for n in pods), "both pods to run", WAIT)


def test_a_pod_group_over_the_quota_stays_gated(kube: KubeCluster, queue: str) -> None:
    pods = create_group(kube, queue, "too-big", "3")  # 2 x 3 CPUs > the 4 of the queue
    pending = wait_for(
        lambda: condition(group_workload(kube, queue, "too-big"), "QuotaReserved", "False"),
        "Kueue to evaluate the Workload of pod group 'too-big'",
        WAIT,
    )
    assert "insufficient quota" in pending.get("message", ""), pending
    workload = group_workload(kube, queue, "too-big")
    assert condition(workload, "Admitted") is None
    for name in pods:
        pod = get(kube, "pod", name, "-n", queue)
        assert kueue.SCHEDULING_GATE in gates(pod)
        assert not pod["spec"].get("nodeName")
