"""The dev cluster's add-ons without a cluster: the names `--with` takes and how an existing
cluster's add-ons are compared and recorded; Kueue's configuration, CRDs and webhooks as
rendered from its module's layout (a small stand-in, and the real module source when the Go
module cache has it); the webhook certificate's names (made with openssl); metrics-server's
kwokctl options and CPU quantities; add-on processes in `status` and `down`; and `up`
refusing an add-on an existing cluster cannot get before building anything."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_devcluster_cluster import fake_cluster

from cliques_lab.devcluster import (
    addons,
    addons_up,
    certs,
    cluster,
    gomodules,
    kueue,
    kwok,
    metrics_server,
    processes,
)
from cliques_lab.devcluster.errors import DevClusterError

# --- the registry -----------------------------------------------------------------------


def test_add_on_names_are_checked_deduplicated_and_put_in_order() -> None:
    assert addons.parse(["kueue", "metrics-server", "kueue"]) == ("metrics-server", "kueue")
    assert addons.parse(["kueue,metrics-server"]) == ("metrics-server", "kueue")
    assert addons.parse([]) == ()
    with pytest.raises(ValueError) as caught:
        addons.parse(["kueue", "volcano"])
    assert str(caught.value) == (
        "unknown add-on 'volcano': the add-ons are metrics-server, kueue, prometheus"
    )


def test_only_kueue_can_join_an_existing_cluster() -> None:
    plan = addons.plan((), ["kueue", "metrics-server"])
    assert plan.add == ("kueue",) and plan.refused == ("metrics-server",)
    refusal = plan.refusal("c1")
    assert "was created without metrics-server" in refusal
    assert "`cliques dev-cluster down --name c1`" in refusal
    assert addons.plan(("metrics-server",), ["metrics-server"]) == addons.Plan((), (), ())


def test_an_existing_clusters_add_ons_are_kept_when_not_asked_for() -> None:
    # Not asked: the cluster is reused as it is, without a word.
    assert addons.plan(("metrics-server", "kueue"), None) == addons.Plan((), (), ())
    # Asked for some: the others keep running, and `up` says so.
    plan = addons.plan(("metrics-server", "kueue"), ["kueue"])
    assert plan.kept == ("metrics-server",) and plan.add == plan.refused == ()
    assert plan.notes() == [
        "the existing cluster also runs metrics-server (kept; `down` it first to drop it)"
    ]
    assert addons.plan((), ["kueue"]).notes() == ["adding kueue to the existing cluster"]


def test_the_record_round_trips_and_tolerates_what_it_does_not_know(tmp_path: Path) -> None:
    record = tmp_path / addons.RECORD_FILE
    assert addons.read_record(record) == ()  # no file: no add-ons
    record.write_text(addons.record_text(["kueue", "metrics-server"]))
    assert addons.read_record(record) == ("metrics-server", "kueue")
    record.write_text(json.dumps({"addons": ["kueue", "from-the-future"]}))
    assert addons.read_record(record) == ("kueue",)
    record.write_text("{not json")
    assert addons.read_record(record) == ()


def test_components_tell_who_starts_them() -> None:
    both = ("metrics-server", "kueue")
    assert addons.components(both) == ("metrics-server", "kueue")
    assert addons.components(both, by_kwokctl=True) == ("metrics-server",)
    assert addons.components(both, by_kwokctl=False) == ("kueue",)
    assert addons.ADDONS["kueue"].module is gomodules.KUEUE
    assert addons.ADDONS["metrics-server"].module is gomodules.METRICS_SERVER


def test_the_add_on_modules_pin_the_asked_versions() -> None:
    assert gomodules.KUEUE.version() == "v0.17.0"
    assert gomodules.KUEUE.binaries() == {"kueue": "sigs.k8s.io/kueue/cmd/kueue"}
    assert gomodules.METRICS_SERVER.version() == "v0.8.0"
    assert gomodules.METRICS_SERVER.binaries() == {
        "metrics-server": "sigs.k8s.io/metrics-server/cmd/metrics-server"
    }
    assert "-X k8s.io/client-go/pkg/version.gitVersion=v0.8.0" in gomodules.ldflags_for(
        gomodules.METRICS_SERVER, "v0.8.0"
    )
    (patch,) = gomodules.KUEUE.patches
    assert patch.file == "cmd/kueue/main.go"
    assert patch.new.startswith(patch.old)  # the upstream path stays the default
    assert f'os.Getenv("{gomodules.KUEUE_METRICS_CERT_ENV}")' in patch.new


# --- Kueue's configuration ----------------------------------------------------------------

PORTS = kueue.Ports(webhook=40001, metrics=40002, health=40003)


def test_kueue_configuration_manages_pods_of_labelled_workloads_only(tmp_path: Path) -> None:
    config = kueue.render_config(PORTS, tmp_path / "certs")
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["kind"] == "Configuration"
    assert config["integrations"] == {
        "frameworks": ["pod"],
        "labelKeysToCopy": ["cliques.dev/cliqueset", "cliques.dev/bucket"],
    }
    assert config["manageJobsWithoutQueueName"] is False
    (expression,) = config["managedJobsNamespaceSelector"]["matchExpressions"]
    assert expression == {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["kube-system", "kueue-system"],
    }
    assert config["namespace"] == kueue.NAMESPACE


def test_kueue_configuration_serves_on_loopback_with_our_certificates(tmp_path: Path) -> None:
    config = kueue.render_config(PORTS, tmp_path / "certs", ["pod", "batch/job"])
    assert config["internalCertManagement"] == {"enable": False}
    assert config["webhook"] == {
        "host": "127.0.0.1",
        "port": 40001,
        "certDir": str(tmp_path / "certs"),
    }
    assert config["metrics"] == {"bindAddress": "127.0.0.1:40002"}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:40003"}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["featureGates"] == {"VisibilityOnDemand": False}
    assert config["integrations"]["frameworks"] == ["pod", "batch/job"]
    # The file round-trips to the ports a restarted `up` needs.
    loaded = yaml.safe_load(kueue.config_text(config))
    assert loaded == config
    assert kueue.ports_of(loaded) == PORTS
    assert kueue.frameworks_of(loaded) == ("pod", "batch/job")
    with pytest.raises(ValueError, match="at least one framework"):
        kueue.render_config(PORTS, tmp_path, [])
    with pytest.raises(ValueError, match="not a Kueue configuration"):
        kueue.ports_of({"webhook": {}})


@pytest.mark.parametrize(
    ("framework", "resource"),
    [
        ("pod", ("", "pods")),
        ("deployment", ("apps", "deployments")),
        ("statefulset", ("apps", "statefulsets")),
        ("batch/job", ("batch", "jobs")),
        ("jobset.x-k8s.io/jobset", ("jobset.x-k8s.io", "jobsets")),
        ("kubeflow.org/mpijob", ("kubeflow.org", "mpijobs")),
    ],
)
def test_a_framework_names_the_resource_it_manages(
    framework: str, resource: tuple[str, str]
) -> None:
    assert kueue.framework_resource(framework) == resource


# --- Kueue's CRDs and webhooks ------------------------------------------------------------


def hook(name: str, group: str, resource: str, path: str) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {"name": "webhook-service", "namespace": "system", "path": path}
        },
        "failurePolicy": "Fail",
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": [resource],
            }
        ],
        "sideEffects": "None",
    }


def fake_source(root: Path) -> Path:
    """The parts of Kueue's module layout cliques reads, as upstream has them."""
    crd_dir = root / kueue.CRD_DIR
    crd_dir.mkdir(parents=True)
    for plural in ("resourceflavors", "workloads"):
        (crd_dir / f"kueue.x-k8s.io_{plural}.yaml").write_text(
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            f"metadata:\n  name: {plural}.kueue.x-k8s.io\n"
        )
    webhook_dir = root / kueue.WEBHOOK_DIR
    webhook_dir.mkdir(parents=True)
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mutating-webhook-configuration"},
        "webhooks": [
            hook("mjob.kb.io", "batch", "jobs", "/mutate-batch-v1-job"),
            hook("mpod.kb.io", "", "pods", "/mutate--v1-pod"),
            hook("mresourceflavor.kb.io", "kueue.x-k8s.io", "resourceflavors", "/mutate-rf"),
        ],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validating-webhook-configuration"},
        "webhooks": [
            hook("vpod.kb.io", "", "pods", "/validate--v1-pod"),
            hook("vworkload.kb.io", "kueue.x-k8s.io", "workloads/status", "/validate-wl"),
            hook("vrayjob.kb.io", "ray.io", "rayjobs", "/validate-ray"),
        ],
    }
    (webhook_dir / "manifests.yaml").write_text(yaml.safe_dump_all([mutating, validating]))
    (webhook_dir / "kustomization.yaml").write_text(
        textwrap.dedent(
            """\
            resources:
            - manifests.yaml
            patches:
            - patch: |-
                apiVersion: admissionregistration.k8s.io/v1
                kind: MutatingWebhookConfiguration
                metadata:
                  name: mutating-webhook-configuration
                webhooks:
                - name: mpod.kb.io
                  namespaceSelector:
                    matchExpressions:
                    - key: kubernetes.io/metadata.name
                      operator: NotIn
                      values: [kube-system, kueue-system]
            """
        )
    )
    return root


