"""Cluster bookkeeping without a cluster: states read from kwokctl's files (version and
feature gates included), `up` refusing an existing cluster of another version or other gates,
the error for a component that is not running (with its log tail), `down` of a cluster that
is not there. (The test fixtures' helpers, namespace names and keeping logs, are tested in
tests/unit/test_cluster_fixtures.py.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cliques_lab.devcluster import cluster, kwok
from cliques_lab.devcluster.errors import ComponentError, DevClusterError


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    return int(done.stdout)


def fake_cluster(root: Path, name: str) -> cluster.ClusterPaths:
    """kwokctl's files for a cluster whose processes are all gone."""
    paths = cluster.paths_for(name, root)
    (paths.workdir / "pids").mkdir(parents=True)
    paths.logs_dir.mkdir()
    paths.saved_config.write_text(
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\n"
        "options:\n  disableQPSLimits: true\n"
    )
    paths.kubeconfig.write_text("clusters:\n- cluster:\n    server: https://127.0.0.1:32001\n")
    for component in kwok.COMPONENTS:
        paths.pid_file(component).write_text(f"{dead_pid()}\n")
        lines = [f"{component} line {i}" for i in range(100)]
        paths.component_log(component).write_text("\n".join(lines) + "\n")
    return paths


def test_status_of_an_unknown_cluster_is_absent(tmp_path: Path) -> None:
    st = cluster.status("nope", tmp_path)
    assert st.state == "absent" and st.components == []
    assert cluster.list_clusters(tmp_path) == []


def test_status_reads_kwokctl_files(tmp_path: Path) -> None:
    fake_cluster(tmp_path, "c1")
    st = cluster.status("c1", tmp_path)
    assert st.state == "stopped"
    assert st.server == "https://127.0.0.1:32001"
    assert st.disable_qps_limits is True
    assert [c.name for c in st.components] == list(kwok.COMPONENTS)
    assert not any(c.running for c in st.components) and st.rss_bytes == 0
    assert cluster.list_clusters(tmp_path) == ["c1"]


def record(paths: cluster.ClusterPaths, version: str, gates: str) -> None:
    """What kwokctl saves of a cluster's version and gates in its kwok.yaml."""
    paths.saved_config.write_text(
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\n"
        f"options:\n  kubeVersion: {version}\n  kubeFeatureGates: {gates}\n"
    )


@pytest.mark.parametrize(
    ("version", "gates", "on"),
    [
        ("v1.35.4", "GenericWorkload=true,GangScheduling=true", True),
        ("v1.35.4", "GenericWorkload=true", False),  # the scheduler would not gang-schedule
        ("v1.36.3", "GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption=false", True),
        ("v1.37.2", "GenericWorkload=true", True),  # GangScheduling is gone in 1.37
        ("v1.37.2", "GenericWorkload=false,CompositePodGroup=true", False),
    ],
)
def test_status_tells_the_version_and_whether_the_cluster_has_the_gang_gates(
    tmp_path: Path, version: str, gates: str, on: bool
) -> None:
    paths = fake_cluster(tmp_path, "c1")
    before = cluster.status("c1", tmp_path)
    assert before.gang_scheduling is False and before.kube_version is None
    record(paths, version, gates)
    st = cluster.status("c1", tmp_path)
    assert st.gang_scheduling is on
    assert st.kube_version == version
    assert kwok.gates_text(st.feature_gates) == gates


@pytest.mark.parametrize(
    ("kube_version", "feature_gates", "message"),
    [
        ("1.37.2", None, "runs Kubernetes v1.35.4, not v1.37.2"),
        (
            None,
            {"GangScheduling": False},
            "has the feature gates GangScheduling=true, not GangScheduling=false",
        ),
    ],
)
def test_up_refuses_an_existing_cluster_of_another_version_or_gates_before_building(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kube_version: str | None,
    feature_gates: dict[str, bool] | None,
    message: str,
) -> None:
    monkeypatch.setenv("CLIQUES_GO", str(tmp_path / "no-go"))  # a build would fail otherwise
    paths = fake_cluster(tmp_path, "c1")
    record(paths, "v1.35.4", "GenericWorkload=true,GangScheduling=true")
    with pytest.raises(DevClusterError) as caught:
        cluster.up("c1", kube_version=kube_version, feature_gates=feature_gates, root=tmp_path)
    text = str(caught.value)
    assert message in text
    assert "`cliques dev-cluster down --name c1`" in text
    assert not any(tmp_path.glob("kube-v*"))  # nothing was built for it


def test_up_without_a_version_keeps_the_clusters_and_notes_other_gates(tmp_path: Path) -> None:
    current = cluster.ClusterStatus(
        "c1", "running", [], None, tmp_path, False, True, "v1.35.4", {"GenericWorkload": True}
    )
    wanted = kwok.feature_gates("1.35.4")
    assert cluster._reuse_notes(current, "1.35.4", dict(current.feature_gates), True, True) == []
    (note,) = cluster._reuse_notes(current, "1.35.4", wanted, True, False)
    assert note == (
        "the existing cluster has the feature gates GangScheduling unset, not "
        "GangScheduling=true; `down` it first to change that"
    )
    with pytest.raises(DevClusterError, match="has the feature gates"):
        cluster._reuse_notes(current, "1.35.4", wanted, True, True)


