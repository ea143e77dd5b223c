"""The dev cluster itself, against the real processes: the Kubernetes version and gang
APIs asked for ($CLIQUES_KUBE_VERSION, else the default), nodes with GPU capacity, pods that
run and become Ready through KWOK's stages, garbage collection by the real
controller-manager, reuse of a running cluster, a second cluster side by side on its own
ports, restart of a dead component, a quick error with the log tail of a component that
cannot start, `env` for a shell, a dry run that fetches nothing, and `down` leaving no
process and no file behind. Every wait has a deadline."""

from __future__ import annotations

import io
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from tests.support.cluster_fixtures import KubeCluster

from cliques_lab.cli import devcluster_cmd
from cliques_lab.devcluster import build, cluster, gomodules, kwok, processes
from cliques_lab.devcluster.errors import ComponentError

pytestmark = pytest.mark.cluster

WAIT = "--timeout=60s"


def dev_cluster(kube_cluster: KubeCluster) -> str:
    if kube_cluster.name is None:
        pytest.skip("CLIQUES_KUBECONFIG points at an external cluster, not a dev cluster")
    return kube_cluster.name


def get_json(kube_cluster: KubeCluster, *args: str) -> Any:
    return json.loads(kube_cluster.kubectl_run("get", *args, "-o", "json").stdout)


def test_the_cluster_runs_the_chosen_version_with_its_gang_apis(
    kube_cluster: KubeCluster,
) -> None:
    name = dev_cluster(kube_cluster)
    version = gomodules.kube_version()
    server = json.loads(kube_cluster.kubectl_run("version", "-o", "json").stdout)
    assert server["serverVersion"]["gitVersion"] == f"v{version}"
    st = cluster.status(name)
    assert st.kube_version == f"v{version}" and st.gang_scheduling
    assert dict(st.feature_gates) == kwok.feature_gates(version)
    served = kube_cluster.kubectl_run("api-versions").stdout.split()
    for group_version in kwok.GANG_RUNTIME_CONFIG[version]:
        assert group_version in served
    # A group version is served even when the gate of its resources is off: look at them.
    newest = kwok.GANG_RUNTIME_CONFIG[version][0]
    listed = json.loads(kube_cluster.kubectl_run("get", "--raw", f"/apis/{newest}").stdout)
    assert "workloads" in {r["name"] for r in listed["resources"]}


def test_nodes_are_ready_with_gpu_capacity(kube_cluster: KubeCluster) -> None:
    kube_cluster.kubectl_run("wait", "--for=condition=Ready", "node", "--all", WAIT)
    nodes = get_json(kube_cluster, "nodes", "-l", kwok.NODE_LABEL)["items"]
    assert len(nodes) >= 1
    for node in nodes:
        for field in ("capacity", "allocatable"):
            have = node["status"][field]
            assert have["cpu"] == "32"
            assert have["memory"] == "256Gi"
            assert have["pods"] == "110"
            assert have["nvidia.com/gpu"] == "8"
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"


def test_gpu_pod_runs_and_becomes_ready(kube_cluster: KubeCluster, namespace: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpu", "namespace": namespace},
        "spec": {
            "containers": [
                {
                    "name": "trainer",
                    "image": "example.invalid/trainer:1",
                    "resources": {
                        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"},
                        "limits": {"nvidia.com/gpu": "2"},
                    },
                }
            ]
        },
    }
    kube_cluster.kubectl_run("create", "-f", "-", stdin=json.dumps(pod))
    kube_cluster.kubectl_run("wait", "-n", namespace, "--for=condition=Ready", "pod/gpu", WAIT)
    got = get_json(kube_cluster, "-n", namespace, "pod/gpu")
    assert got["status"]["phase"] == "Running"
    assert got["spec"]["nodeName"].startswith(kwok.NODE_PREFIX)
    assert got["status"]["containerStatuses"][0]["ready"] is True
    assert got["status"]["podIP"]


def test_pod_asking_more_gpus_than_a_node_has_stays_pending(
    kube_cluster: KubeCluster, namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big", "namespace": namespace},
        "spec": {
            "containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "9"}}}
            ]
        },
    }
    kube_cluster.kubectl_run("create", "-f", "-", stdin=json.dumps(pod))
    # The scheduler says so in a PodScheduled=False condition (Unschedulable).
    kube_cluster.kubectl_run(
        "wait",
        "-n",
        namespace,
        "--for=jsonpath={.status.conditions[?(@.type=='PodScheduled')].reason}=Unschedulable",
        "pod/too-big",
        WAIT,
    )


def test_garbage_collector_deletes_dependents(kube_cluster: KubeCluster, namespace: str) -> None:
    kube_cluster.kubectl_run("create", "configmap", "owner", "-n", namespace)
    owner = get_json(kube_cluster, "-n", namespace, "configmap/owner")
    dependent = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "dependent",
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "owner",
                    "uid": owner["metadata"]["uid"],
                }
            ],
        },
    }
    kube_cluster.kubectl_run("create", "-f", "-", stdin=json.dumps(dependent))
    kube_cluster.kubectl_run("delete", "configmap", "owner", "-n", namespace, "--wait=true")
    kube_cluster.kubectl_run("wait", "-n", namespace, "--for=delete", "configmap/dependent", WAIT)