def by_name(configurations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {h["name"]: h for c in configurations for h in c["webhooks"]}


def test_crds_are_read_from_the_module_source(tmp_path: Path) -> None:
    source = fake_source(tmp_path)
    names = [crd["metadata"]["name"] for crd in kueue.crds(source)]
    assert names == ["resourceflavors.kueue.x-k8s.io", "workloads.kueue.x-k8s.io"]
    with pytest.raises(FileNotFoundError):
        kueue.crds(tmp_path / "elsewhere")


def test_webhooks_are_called_by_url_with_the_ca_and_only_those_needed(tmp_path: Path) -> None:
    upstream = kueue.upstream_webhooks(fake_source(tmp_path))
    ca = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    configs = kueue.webhook_configurations(upstream, "kueue-dev-cluster-c1", 9443, ca)
    assert [c["kind"] for c in configs] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    assert {c["metadata"]["name"] for c in configs} == {"kueue-dev-cluster-c1"}
    hooks = by_name(configs)
    # Kueue's own objects and the pod framework; not jobs or Ray, which are not enabled.
    assert set(hooks) == {"mpod.kb.io", "mresourceflavor.kb.io", "vpod.kb.io", "vworkload.kb.io"}
    for hook_ in hooks.values():
        assert set(hook_["clientConfig"]) == {"url", "caBundle"}
        assert base64.b64decode(hook_["clientConfig"]["caBundle"]) == ca
    assert hooks["mpod.kb.io"]["clientConfig"]["url"] == "https://127.0.0.1:9443/mutate--v1-pod"
    assert hooks["vworkload.kb.io"]["clientConfig"]["url"] == "https://127.0.0.1:9443/validate-wl"
    with_jobs = by_name(kueue.webhook_configurations(upstream, "n", 1, ca, ["pod", "batch/job"]))
    assert "mjob.kb.io" in with_jobs and "vrayjob.kb.io" not in with_jobs


def test_the_pod_webhooks_leave_kube_system_alone(tmp_path: Path) -> None:
    upstream = kueue.upstream_webhooks(fake_source(tmp_path))
    hooks = by_name(kueue.webhook_configurations(upstream, "n", 1, b"ca"))
    excluded = {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["kube-system", "kueue-system"],
    }
    # mpod.kb.io has it from the kustomization's patch (once), vpod.kb.io gets it from us.
    assert hooks["mpod.kb.io"]["namespaceSelector"] == {"matchExpressions": [excluded]}
    assert hooks["vpod.kb.io"]["namespaceSelector"] == {"matchExpressions": [excluded]}
    assert "namespaceSelector" not in hooks["mresourceflavor.kb.io"]


def test_a_patch_for_another_configuration_changes_nothing() -> None:
    doc = {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "a"}, "webhooks": []}
    patch = {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "b"}, "webhooks": []}
    assert kueue.merge_webhook_patch(doc, patch) == doc


