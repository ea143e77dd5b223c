"""`cluster.restart_component` on the test cluster: kube-scheduler killed (SIGKILL) and
started again with the cluster's own start command, a new process that schedules a pod
made after it."""

from __future__ import annotations

import json
import time

import pytest
from tests.support.cluster_fixtures import KubeCluster

from cliques_lab.devcluster import cluster as devcluster

pytestmark = pytest.mark.cluster


def _scheduler_pid(name: str) -> int | None:
    for c in devcluster.status(name).components:
        if c.name == "kube-scheduler" and c.running:
            return c.pid
    return None


def test_a_restarted_scheduler_is_a_new_process_that_schedules(
    kube_cluster: KubeCluster, namespace: str
) -> None:
    if kube_cluster.name is None:
        pytest.skip("CLIQUES_KUBECONFIG: not a dev cluster, nothing to restart")
    before = _scheduler_pid(kube_cluster.name)
    assert before is not None
    took = devcluster.restart_component(kube_cluster.name, "kube-scheduler")
    after = _scheduler_pid(kube_cluster.name)
    assert after is not None and after != before, (before, after)
    assert took < 120
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "after-restart", "namespace": namespace},
        "spec": {
            "containers": [{"name": "main", "image": "busybox:1.36"}],
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
        },
    }
    kube_cluster.kubectl_run("apply", "-f", "-", stdin=json.dumps(pod))
    deadline = time.monotonic() + 60
    while True:
        done = kube_cluster.kubectl_run(
            "get", "pod", "after-restart", "-n", namespace, "-o", "jsonpath={.spec.nodeName}"
        )
        if done.stdout.strip():
            break
        assert time.monotonic() < deadline, "the pod was not scheduled within 60 s"
        time.sleep(0.5)


def test_a_component_the_cluster_does_not_have_is_named(kube_cluster: KubeCluster) -> None:
    if kube_cluster.name is None:
        pytest.skip("CLIQUES_KUBECONFIG: not a dev cluster")
    with pytest.raises(devcluster.DevClusterError, match="no component 'kube-nothing'"):
        devcluster.restart_component(kube_cluster.name, "kube-nothing")
