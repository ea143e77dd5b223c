"""The operator image, run as the cluster runs it, against the real control plane.

The image is built once per session by scripts/build_image.py (what `make image` runs; its
layers are reused while the sources are unchanged), unpacked, and its entrypoint started as
its user (65532) with a read-only root file system, a tmpfs on /tmp and the shipped
Deployment's arguments, configured in-cluster: a token of the shipped ServiceAccount, the
cluster CA and the namespace under /var/run/secrets/kubernetes.io/serviceaccount and
`KUBERNETES_SERVICE_HOST/PORT` (see tests/support/incluster.py).

- with exactly the shipped cluster-wide RBAC, a CliqueSet deploys, rolls, heals, scales and is
  deleted (its children collected), and the operator is never refused a request;
- the shipped RBAC is least privilege: `kubectl auth can-i` as its ServiceAccount allows every
  permission of `cliques.operator.rbac` and denies the rest;
- the API server enforces `blockOwnerDeletion` (OwnerReferencesPermissionEnforcement): without
  `update` on `cliques/finalizers` the operator's pods are refused;
- the namespace-scoped install (Roles, `--namespace`) is allowed its namespace only and runs
  a CliqueSet to Available.

The cluster-wide operator watches every namespace of the test cluster while it runs; it only
acts on CliqueSets, which other tests keep in namespaces of their own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cliques.operator import rbac
from tests.support.harness import Cluster, cliqueset, wait_for
from tests.support.incluster import (
    Image,
    ImageOperator,
    build_image,
    can_i,
    cluster_ca,
    expand_args,
    shipped_container,
    shipped_rbac,
    unpack,
    write_service_account,
)

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_INSTALL = ROOT / "deploy/operator"
NAMESPACED_INSTALL = ROOT / "deploy/namespaced"
ACCOUNT = "cliques-operator"
LABEL_SET = "cliques.dev/cliqueset"


@pytest.fixture(scope="session")
def operator_image() -> Image:
    started = time.monotonic()
    image = build_image(ROOT / "dist")
    print(f"\noperator image {image.archive.name} ready in {time.monotonic() - started:.1f}s")
    return image


@pytest.fixture(scope="session")
def image_rootfs(
    operator_image: Image, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    return unpack(operator_image, tmp_path_factory.mktemp("image"))


def test_the_image_holds_the_operator_and_nothing_to_build_or_install_with(
    operator_image: Image, image_rootfs: tuple[Path, dict[str, Any]]
) -> None:
    rootfs, runtime = image_rootfs
    process = runtime["process"]
    assert process["args"][0] == "/usr/local/bin/cliques"
    assert (process["user"]["uid"], process["user"]["gid"]) == (65532, 65532)
    assert operator_image.info["tags"][0] == operator_image.info["version"]
    site = rootfs / "usr/local/lib/python3.11/dist-packages"
    assert (site / "cliques").is_dir() and list((site / "cliques").glob("_core*.so"))
    assert (rootfs / "etc/ssl/certs/ca-certificates.crt").stat().st_size > 100_000
    absent = [
        "bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/apt-get", "usr/bin/dpkg", "usr/bin/perl",
        "usr/bin/gcc", "usr/bin/cc", "usr/bin/cargo", "usr/bin/rustc", "usr/bin/pip",
        "usr/bin/pip3", "usr/local/bin/pip", "root/.cache", "root/.cargo", ".git",
    ]  # fmt: skip
    present = [p for p in absent if (rootfs / p).exists() or (rootfs / p).is_symlink()]
    assert not present, f"the image holds {present}"
    assert not list(site.glob("pip")) and not list(site.glob("*.whl"))
    lab = [str(p.relative_to(site)) for p in site.glob("cliques*") if "lab" in p.name]
    lab += [name for name in ("bench", "devcluster") if (site / "cliques" / name).exists()]
    assert lab == [], f"the image carries cliques-lab: {lab}"
    assert not list(rootfs.glob("**/.git")), "a .git directory in the image"
    total = sum(f.stat().st_size for f in rootfs.rglob("*") if f.is_file() and not f.is_symlink())
    assert total < 150 * 10**6, f"the image's files take {total / 1e6:.0f} MB"


def apply(kube_cluster: Any, docs: list[dict[str, Any]]) -> None:
    kube_cluster.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


@pytest.fixture
def cluster_rbac(kube_cluster: Any, crds: str, namespace: str) -> Iterator[list[dict[str, Any]]]:
    """The shipped cluster-wide RBAC, its ServiceAccount in the test's namespace."""
    docs = shipped_rbac(CLUSTER_INSTALL / "rbac.yaml", namespace)
    apply(kube_cluster, docs)
    try:
        yield docs
    finally:
        for doc in docs:
            if doc["kind"].startswith("Cluster"):
                kube_cluster.kubectl_run(
                    "delete", doc["kind"], doc["metadata"]["name"], "--wait=false", check=False
                )


