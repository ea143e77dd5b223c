"""The Helm chart's files that copy something kept elsewhere stay equal to it, without helm:
its RBAC rules (files/rbac-rules.yaml) are the kustomize ones (deploy/operator/rbac.yaml),
and its appVersion is the package's version (the image tag it deploys by default). The CRD
copies are checked with the others in test_package_resources.py; what the chart renders is
tested with helm in tests/integration/test_helm_chart.py."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "cliques"
KUSTOMIZE_RBAC = ROOT / "deploy" / "operator" / "rbac.yaml"


def kustomize_rules() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(KUSTOMIZE_RBAC.read_text()) if d]
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    return {
        "workload": by_name[("ClusterRole", "cliques-operator")]["rules"],
        "leases": by_name[("Role", "cliques-operator-leases")]["rules"],
    }


def test_the_charts_rbac_rules_are_the_kustomize_ones() -> None:
    chart = yaml.safe_load((CHART / "files" / "rbac-rules.yaml").read_text())
    assert chart == kustomize_rules(), (
        "deploy/helm/cliques/files/rbac-rules.yaml must hold the rules of "
        "deploy/operator/rbac.yaml: `workload` those of the ClusterRole, `leases` those of "
        "the Role cliques-operator-leases"
    )


def test_the_charts_app_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    version = cargo["workspace"]["package"]["version"]
    assert chart["appVersion"] == version
    assert yaml.safe_load((CHART / "values.yaml").read_text())["image"]["tag"] == ""