def kueue_module_source() -> Path | None:
    modcache = os.environ.get("GOMODCACHE") or str(Path.home() / "go" / "pkg" / "mod")
    source = Path(modcache) / f"sigs.k8s.io/kueue@{gomodules.KUEUE.version()}"
    return source if (source / kueue.WEBHOOK_DIR).is_dir() else None


@pytest.mark.skipif(kueue_module_source() is None, reason="Kueue's module is not downloaded")
def test_the_real_kueue_module_gives_the_pod_and_core_webhooks() -> None:
    source = kueue_module_source()
    assert source is not None
    assert len(kueue.crds(source)) >= 10
    hooks = by_name(kueue.webhook_configurations(kueue.upstream_webhooks(source), "n", 1, b"ca"))
    assert {"mpod.kb.io", "vpod.kb.io", "mworkload.kb.io", "vworkload.kb.io"} <= set(hooks)
    assert {"mclusterqueue.kb.io", "vclusterqueue.kb.io", "vcohort.kb.io"} <= set(hooks)
    assert {"mresourceflavor.kb.io", "vresourceflavor.kb.io"} <= set(hooks)
    assert not {"mjob.kb.io", "mdeployment.kb.io", "vrayjob.kb.io"} & set(hooks)
    for name in ("mpod.kb.io", "vpod.kb.io"):
        (expression,) = hooks[name]["namespaceSelector"]["matchExpressions"]
        assert expression["operator"] == "NotIn" and "kube-system" in expression["values"]