def start_operator(
    kube_cluster: Any,
    image_rootfs: tuple[Path, dict[str, Any]],
    install: Path,
    namespace: str,
    tmp_path: Path,
) -> ImageOperator:
    """The operator of `install`'s Deployment, in the test's namespace, ready (/readyz)."""
    rootfs, runtime = image_rootfs
    secrets = tmp_path / "serviceaccount"
    write_service_account(
        kube_cluster.kubectl_run, secrets, namespace, ACCOUNT, cluster_ca(kube_cluster.kubectl_run)
    )
    pod = "cliques-operator-7d9f-x2x"
    container = shipped_container(install / "deployment.yaml")
    args = expand_args(container["args"], {"POD_NAME": pod, "POD_NAMESPACE": namespace})
    operator = ImageOperator(
        rootfs,
        runtime,
        server=kube_cluster.server,
        secrets=secrets,
        args=args,
        pod=pod,
        namespace=namespace,
        log_path=tmp_path / "operator.log",
    )
    deadline = time.monotonic() + 90
    while not operator.ready():
        if time.monotonic() > deadline:
            operator.stop()
            raise AssertionError(f"operator not ready after 90s:\n{operator.log()}")
        time.sleep(0.2)
    return operator


def assert_runs_as_a_kubelet_would(operator: ImageOperator) -> None:
    assert operator.status("Uid").split()[:2] == ["65532", "65532"]
    assert operator.status("Gid").split()[:2] == ["65532", "65532"]
    assert operator.status("CapEff") == "0000000000000000"
    assert "ro" in operator.root_mount_options()


#: A refusal that is not about the operator's rights: a create in a namespace being deleted
#: (the cluster-wide operator also sees what other tests leave behind).
NOT_RBAC = "because it is being terminated"


def assert_never_refused(operator: ImageOperator) -> None:
    lines = [line for line in operator.log().lower().splitlines() if NOT_RBAC not in line]
    log = "\n".join(lines)
    for word in ("forbidden", " 403", "unauthorized", " 401"):
        assert word not in log, f"the operator was refused ({word.strip()}):\n{operator.log()}"


def available(cqs: Any) -> bool:
    """Available, for the current generation, every gang on the current template."""
    st = cqs.status
    return bool(
        st is not None
        and st.observed_generation == cqs.metadata.generation
        and any(c.type == "Available" and c.status == "True" for c in st.conditions)
        and st.updated_replicas == cqs.spec.replicas
    )


async def pods_of(cluster: Cluster, name: str) -> list[Any]:
    return [p for p in await cluster.pods() if p.metadata.labels.get(LABEL_SET) == name]


