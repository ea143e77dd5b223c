"""cliques.controllers.features.gang_apis: one strategy per scheduling.k8s.io version, picked
once from discovery, and no planner that asks which version it talks to."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cliques.controllers.features import gang_apis
from cliques.kube import gangapi

CONTROLLERS = Path(__file__).resolve().parents[2] / "python" / "cliques" / "controllers"


@pytest.mark.parametrize(
    ("version", "cls", "pod_groups", "mutable", "shared_claims"),
    [
        ("v1alpha1", gang_apis.V1Alpha1, False, False, False),
        ("v1alpha2", gang_apis.V1Alpha2, True, False, True),
        ("v1beta1", gang_apis.V1Beta1, True, True, True),
        ("", gang_apis.NoGangAPI, False, False, True),
    ],
)
def test_each_version_has_its_strategy(
    version: str, cls: type, pod_groups: bool, mutable: bool, shared_claims: bool
) -> None:
    found = gangapi.GangAPI(version, (version,) if version else (), frozenset({"topology"}))
    api = gang_apis.pick(found)
    assert type(api) is cls and api.version == version and api.served == bool(version)
    assert api.pod_groups is pod_groups and found.podgroups is pod_groups
    assert api.mutable_min_count is mutable and api.binds_shared_claims is shared_claims
    assert api.keeps("topology") and not api.keeps("workload-claims")
    assert api.detail == found.describe()


def test_the_strategies_cover_what_discovery_prefers() -> None:
    assert list(gang_apis.VERSIONS) == list(gangapi.PREFERENCE)


def test_a_version_the_operator_does_not_speak_is_refused() -> None:
    with pytest.raises(ValueError, match="v2"):
        gang_apis.of("v2")


def test_composite_trees_need_the_parent_field_and_the_feature() -> None:
    on = frozenset({gangapi.COMPOSITE})
    assert gang_apis.of("v1beta1", on).composite
    assert not gang_apis.of("v1beta1").composite
    assert not gang_apis.of("v1alpha2", on).composite


def test_how_each_version_writes_its_objects() -> None:
    groups = [{"name": "gang", "policy": {"basic": {}}}]
    assert gang_apis.of("v1alpha1").workload_groups(groups) == {"podGroups": groups}
    templates = {"podGroupTemplates": [{"name": "gang", "schedulingPolicy": {"basic": {}}}]}
    assert gang_apis.of("v1alpha2").workload_groups(groups) == templates
    assert gang_apis.of("v1beta1").workload_groups(groups) == templates
    assert gang_apis.of("v1alpha2").disruption_mode("Gang") == "PodGroup"
    assert gang_apis.of("v1beta1").disruption_mode("Pod") == {"single": {}}
    assert "podGroupTemplateRef" in gang_apis.of("v1alpha2").template_ref("w")
    assert "workloadRef" in gang_apis.of("v1beta1").template_ref("w")


def test_no_controller_module_branches_on_the_api_version() -> None:
    """Version names appear only in gang_apis: a comparison with one anywhere else under
    controllers/ is a planner branching on the version."""
    names = {"v1alpha1", "v1alpha2", "v1beta1"}
    found = []
    for path in sorted(CONTROLLERS.rglob("*.py")):
        if path.name == "gang_apis.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(CONTROLLERS)}:{node.lineno} {node.value}")
    assert found == []