def test_a_watch_from_an_ancient_resource_version_gets_410_gone(
    kube_cluster: KubeCluster, namespace: str
) -> None:
    dev_cluster(kube_cluster)
    kube_cluster.kubectl_run("create", "configmap", "c1", "-n", namespace)
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion=1&timeoutSeconds=5"
    out = kube_cluster.kubectl_run("get", "--raw", path).stdout
    event = json.loads(out.splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"


def test_up_reuses_the_running_cluster(kube_cluster: KubeCluster) -> None:
    name = dev_cluster(kube_cluster)
    before = cluster.status(name)
    started = time.monotonic()
    result = cluster.up(name, timeout=60)
    assert result.action == "reused"
    assert time.monotonic() - started < 15
    assert result.info.server == kube_cluster.server
    after = cluster.status(name)
    assert [c.pid for c in after.components] == [c.pid for c in before.components]


def test_env_gives_a_shell_a_working_kubectl(kube_cluster: KubeCluster) -> None:
    name = dev_cluster(kube_cluster)
    out = io.StringIO()
    with redirect_stdout(out):
        assert _cli("env", "--name", name) == 0
    script = (
        out.getvalue() + '\ncommand -v kubectl\nkubectl get nodes -o name\necho "$KUBECONFIG"\n'
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(kube_cluster.kubectl)
    assert f"node/{kwok.node_name(0)}" in lines
    assert lines[-1] == str(kube_cluster.kubeconfig)


def test_dry_run_fetches_nothing(kube_cluster: KubeCluster) -> None:
    dev_cluster(kube_cluster)
    output = cluster.dry_run("dry-run-probe")
    sources = kwok.dry_run_sources(output)
    assert len(sources) == 5  # etcd, apiserver, controller-manager, scheduler, kwok
    assert kwok.remote_sources(output) == []
    cache = str(build.cache_root())
    assert all(src.startswith(cache) for src in sources), sources
    assert "http://" not in output.replace("http://127.0.0.1", "")


def test_second_cluster_side_by_side_restart_and_down(kube_cluster: KubeCluster) -> None:
    dev_cluster(kube_cluster)
    name = f"cliques-side-{secrets.token_hex(3)}"  # unique: other sessions may run this test
    paths = cluster.paths_for(name)
    try:
        first = cluster.up(name, 2, timeout=120)
        assert first.action == "created"
        assert first.nodes == [kwok.node_name(0), kwok.node_name(1)]
        assert first.info.server != kube_cluster.server

        # A component that dies is started again by the next `up`.
        scheduler = _component(name, "kube-scheduler")
        assert scheduler.pid is not None
        os.kill(scheduler.pid, signal.SIGKILL)
        _wait(lambda: not _component(name, "kube-scheduler").running, "the scheduler to exit")
        assert cluster.status(name).state == "degraded"
        again = cluster.up(name, 1, timeout=120)
        assert again.action == "restarted"
        assert again.nodes == [kwok.node_name(0)]
        assert cluster.status(name).state == "running"

        # A component that cannot start fails `up` at once, with its log tail: here the
        # API server finds its port taken (the whole cluster was stopped first).
        # API server and clients first, etcd last, as kwokctl does: an API server whose
        # etcd is gone retries for half a minute before it exits.
        for component in reversed(cluster.status(name).components):
            assert component.pid is not None
            os.kill(component.pid, signal.SIGTERM)
            what = component.name
            _wait(lambda c=what: not _component(name, c).running, f"{what} to exit")
        assert cluster.status(name).state == "stopped"
        port = int(again.info.server.rsplit(":", 1)[1])
        with socket.socket() as squatter:
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            started = time.monotonic()
            with pytest.raises(ComponentError) as caught:
                cluster.up(name, timeout=120)
            assert time.monotonic() - started < 60
        assert caught.value.component == "kube-apiserver"
        assert "address already in use" in str(caught.value)
        assert str(paths.component_log("kube-apiserver")) in str(caught.value)
    finally:
        pids = [c.pid for c in cluster.status(name).components if c.pid]
        result = cluster.down(name)
    assert result.existed
    assert not paths.workdir.exists() and not paths.state_dir.exists()
    assert not paths.lock_file.exists()
    assert cluster.status(name).state == "absent"
    alive = processes.ps(pids)
    assert not [p for p in alive.values() if str(paths.workdir) in p.args]
    # The test cluster is untouched.
    assert cluster.status(dev_cluster(kube_cluster)).state == "running"


def _cli(*args: str) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="cliques")
    devcluster_cmd.register(parser.add_subparsers())
    parsed = parser.parse_args(["dev-cluster", *args])
    code: int = parsed.func(parsed)
    return code


def _component(name: str, component: str) -> cluster.ComponentState:
    return next(c for c in cluster.status(name).components if c.name == component)


def _wait(check: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


def test_kubeconfig_path_is_under_the_cache(kube_cluster: KubeCluster) -> None:
    name = dev_cluster(kube_cluster)
    out = io.StringIO()
    with redirect_stdout(out):
        assert _cli("kubeconfig", "--name", name) == 0
    path = Path(out.getvalue().strip())
    assert path == kube_cluster.kubeconfig
    assert build.cache_root() in path.parents