# --- the webhook certificate --------------------------------------------------------------


def test_the_serving_extensions_name_the_loopback_addresses() -> None:
    text = certs.serving_extensions()
    assert "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n" in text
    assert "extendedKeyUsage=serverAuth" in text and "CA:FALSE" in text


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_the_serving_certificate_is_for_127_0_0_1_and_signed_by_the_ca(tmp_path: Path) -> None:
    files = certs.ensure(tmp_path / "certs", "test CA")
    assert certs.subject_alt_names(files.tls_crt) == [
        "IP Address:127.0.0.1",
        "IP Address:0:0:0:0:0:0:0:1",
        "DNS:localhost",
    ]
    verified = subprocess.run(
        ["openssl", "verify", "-CAfile", str(files.ca_crt), str(files.tls_crt)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stderr
    assert (files.tls_key.stat().st_mode & 0o777) == 0o600
    assert not files.csr.exists()
    # A valid set is kept (a restarted Kueue serves the certificate the webhooks trust).
    before = files.tls_crt.read_bytes()
    assert certs.ensure(tmp_path / "certs", "test CA") == files
    assert files.tls_crt.read_bytes() == before
    files.tls_key.unlink()  # an incomplete set is made anew
    certs.ensure(tmp_path / "certs", "test CA")
    assert files.tls_crt.read_bytes() != before


# --- metrics-server -----------------------------------------------------------------------


def test_kwokctl_runs_metrics_server_from_our_binary_and_module(tmp_path: Path) -> None:
    config = {"kind": "KwokctlConfiguration", "options": {"runtime": "binary"}}
    out = metrics_server.with_metrics_server(config, tmp_path / "ms", tmp_path / "src")
    assert out["options"] == {
        "runtime": "binary",
        "enableMetricsServer": True,
        "metricsServerBinary": str(tmp_path / "ms"),
        "metricsServerManifests": [str(tmp_path / "src" / "manifests" / "base")],
    }
    assert config["options"] == {"runtime": "binary"}  # the input is left alone
    assert metrics_server.node_annotations("kwok-node-3") == {
        "metrics.k8s.io/resource-metrics-path": "/metrics/nodes/kwok-node-3/metrics/resource"
    }
    assert metrics_server.pod_metrics_path("ns", "p") == (
        "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p"
    )


@pytest.mark.parametrize(
    ("quantity", "cores"),
    [("500m", "0.5"), ("500042447n", "0.500042447"), ("2", "2"), ("250u", "0.00025")],
)
def test_cpu_quantities_in_cores(quantity: str, cores: str) -> None:
    assert metrics_server.cpu_cores(quantity) == Decimal(cores)


def test_pod_cpu_is_the_sum_of_its_containers() -> None:
    pod = {"containers": [{"usage": {"cpu": "100m"}}, {"usage": {"cpu": "400000000n"}}]}
    assert metrics_server.pod_cpu_cores(pod) == Decimal("0.5")
    with pytest.raises(ValueError, match="not a CPU quantity"):
        metrics_server.cpu_cores("1Gi")


# --- add-on processes in status, up and down ----------------------------------------------


def with_addons(paths: cluster.ClusterPaths, *names: str) -> None:
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    paths.addons_record.write_text(addons.record_text(names))


def test_status_lists_the_add_ons_and_their_processes(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    with_addons(paths, "kueue", "metrics-server")
    st = cluster.status("c1", tmp_path)
    assert st.addons == ("metrics-server", "kueue")
    assert [c.name for c in st.components] == [*kwok.COMPONENTS, "metrics-server", "kueue"]
    assert st.components[-1].log == paths.logs_dir / "kueue.log"
    # Until the cluster is usable only what kwokctl starts is checked, not Kueue.
    checked = [c.name for c in cluster._component_states(paths, host_addons=False)]
    assert checked == [*kwok.COMPONENTS, "metrics-server"]


def test_up_refuses_metrics_server_for_an_existing_cluster_before_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLIQUES_GO", str(tmp_path / "no-go"))  # a build would fail otherwise
    fake_cluster(tmp_path, "c1")
    with pytest.raises(DevClusterError) as caught:
        cluster.up("c1", addons=["metrics-server"], root=tmp_path)
    assert "was created without metrics-server" in str(caught.value)
    assert not any(tmp_path.glob("metrics-server-v*"))  # nothing was built for it
    with pytest.raises(ValueError, match="unknown add-on"):
        cluster.up("c1", addons=["nope"], root=tmp_path)


def test_down_stops_an_add_on_process(tmp_path: Path) -> None:
    paths = fake_cluster(tmp_path, "c1")
    with_addons(paths, "kueue")
    fake = tmp_path / "bin" / "kueue"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(120)\n")
    fake.chmod(0o755)
    argv = [str(fake), "--kubeconfig", str(paths.kubeconfig)]
    log, pid_file = paths.component_log("kueue"), paths.pid_file("kueue")
    pid = processes.spawn(argv, log, pid_file, env=dict(os.environ))
    assert processes.read_pid(pid_file) == pid
    assert os.getsid(pid) == pid  # a session of its own: a ^C of `up` does not reach it
    deadline = time.monotonic() + 10
    while not cluster.status("c1", tmp_path).components[-1].running:
        assert time.monotonic() < deadline, processes.tail(log)
        time.sleep(0.05)
    result = cluster.down("c1", root=tmp_path)
    assert result.stopped == [pid]
    assert pid not in processes.ps([pid])
    assert not paths.workdir.exists() and not paths.state_dir.exists()


def test_free_ports_are_distinct() -> None:
    ports = addons_up.free_ports(3)
    assert len(set(ports)) == 3 and all(1024 < p < 65536 for p in ports)
    assert addons_up.webhook_name("c1") == "kueue-dev-cluster-c1"