async def test_the_image_runs_a_cliqueset_through_its_life_with_the_shipped_rbac(
    kube_cluster: Any,
    cluster: Cluster,
    cluster_rbac: list[dict[str, Any]],
    image_rootfs: tuple[Path, dict[str, Any]],
    namespace: str,
    tmp_path: Path,
) -> None:
    operator = start_operator(kube_cluster, image_rootfs, CLUSTER_INSTALL, namespace, tmp_path)
    try:
        assert_runs_as_a_kubelet_would(operator)
        # Deploy: 2 gangs of a leader and 2 workers.
        await cluster.apply(cliqueset("llama", replicas=2))
        await cluster.wait_available("llama", timeout=120)
        first = {p.metadata.name: p.metadata.uid for p in await pods_of(cluster, "llama")}
        assert len(first) == 6

        # Roll: a new image replaces every pod.
        await cluster.apply(cliqueset("llama", replicas=2, image="busybox:1.37"))

        async def rolled() -> bool:
            cqs = await cluster.cliqueset("llama")
            pods = await pods_of(cluster, "llama")
            listed = kube_cluster.kubectl_run(
                "get", "pods", "-n", namespace, "-l", f"{LABEL_SET}=llama", "-o", "json"
            ).stdout
            images = {
                c["image"]
                for p in json.loads(listed)["items"]
                for c in p["spec"]["containers"]
                if c["name"] == "main"
            }
            uids = {p.metadata.uid for p in pods}
            return (
                available(cqs)
                and cqs.status.updated_replicas == 2
                and images == {"busybox:1.37"}
                and len(pods) == 6
                and not uids & set(first.values())
            )

        await wait_for(rolled, timeout=180, what="every pod on busybox:1.37")

        # Heal: a deleted pod comes back under its name.
        victim = sorted(p.metadata.name for p in await pods_of(cluster, "llama"))[0]
        old_uid = {p.metadata.name: p.metadata.uid for p in await pods_of(cluster, "llama")}
        kube_cluster.kubectl_run("delete", "pod", victim, "-n", namespace, "--wait=false")

        async def healed() -> bool:
            pods = {p.metadata.name: p for p in await pods_of(cluster, "llama")}
            pod = pods.get(victim)
            return pod is not None and pod.metadata.uid != old_uid[victim] and pod.is_ready

        await wait_for(healed, timeout=120, what=f"{victim} recreated and Ready")
        await cluster.wait_available("llama", timeout=120)

        # Scale: a third gang.
        kube_cluster.kubectl_run("scale", "cliqueset", "llama", "-n", namespace, "--replicas=3")

        async def scaled() -> bool:
            cqs = await cluster.cliqueset("llama")
            pods = await pods_of(cluster, "llama")
            return available(cqs) and cqs.spec.replicas == 3 and len(pods) == 9

        await wait_for(scaled, timeout=120, what="3 gangs, 9 pods")

        # Delete: the garbage collector takes the children.
        kube_cluster.kubectl_run("delete", "cliqueset", "llama", "-n", namespace, "--wait=false")

        async def collected() -> bool:
            left = kube_cluster.kubectl_run(
                "get", "cliques,pods,services", "-n", namespace, "-l", f"{LABEL_SET}=llama",
                "-o", "name",
            ).stdout.split()  # fmt: skip
            return not left

        await wait_for(collected, timeout=120, what="Cliques, pods and Services collected")
        assert_never_refused(operator)
    finally:
        code = operator.stop()
    assert code == 0, f"the operator did not stop cleanly on SIGTERM ({code}):\n{operator.log()}"


def granted(rules: tuple[rbac.Rule, ...]) -> set[tuple[str, str]]:
    """(verb, resource as can-i names it) for every permission in `rules`."""
    out = set()
    for rule in rules:
        resource, _, sub = rule.resource.partition("/")
        name = f"{resource}.{rule.group}" if rule.group else resource
        name += f"/{sub}" if sub else ""
        out |= {(verb, name) for verb in rule.verbs}
    return out


# Neighbours of what the operator uses, that it must not get.
OUT_OF_REACH = [
    "secrets",
    "configmaps",
    "serviceaccounts",
    "serviceaccounts/token",
    "nodes/status",
    "namespaces",
    "pods/exec",
    "pods/log",
    "pods/eviction",
    "pods/status",
    "services/status",
    "endpoints",
    "persistentvolumeclaims",
    "deployments.apps",
    "statefulsets.apps",
    "daemonsets.apps",
    "events.events.k8s.io",
    "customresourcedefinitions.apiextensions.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "clusterroles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    # The HPA controller scales CliqueScalingGroups (scale) and reports (HPA status) with its
    # own rights; the operator writes neither.
    "cliquescalinggroups.cliques.dev/scale",
    "horizontalpodautoscalers.autoscaling/status",
]


def test_the_shipped_rbac_is_least_privilege(
    kube_cluster: Any, cluster_rbac: list[dict[str, Any]], namespace: str
) -> None:
    account = f"system:serviceaccount:{namespace}:{ACCOUNT}"
    workload, leases = granted(rbac.WORKLOAD), granted(rbac.LEASES)
    resources = {r for _, r in workload | leases}
    checks: list[tuple[str, str, str]] = []
    for verb in rbac.ALL_VERBS:
        for resource in sorted(resources):
            # The workload is everywhere (ClusterRole); the Leases only in its namespace.
            checks += [(verb, resource, namespace), (verb, resource, "default")]
        checks += [(verb, resource, namespace) for resource in OUT_OF_REACH]
    answers = can_i(kube_cluster.kubectl_run, account, checks)
    expected = {
        (verb, resource, ns): (verb, resource) in workload
        or ((verb, resource) in leases and ns == namespace)
        for verb, resource, ns in checks
    }
    wrong = {check: answers[check] for check in checks if answers[check] != expected[check]}
    assert not wrong, f"can-i answers that differ from cliques.operator.rbac: {wrong}"
    # Sanity: the list holds the finalizers the owner references need.
    assert ("update", "cliques.cliques.dev/finalizers") in workload
    assert ("update", "cliquesets.cliques.dev/finalizers") in workload
    # And the scaling groups and HPAs it keeps for spec.template.scalingGroups and autoscaling.
    for verb in ("get", "list", "watch", "create", "patch", "delete"):
        assert (verb, "cliquescalinggroups.cliques.dev") in workload
        assert (verb, "horizontalpodautoscalers.autoscaling") in workload
        # the gangs' scheduling groups, composite trees included (docs/gangs.md)
        assert (verb, "compositepodgroups.scheduling.k8s.io") in workload
    assert ("patch", "cliquescalinggroups.cliques.dev/status") in workload


