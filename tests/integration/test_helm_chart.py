"""The Helm chart (deploy/helm/cliques) and the kustomize base (deploy/) against a real
kube-apiserver: `helm lint`, what `helm template` renders with the default values and with
others, server-side dry-runs of the result, Pod Security "restricted", RBAC rules equal to
the kustomize ones, and a kustomize overlay that swaps the image.

`helm` is the session fixture of tests/support/cluster_fixtures.py (built from gomod/helm);
the API server judges every rendered object through `kubectl apply --dry-run=server`, so
nothing is created. The ServiceMonitor's CRD is not installed: it is checked as rendered only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cliques.cli import build_parser
from tests.support.cluster_fixtures import KubeCluster

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "cliques"
DEPLOY = REPO / "deploy"
RELEASE = "cliques"
HELM_TIMEOUT = 60
INSTALL_TIMEOUT = 120
# The image `make image` builds, and the one deploy/operator/deployment.yaml names.
BUILT_IMAGE = ("cliques", "0.1.0")
KUSTOMIZE_IMAGE = "ghcr.io/cliques-dev/cliques"
BASE_NAMESPACE = "cliques-system"

NON_DEFAULT = {
    "replicas": 3,
    "workers": 4,
    "rbac": {"scope": "namespace"},
    "image": {"repository": "registry.example/cliques", "digest": "sha256:" + "ab" * 32},
    "logFormat": "text",
    "qps": 50,
    "burst": 100,
    "statusHold": 0,
    "metrics": {"port": 9090, "serviceMonitor": {"enabled": True, "labels": {"team": "ml"}}},
    "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"memory": "3Gi"}},
    "nodeSelector": {"pool": "system"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops"}],
    "terminationGracePeriodSeconds": 90,
}


# -- helpers --------------------------------------------------------------------------------


def run(argv: list[str], *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=HELM_TIMEOUT, check=False
    )


def render(
    helm: Path, namespace: str, *args: str, values: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """`helm template` of the chart: its documents, parsed."""
    argv = [str(helm), "template", RELEASE, str(CHART), "--namespace", namespace, *args]
    if values is not None:
        argv += ["--values", "-"]
    done = run(argv, stdin=yaml.safe_dump(values) if values is not None else None)
    assert done.returncode == 0, f"helm template failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def kinds(docs: list[dict[str, Any]]) -> list[str]:
    return sorted(d["kind"] for d in docs)


def dry_run(
    cluster: KubeCluster, docs: list[dict[str, Any]], *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`kubectl apply --dry-run=server` of the documents: the API server judges them."""
    done = cluster.kubectl_run(
        "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(docs), check=False
    )
    if check:
        assert done.returncode == 0, f"the API server refused:\n{done.stderr}"
        assert done.stdout.count("(server dry run)") == len(docs), done.stdout
    return done


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["operator"]
    return dict(containers[0])


def operator_args(main: dict[str, Any]) -> argparse.Namespace:
    """The container's arguments as `cliques operator` parses them (an unknown flag fails)."""
    assert main["args"][0] == "operator"
    return build_parser().parse_args(main["args"])


def pod_of(deployment: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The Pod the Deployment's template makes (Pod Security is enforced on pods)."""
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "psa-probe", "namespace": namespace, **template["metadata"]},
        "spec": template["spec"],
    }


def rules_by_kind(docs: list[dict[str, Any]]) -> dict[tuple[str, str], list[Any]]:
    """(kind, name without the release prefix) -> rules, of every Role and ClusterRole."""
    out = {}
    for doc in docs:
        if doc["kind"] in ("Role", "ClusterRole"):
            name = doc["metadata"]["name"].removeprefix(f"{RELEASE}-")
            out[(doc["kind"], name)] = doc["rules"]
    return out


