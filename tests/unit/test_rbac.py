"""The shipped RBAC grants exactly the permissions of `cliques.operator.rbac`: the ClusterRole
of deploy/operator/rbac.yaml and the Role of deploy/namespaced/rbac.yaml hold its workload
rules, the lease Role its lease rules, all bound to the ServiceAccount the Deployments run as.
The API server's verdict on them is in tests/e2e/test_in_cluster.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cliques.operator import rbac

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def normalized(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(group, resource, verb) triples, however the rules are grouped."""
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


WORKLOAD = normalized(rbac.policy_rules(rbac.WORKLOAD))
LEASES = normalized(rbac.policy_rules(rbac.LEASES))
INSTALLS = {
    "cluster": (DEPLOY / "operator/rbac.yaml", "ClusterRole", "ClusterRoleBinding"),
    "namespaced": (DEPLOY / "namespaced/rbac.yaml", "Role", "RoleBinding"),
}


@pytest.mark.parametrize("install", sorted(INSTALLS))
def test_the_roles_grant_exactly_the_rules_of_the_operator(install: str) -> None:
    path, role_kind, _ = INSTALLS[install]
    docs = load(path)
    assert normalized(find(docs, role_kind, "cliques-operator")["rules"]) == WORKLOAD
    assert normalized(find(docs, "Role", "cliques-operator-leases")["rules"]) == LEASES
    roles = [d for d in docs if d["kind"] in ("Role", "ClusterRole")]
    assert len(roles) == 2, "a role that cliques.operator.rbac does not describe"


@pytest.mark.parametrize("install", sorted(INSTALLS))
def test_the_bindings_name_the_deployments_service_account(install: str) -> None:
    path, role_kind, binding_kind = INSTALLS[install]
    docs = load(path)
    account = find(docs, "ServiceAccount", "cliques-operator")["metadata"]
    deployment = load(path.parent / "deployment.yaml")[0]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]
    assert deployment["metadata"]["namespace"] == account["namespace"]
    for kind, name, ref_kind in (
        (binding_kind, "cliques-operator", role_kind),
        ("RoleBinding", "cliques-operator-leases", "Role"),
    ):
        binding = find(docs, kind, name)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": ref_kind,
            "name": name,
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
        ]


def test_the_namespaced_deployment_is_the_shipped_one_watching_its_namespace() -> None:
    cluster = load(DEPLOY / "operator/deployment.yaml")[0]
    namespaced = load(DEPLOY / "namespaced/deployment.yaml")[0]
    container = namespaced["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][-2:] == ["--namespace", "$(POD_NAMESPACE)"]
    env = {e["name"]: e.get("valueFrom") for e in container["env"]}
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    container["args"] = container["args"][:-2]
    assert namespaced == cluster


def test_no_rule_reaches_secrets_or_configmaps_and_nodes_are_only_read() -> None:
    resources = {resource for _, resource, _ in WORKLOAD | LEASES}
    assert not resources & {"secrets", "configmaps", "pods/eviction", "*"}
    # gang-aware drain reads the Nodes' cordons and taints, and writes no Node
    assert {verb for _, resource, verb in WORKLOAD if resource == "nodes"} == {
        "get",
        "list",
        "watch",
    }
    assert all(verb in rbac.ALL_VERBS for _, _, verb in WORKLOAD | LEASES)