def test_block_owner_deletion_needs_update_on_the_owners_finalizers(
    kube_cluster: Any, cluster_rbac: list[dict[str, Any]], namespace: str
) -> None:
    """OwnerReferencesPermissionEnforcement is on: a pod owned by a Clique with
    blockOwnerDeletion is created with the shipped rules, and refused without the Clique's
    finalizers rule."""
    account = f"system:serviceaccount:{namespace}:{ACCOUNT}"
    clique = {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "Clique",
        "metadata": {"name": "owner", "namespace": namespace},
        "spec": {
            "cliqueName": "owner",
            "gangIndex": 0,
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
        },
    }
    kube_cluster.kubectl_run("apply", "-f", "-", stdin=json.dumps(clique))
    uid = kube_cluster.kubectl_run(
        "get", "clique", "owner", "-n", namespace, "-o", "jsonpath={.metadata.uid}"
    ).stdout

    def pod(name: str) -> str:
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "ownerReferences": [
                        {
                            "apiVersion": "cliques.dev/v1alpha1",
                            "kind": "Clique",
                            "name": "owner",
                            "uid": uid,
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            }
        )

    allowed = kube_cluster.kubectl_run("create", f"--as={account}", "-f", "-", stdin=pod("a"))
    assert allowed.returncode == 0
    (role,) = [d for d in cluster_rbac if d["kind"] == "ClusterRole"]
    role["rules"] = [r for r in role["rules"] if r["resources"] != ["cliques/finalizers"]]
    apply(kube_cluster, [role])

    def refused() -> str | None:
        done = kube_cluster.kubectl_run(
            "create", f"--as={account}", "-f", "-", stdin=pod("b"), check=False
        )
        return done.stderr if done.returncode else None

    deadline = time.monotonic() + 30  # the authorizer's cache follows the Role change
    message = refused()
    while message is None and time.monotonic() < deadline:
        kube_cluster.kubectl_run("delete", "pod", "b", "-n", namespace, check=False)
        time.sleep(0.5)
        message = refused()
    assert message is not None, (
        "a blockOwnerDeletion reference was accepted without update on cliques/finalizers: "
        "the API server does not enforce OwnerReferencesPermissionEnforcement (a dev cluster "
        "created before it was enabled keeps its flags: `cliques dev-cluster down --name "
        f"{kube_cluster.name}` and run again)"
    )
    assert "blockOwnerDeletion" in message, message


async def test_the_namespaced_install_is_confined_to_its_namespace(
    kube_cluster: Any,
    cluster: Cluster,
    crds: str,
    image_rootfs: tuple[Path, dict[str, Any]],
    namespace: str,
    tmp_path: Path,
) -> None:
    docs = shipped_rbac(NAMESPACED_INSTALL / "rbac.yaml", namespace)
    assert not [d for d in docs if d["kind"].startswith("Cluster")]
    apply(kube_cluster, docs)
    account = f"system:serviceaccount:{namespace}:{ACCOUNT}"
    workload = granted(rbac.WORKLOAD)
    checks = [(v, r, ns) for v, r in sorted(workload) for ns in (namespace, "default", "")]
    answers = can_i(kube_cluster.kubectl_run, account, checks)
    wrong = {c: a for c, a in answers.items() if a != (c[2] == namespace)}
    assert not wrong, f"the namespaced install reaches beyond {namespace}: {wrong}"

    operator = start_operator(kube_cluster, image_rootfs, NAMESPACED_INSTALL, namespace, tmp_path)
    try:
        await cluster.apply(cliqueset("solo", replicas=1))
        await cluster.wait_available("solo", timeout=120)
        assert len(await pods_of(cluster, "solo")) == 3
        assert_never_refused(operator)
    finally:
        code = operator.stop()
    assert code == 0, f"the operator did not stop cleanly on SIGTERM ({code}):\n{operator.log()}"