@pytest.fixture(scope="module")
def kustomize_docs(kube_cluster: KubeCluster) -> list[dict[str, Any]]:
    done = kube_cluster.kubectl_run("kustomize", str(DEPLOY))
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture
def restricted(kube_cluster: KubeCluster, namespace: str) -> Iterator[str]:
    """The test's namespace with Pod Security "restricted" enforced (and warned about)."""
    kube_cluster.kubectl_run(
        "label",
        "namespace",
        namespace,
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/warn=restricted",
    )
    yield namespace


# -- helm ------------------------------------------------------------------------------------


def test_helm_lint_passes_with_default_and_other_values(helm: Path, tmp_path: Path) -> None:
    done = run([str(helm), "lint", "--strict", str(CHART)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(NON_DEFAULT))
    done = run([str(helm), "lint", "--strict", str(CHART), "--values", str(values)])
    assert done.returncode == 0, done.stdout + done.stderr


def test_default_render_is_accepted_by_the_api_server(
    helm: Path, kube_cluster: KubeCluster, namespace: str
) -> None:
    docs = render(helm, namespace, "--include-crds")
    assert kinds(docs) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "Deployment",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    deployment = one(docs, "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    main = container(deployment)
    assert deployment["spec"]["replicas"] == 2
    assert main["image"] == "cliques:0.1.0"
    args = operator_args(main)
    assert args.start_gate_image == main["image"]  # the start gate runs the same image
    assert args.leases and args.lease_namespace == namespace
    assert args.namespace is None and args.workers == 2  # every namespace
    assert args.metrics_bind_address == ("0.0.0.0", 8080) and args.metrics_port is None
    assert (args.lease_duration, args.renew_deadline, args.retry_period) == (15, 10, 2)
    assert "--leases" in main["args"] and f"--lease-namespace={namespace}" in main["args"]
    assert not any(a.startswith("--namespace") for a in main["args"])  # every namespace
    assert "--metrics-bind-address=0.0.0.0:8080" in main["args"]
    assert "--workers=2" in main["args"] and "--log-format=json" in main["args"]
    env = {e["name"]: e for e in main["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert [p.get("hostPort") for p in main["ports"]] == [None]  # only through the Service
    # Longer than the supervisor's 60 s for its workers to drain and hand back their Leases.
    assert spec["terminationGracePeriodSeconds"] > 60
    anti = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert (
        anti[0]["podAffinityTerm"]["labelSelector"]["matchLabels"]
        == (deployment["spec"]["selector"]["matchLabels"])
    )
    service = one(docs, "Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
    ]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    binding = one(docs, "ClusterRoleBinding")
    assert binding["subjects"][0]["namespace"] == namespace
    dry_run(kube_cluster, docs)


def test_other_values_render_and_are_accepted_by_the_api_server(
    helm: Path, kube_cluster: KubeCluster, namespace: str
) -> None:
    docs = render(helm, namespace, values=NON_DEFAULT)
    assert "ClusterRole" not in kinds(docs) and "ClusterRoleBinding" not in kinds(docs)
    deployment = one(docs, "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    main = container(deployment)
    assert deployment["spec"]["replicas"] == 3
    assert main["image"] == "registry.example/cliques@sha256:" + "ab" * 32
    for arg in (
        f"--namespace={namespace}",
        "--workers=4",
        "--log-format=text",
        "--qps=50",
        "--burst=100",
        "--status-hold=0",
        "--metrics-bind-address=0.0.0.0:9090",
    ):
        assert arg in main["args"]
    args = operator_args(main)
    assert (args.namespace, args.workers, args.qps, args.burst) == (namespace, 4, 50, 100)
    assert (args.status_hold, args.log_format) == (0, "text")
    assert args.start_gate_image == main["image"]
    assert main["ports"][0]["containerPort"] == 9090
    assert main["resources"] == NON_DEFAULT["resources"]
    assert spec["tolerations"] == NON_DEFAULT["tolerations"]
    assert spec["nodeSelector"] == {"pool": "system"}
    assert spec["terminationGracePeriodSeconds"] == 90
    binding = next(
        d
        for d in docs
        if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == f"{RELEASE}-operator"
    )
    assert binding["roleRef"]["kind"] == "Role"
    assert binding["metadata"]["namespace"] == namespace

    monitor = one(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["team"] == "ml"
    assert monitor["spec"]["selector"]["matchLabels"] == one(docs, "Service")["spec"]["selector"]
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [namespace]}
    # The monitoring.coreos.com CRD is not installed here: the rest goes to the API server.
    dry_run(kube_cluster, [d for d in docs if d["kind"] != "ServiceMonitor"])


def test_helm_installs_and_uninstalls_a_release(
    helm: Path, kube_cluster: KubeCluster, namespace: str
) -> None:
    """A real install (KWOK runs the pods without pulling the image), waited on by helm."""
    release = "cliques-" + namespace.rsplit("-", 1)[-1]  # unique; a Service name starts a-z
    env = kube_cluster.env()
    base = [str(helm), "--kubeconfig", str(kube_cluster.kubeconfig), "--namespace", namespace]
    install = [*base, "install", release, str(CHART), "--set", "rbac.scope=namespace"]
    done = subprocess.run(
        [*install, "--wait", "--timeout", f"{INSTALL_TIMEOUT}s"],
        capture_output=True,
        text=True,
        env=env,
        timeout=INSTALL_TIMEOUT + 30,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"watching CliqueSets in {namespace} only" in done.stdout  # NOTES.txt
    name = f"{release}-operator"
    deployment = yaml.safe_load(
        kube_cluster.kubectl_run("get", "deployment", name, "-n", namespace, "-o", "yaml").stdout
    )
    assert deployment["status"]["readyReplicas"] == 2
    pods = yaml.safe_load(
        kube_cluster.kubectl_run(
            "get",
            "pods",
            "-n",
            namespace,
            "-l",
            f"app.kubernetes.io/instance={release}",
            "-o",
            "yaml",
        ).stdout
    )["items"]
    assert len(pods) == 2
    assert all(f"--namespace={namespace}" in p["spec"]["containers"][0]["args"] for p in pods)

    done = subprocess.run(
        [*base, "uninstall", release, "--wait", "--timeout", f"{INSTALL_TIMEOUT}s"],
        capture_output=True,
        text=True,
        env=env,
        timeout=INSTALL_TIMEOUT + 30,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    left = kube_cluster.kubectl_run(
        "get",
        "deployment,service,role,rolebinding,serviceaccount,pdb",
        "-n",
        namespace,
        "-l",
        f"app.kubernetes.io/instance={release}",
        "-o",
        "name",
    )
    assert left.stdout.strip() == ""
    # The CRDs stay: Helm never deletes what it installed from crds/.
    kube_cluster.kubectl_run("get", "crd", "cliquesets.cliques.dev")


def test_values_that_cannot_work_are_refused_when_rendering(helm: Path) -> None:
    for values, message in (
        ({"rbac": {"scope": "cluster-wide"}}, "value must be one of 'cluster', 'namespace'"),
        ({"replica": 3}, "additional properties 'replica' not allowed"),
        ({"image": {"digest": "latest"}}, "at '/image/digest'"),
        ({"logFormat": "yaml"}, "at '/logFormat'"),
        ({"leases": {"renewDeadline": 20}}, "retryPeriod < renewDeadline < leaseDuration"),
        ({"terminationGracePeriodSeconds": 10}, "terminationGracePeriodSeconds must exceed"),
    ):
        argv = [str(helm), "template", RELEASE, str(CHART), "--values", "-"]
        done = run(argv, stdin=yaml.safe_dump(values))
        assert done.returncode != 0, f"{values} rendered"
        assert message in done.stderr


def test_rbac_rules_are_the_kustomize_ones(
    helm: Path, namespace: str, kustomize_docs: list[dict[str, Any]]
) -> None:
    wanted = rules_by_kind(kustomize_docs)
    assert set(wanted) == {("ClusterRole", "operator"), ("Role", "operator-leases")}
    assert rules_by_kind(render(helm, namespace)) == wanted
    # Namespace scope: the same rules, in a Role.
    scoped = rules_by_kind(render(helm, namespace, "--set", "rbac.scope=namespace"))
    assert scoped == {
        ("Role", "operator"): wanted[("ClusterRole", "operator")],
        ("Role", "operator-leases"): wanted[("Role", "operator-leases")],
    }


def create_service_account(cluster: KubeCluster, docs: list[dict[str, Any]]) -> None:
    """Create the chart's ServiceAccount for real: a pod naming a missing one is refused
    before Pod Security is asked."""
    cluster.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump(one(docs, "ServiceAccount")))


def test_the_pod_passes_pod_security_restricted(
    helm: Path, kube_cluster: KubeCluster, restricted: str
) -> None:
    docs = render(helm, restricted)
    create_service_account(kube_cluster, docs)
    deployment = one(docs, "Deployment")
    done = dry_run(kube_cluster, [deployment])
    assert "PodSecurity" not in done.stderr, done.stderr
    # Enforcement applies to pods: the pod the template makes is admitted.
    dry_run(kube_cluster, [pod_of(deployment, restricted)])


def test_the_kustomize_pod_passes_pod_security_restricted(
    kube_cluster: KubeCluster, restricted: str, kustomize_docs: list[dict[str, Any]]
) -> None:
    account = dict(one(kustomize_docs, "ServiceAccount"))
    account["metadata"] = {**account["metadata"], "namespace": restricted}
    kube_cluster.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump(account))
    deployment = one(kustomize_docs, "Deployment")
    deployment["metadata"] = {**deployment["metadata"], "namespace": restricted}
    done = dry_run(kube_cluster, [deployment])
    assert "PodSecurity" not in done.stderr, done.stderr
    dry_run(kube_cluster, [pod_of(deployment, restricted)])


def test_a_root_pod_is_refused_by_pod_security_restricted(
    helm: Path, kube_cluster: KubeCluster, restricted: str
) -> None:
    docs = render(
        helm,
        restricted,
        "--set",
        "podSecurityContext.runAsUser=0",
        "--set",
        "securityContext.runAsUser=0",
    )
    create_service_account(kube_cluster, docs)
    broken = one(docs, "Deployment")
    assert container(broken)["securityContext"]["runAsUser"] == 0
    done = dry_run(kube_cluster, [broken])  # a Deployment is only warned about
    assert 'would violate PodSecurity "restricted:latest"' in done.stderr, done.stderr
    refused = dry_run(kube_cluster, [pod_of(broken, restricted)], check=False)
    assert refused.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in refused.stderr
    assert "runAsUser=0" in refused.stderr


# -- kustomize -------------------------------------------------------------------------------


def test_kustomize_base_is_accepted_by_the_api_server(kube_cluster: KubeCluster) -> None:
    # A dry-run creates no namespace, and the base's objects live in cliques-system: it is
    # created if missing (and left, empty: another session may be installing into it).
    if kube_cluster.kubectl_run("get", "namespace", BASE_NAMESPACE, check=False).returncode:
        kube_cluster.kubectl_run("create", "namespace", BASE_NAMESPACE, check=False)
    done = kube_cluster.kubectl_run("apply", "-k", str(DEPLOY), "--dry-run=server", check=False)
    assert done.returncode == 0, done.stderr
    assert "deployment.apps/cliques-operator created (server dry run)" in done.stdout


def test_a_kustomize_overlay_sets_the_built_image(
    kube_cluster: KubeCluster, namespace: str, tmp_path: Path
) -> None:
    name, tag = BUILT_IMAGE
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": namespace,
        "resources": [os.path.relpath(DEPLOY, tmp_path)],  # kustomize wants it relative
        "images": [{"name": KUSTOMIZE_IMAGE, "newName": name, "newTag": tag}],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    rendered = kube_cluster.kubectl_run("kustomize", str(tmp_path)).stdout
    docs = [doc for doc in yaml.safe_load_all(rendered) if doc]
    deployment = one(docs, "Deployment")
    assert container(deployment)["image"] == f"{name}:{tag}"
    assert deployment["metadata"]["namespace"] == namespace
    dry_run(kube_cluster, docs)