def test_a_cluster_of_an_unsupported_version_says_how_to_replace_it(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    record(paths, "v1.30.0", "")
    with pytest.raises(DevClusterError) as caught:
        cluster.info("c1", tmp_path)
    assert "runs Kubernetes v1.30.0 (unsupported Kubernetes version" in str(caught.value)
    assert "cliques dev-cluster down --name c1" in str(caught.value)


def test_info_uses_the_binaries_of_the_clusters_version(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    record(paths, "v1.36.3", "GenericWorkload=true")
    with pytest.raises(DevClusterError) as caught:
        cluster.info("c1", tmp_path)
    assert "binaries of Kubernetes v1.36.3 are not built" in str(caught.value)
    assert "cliques dev-cluster build --kube-version 1.36.3" in str(caught.value)


def test_a_recycled_pid_is_not_taken_for_a_component(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    # Our own pid is alive, but it is not this cluster's etcd.
    paths.pid_file("etcd").write_text(f"{os.getpid()}\n")
    st = cluster.status("c1", tmp_path)
    assert not st.components[0].running


def test_a_component_that_is_not_running_is_reported_with_its_log_tail(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    with pytest.raises(ComponentError) as caught:
        cluster._check_components(paths)
    error = caught.value
    assert error.component == "etcd"
    assert error.log_path == paths.component_log("etcd")
    message = str(error)
    assert message.startswith("dev cluster 'c1': etcd exited; its log is ")
    assert "etcd line 99" in message and "etcd line 70" in message
    assert "etcd line 69" not in message  # only the tail


def test_timeout_error_says_what_was_awaited(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    error = cluster._timed_out(paths, "kwok-controller", "node(s) kwok-node-0 to be Ready", 30)
    assert "kwok-controller did not come up within 30s" in str(error)
    assert "still waiting for node(s) kwok-node-0 to be Ready" in str(error)
    assert "kwok-controller line 99" in str(error)


def test_info_of_an_unknown_cluster_says_how_to_start_it(tmp_path: Path) -> None:
    with pytest.raises(DevClusterError, match="cliques dev-cluster up --name nope"):
        cluster.info("nope", tmp_path)


def test_down_of_an_unknown_cluster_leaves_nothing(tmp_path: Path) -> None:
    result = cluster.down("nope", root=tmp_path)
    assert not result.existed and result.stopped == [] and result.killed == []
    assert list(tmp_path.iterdir()) == []


def test_down_removes_the_files_of_a_dead_cluster(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    paths.state_dir.mkdir(parents=True)
    (paths.state_dir / "kwokctl.log").write_text("x")
    fake_cluster(tmp_path, "c2")
    result = cluster.down("c1", root=tmp_path)
    assert result.existed and result.stopped == []
    assert not paths.workdir.exists() and not paths.state_dir.exists()
    assert cluster.list_clusters(tmp_path) == ["c2"]
    cluster.down("c2", root=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_cluster_info_env_puts_kubectl_first(tmp_path: Path) -> None:
    info = cluster.ClusterInfo(
        name="c1",
        kubeconfig=tmp_path / "kc",
        server="https://127.0.0.1:1",
        kubectl=tmp_path / "bin" / "kubectl",
        bin_dir=tmp_path / "bin",
        logs_dir=tmp_path / "logs",
        kube_cache=tmp_path / "cache",
    )
    env = info.env({"PATH": "/usr/bin", "KUBECONFIG": "/home/me/.kube/config"})
    assert env["KUBECONFIG"] == str(tmp_path / "kc")
    assert env["PATH"].split(":")[0] == str(tmp_path / "bin")
    assert env["KUBECACHEDIR"] == str(tmp_path / "cache")


SAVED_WITH_PORTS = """\
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
components:
- name: etcd
  ports:
  - name: peer-http
    port: 32766
  - name: http
    port: 32765
- name: kube-apiserver
  ports:
  - name: https
    port: 32764
    hostPort: 32764
options:
  etcdPeerPort: 32766
  etcdPort: 32765
  kubeApiserverPort: 32764
  kubeSchedulerPort: 32761
  kubeApiserverInsecurePort: 0
  securePort: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
spec: {}
"""


def test_saved_ports_are_the_options_and_the_components_ports() -> None:
    assert kwok.saved_ports(SAVED_WITH_PORTS) == {32761, 32764, 32765, 32766}
    assert kwok.saved_ports("options: [") == set(), "a broken file gives none"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_creating_holds_the_ports_of_another_clusters_component_that_is_down(
    tmp_path: Path,
) -> None:
    """kwokctl gives a new cluster the highest free ports below 32767: those of another
    cluster's component that is down. Creation holds them, and only those."""
    import socket

    down, up = _free_port(), _free_port()
    other = fake_cluster(tmp_path, "other")
    other.saved_config.write_text(
        "kind: KwokctlConfiguration\noptions:\n"
        f"  kubeSchedulerPort: {down}\n  kubeApiserverPort: {up}\n"
    )
    fake_cluster(tmp_path, "new")  # its own ports are not held
    running = socket.socket()
    running.bind(("127.0.0.1", up))
    running.listen(1)
    try:
        with cluster._holding_ports_of_others(cluster.paths_for("new", tmp_path)) as held:
            assert held == [down]
            for host in ("127.0.0.1", ""):  # what kwokctl tries before it takes a port
                with socket.socket() as probe, pytest.raises(OSError):
                    probe.bind((host, down))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", down))  # let go after
    finally:
        running.close()
