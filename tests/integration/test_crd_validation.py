"""The CRDs against a real kube-apiserver: they establish, the examples apply, every invalid
spec is refused with a message that names the field, and the scale and status subresources
work with what cliques.api encodes.

Only needs two fixtures of tests/support/cluster_fixtures.py: `kubeconfig` (session: the
path of the local control plane's kubeconfig) and `namespace` (a fresh namespace per test).
Drives `kubectl` as a user would; waits on conditions, never sleeps.
"""

import json
from collections.abc import Iterator
from copy import deepcopy
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from cliques import api
from cliques.api import scalinggroup
from tests.support.kubectl import Kubectl

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "deploy" / "crds"
EXAMPLES = REPO / "deploy" / "examples"


@pytest.fixture(scope="session")
def kubectl(kubeconfig: str) -> Iterator[Kubectl]:
    k = Kubectl(kubeconfig)
    # --force-conflicts: another test session may have applied an older copy of the CRDs.
    k.ok("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    k.ok(
        "wait",
        "--for=condition=established",
        "--timeout=60s",
        "crd/cliquesets.cliques.dev",
        "crd/cliques.cliques.dev",
        "crd/cliquescalinggroups.cliques.dev",
    )
    yield k


def example(name: str) -> dict[str, Any]:
    manifest = yaml.safe_load((EXAMPLES / name).read_text())
    assert isinstance(manifest, dict)
    return manifest


def cliqueset(**spec: Any) -> dict[str, Any]:
    """A valid CliqueSet (leader 1 + worker 2) with `spec` fields replaced."""
    pod = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}
    body = {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": "bad"},
        "spec": {
            "template": {
                "cliques": [
                    {"name": "leader", "replicas": 1, "template": deepcopy(pod)},
                    {"name": "worker", "replicas": 2, "template": deepcopy(pod)},
                ]
            }
        },
    }
    body["spec"].update(spec)
    return body


def with_cliques(*changes: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """cliqueset() whose leader and worker templates are updated with `changes`."""
    body = cliqueset(**spec)
    for clique, change in zip(body["spec"]["template"]["cliques"], changes, strict=False):
        clique.update(change)
    return body


def claim(name: str, *, scope: str = "Gang", cliques: list[str] | None = None) -> dict[str, Any]:
    """A `spec.resourceClaims` entry asking for one device of class `example.com`."""
    request = {"name": "d", "exactly": {"deviceClassName": "example.com", "count": 1}}
    out: dict[str, Any] = {
        "name": name,
        "scope": scope,
        "template": {"spec": {"devices": {"requests": [request]}}},
    }
    if cliques is not None:
        out["cliques"] = cliques
    return out


def group(
    name: str = "pair", cliques: tuple[str, ...] = ("worker",), **fields: Any
) -> dict[str, Any]:
    """A `spec.template.scalingGroups` entry (of the worker clique, unless told)."""
    return {"name": name, "cliques": list(cliques), **fields}


def with_groups(
    *groups: dict[str, Any], cliques: tuple[dict[str, Any], ...] = (), **spec: Any
) -> dict[str, Any]:
    """with_cliques(*cliques, **spec) with `groups` as spec.template.scalingGroups."""
    body = with_cliques(*cliques, **spec)
    body["spec"]["template"]["scalingGroups"] = list(groups)
    return body


def numbered_cliques(count: int) -> list[dict[str, Any]]:
    """Clique templates c0, c1, ... of one pod each."""
    pod = {"spec": {"containers": [{"name": "m", "image": "x"}]}}
    return [{"name": f"c{i}", "template": deepcopy(pod)} for i in range(count)]


CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
}

GANG_RESTARTS = "cliques.dev/gang-restarts"
HASH = "cliques.dev/template-hash"


def with_metadata(**metadata: dict[str, str]) -> dict[str, Any]:
    """A pod template with `metadata` (labels, annotations)."""
    return {
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


# ---- The CRDs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "crd", ["cliquesets.cliques.dev", "cliques.cliques.dev", "cliquescalinggroups.cliques.dev"]
)
def test_crds_are_established_and_structural(kubectl: Kubectl, crd: str) -> None:
    status = kubectl.json("get", "crd", crd)["status"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert conditions.get("NonStructuralSchema", "False") == "False"
    assert conditions.get("KubernetesAPIApprovalPolicyConformant", "True") == "True"


def test_discovery_lists_short_names_and_category(kubectl: Kubectl) -> None:
    resources = json.loads(kubectl.ok("get", "--raw", "/apis/cliques.dev/v1alpha1"))["resources"]
    by_name = {r["name"]: r for r in resources}
    assert by_name["cliquesets"]["shortNames"] == ["cqs"]
    assert by_name["cliques"]["shortNames"] == ["cq"]
    assert by_name["cliquesets"]["categories"] == ["cliques"]
    assert by_name["cliques"]["categories"] == ["cliques"]
    assert by_name["cliquesets"]["namespaced"] is True
    assert {"cliquesets/status", "cliquesets/scale", "cliques/status", "cliques/scale"} <= set(
        by_name
    )
    groups = by_name["cliquescalinggroups"]
    assert (groups["kind"], groups["shortNames"]) == ("CliqueScalingGroup", ["cqsg"])
    assert (groups["categories"], groups["namespaced"]) == (["cliques"], True)
    assert {"cliquescalinggroups/status", "cliquescalinggroups/scale"} <= set(by_name)


def test_the_cliques_category_lists_every_kind(kubectl: Kubectl, namespace: str) -> None:
    kubectl.ok("apply", "--server-side", "-n", namespace, "-f", str(EXAMPLES / "llama.yaml"))
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(clique_body()))
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(scaling_group_body()))
    # kubectl expands a category before it looks up a resource, so `get cliques` (the
    # category, and also the Clique plural) lists CliqueSets, Cliques and
    # CliqueScalingGroups together.
    listed = kubectl.ok("get", "cliques", "-n", namespace, "-o", "name").split()
    assert sorted(listed) == [
        "clique.cliques.dev/llama-0-worker",
        "cliquescalinggroup.cliques.dev/llama-0-pair",
        "cliqueset.cliques.dev/llama",
    ]
    assert kubectl.ok("get", "cq", "-n", namespace, "-o", "name").split() == [
        "clique.cliques.dev/llama-0-worker"
    ]


# ---- The examples --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["llama.yaml", "explicit.yaml", "gang.yaml", "domains.yaml", "disaggregated.yaml"]
)
def test_examples_apply_and_read_back_defaulted(
    kubectl: Kubectl, namespace: str, name: str
) -> None:
    path = str(EXAMPLES / name)
    kubectl.ok("apply", "--server-side", "-n", namespace, "-f", path)
    manifest = example(name)
    stored = kubectl.json("get", "cliqueset", "-n", namespace, manifest["metadata"]["name"])
    spec = stored["spec"]
    assert spec["headlessService"] is True
    # No default: a stored CliqueSet without it must read back without it (the operator
    # decides the layout from the set's gangs, docs/operator.md).
    assert spec.get("subdomainPolicy") == manifest["spec"].get("subdomainPolicy")
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "maxUnavailable": 1,
        "maxSurge": 0,
        "inPlace": "Never",
        "partition": 0,
    }
    assert spec["gangScheduling"] == {"backend": "Auto", "disruption": "Gang"}
    assert spec["failurePolicy"]["restartBackoff"].keys() == {"initialSeconds", "maxSeconds"}
    # gangs move off drained nodes, and evictions wait for them, unless a set says otherwise
    assert spec["nodeDrain"] == {
        "policy": "MoveGangs",
        "holdEvictions": "PodDisruptionBudget",
        "lostNodeSeconds": 60,
    }
    assert [c["name"] for c in spec["template"]["cliques"]] == [
        c["name"] for c in manifest["spec"]["template"]["cliques"]
    ]
    # Pruning kept the pod templates whole (they are preserve-unknown-fields).
    assert spec["template"]["cliques"] == [
        {"replicas": 1, **c} for c in manifest["spec"]["template"]["cliques"]
    ]
    # What the server stores decodes into the Structs, and their defaults agree.
    cqs = api.decode_cliqueset(json.dumps(stored).encode())
    assert cqs.spec == msgspec.convert(manifest, api.CliqueSet).spec


def test_printer_columns(kubectl: Kubectl, namespace: str) -> None:
    kubectl.ok("apply", "--server-side", "-n", namespace, "-f", str(EXAMPLES / "llama.yaml"))
    header = kubectl.ok("get", "cqs", "-n", namespace).splitlines()[0].split()
    assert header == ["NAME", "REPLICAS", "READY", "UPDATED", "AVAILABLE", "STATUS", "AGE"]
    wide = kubectl.ok("get", "cqs", "-n", namespace, "-o", "wide").splitlines()
    assert "STARTUP" in wide[0].split()
    assert "InOrder" in wide[1].split()


# ---- Invalid CliqueSets are refused, naming the field --------------------------------------

INVALID: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "duplicate clique names",
        with_cliques({}, {"name": "leader"}),
        ["spec.template.cliques[1]", "Duplicate value", "leader"],
    ),
    (
        "minAvailable above replicas",
        with_cliques({}, {"minAvailable": 3}),
        [
            "spec.template.cliques[1].minAvailable",
            "minAvailable must be less than or equal to replicas in clique worker",
        ],
    ),
    (
        "minAvailable above the defaulted replicas",
        with_cliques({"replicas": None, "minAvailable": 2}),
        [
            "spec.template.cliques[0].minAvailable",
            "less than or equal to replicas in clique leader",
        ],
    ),
    (
        "negative gang count",
        cliqueset(replicas=-1),
        ["spec.replicas", "greater than or equal to 0"],
    ),
    (
        "negative clique replicas",
        with_cliques({}, {"replicas": -2}),
        ["spec.template.cliques[1].replicas", "greater than or equal to 0"],
    ),
    (
        "negative minAvailable",
        with_cliques({"minAvailable": -1}),
        ["spec.template.cliques[0].minAvailable", "greater than or equal to 0"],
    ),
    (
        "maxUnavailable of 0 without maxSurge",
        cliqueset(updateStrategy={"maxUnavailable": 0}),
        ["spec.updateStrategy.maxUnavailable", "may be 0 only with a maxSurge above 0"],
    ),
    (
        "startsAfter without Explicit (default AnyOrder)",
        with_cliques({}, {"startsAfter": ["leader"]}),
        [
            "spec.startupType",
            "startsAfter is allowed only when spec.startupType is Explicit (it is AnyOrder)",
        ],
    ),
    (
        "startsAfter with InOrder",
        with_cliques({}, {"startsAfter": ["leader"]}, startupType="InOrder"),
        ["spec.startupType", "(it is InOrder)"],
    ),
    (
        "startsAfter naming a missing clique",
        with_cliques({}, {"startsAfter": ["leader", "ghost"]}, startupType="Explicit"),
        [
            "spec.template.cliques",
            "every spec.template.cliques[].startsAfter entry must name a clique of",
        ],
    ),
    (
        "startsAfter naming its own clique",
        with_cliques({}, {"startsAfter": ["worker"]}, startupType="Explicit"),
        [
            "spec.template.cliques[1].startsAfter",
            "startsAfter of clique worker must not name the clique itself",
        ],
    ),
    (
        "startsAfter naming a clique twice",
        with_cliques({}, {"startsAfter": ["leader", "leader"]}, startupType="Explicit"),
        ["spec.template.cliques[1].startsAfter[1]", "Duplicate value"],
    ),
    (
        "unknown startupType",
        cliqueset(startupType="Sometimes"),
        ["spec.startupType", "Unsupported value", "Sometimes"],
    ),
    (
        "clique name that is no DNS label",
        with_cliques({"name": "Leader_0"}),
        ["spec.template.cliques[0].name", "should match"],
    ),
    (
        "clique name with a digits-only part (ambiguous Clique names)",
        with_cliques({}, {"name": "b-2-c"}),
        [
            "spec.template.cliques[1].name",
            "clique name b-2-c must not have a part made only of digits before a dash",
        ],
    ),
    (
        "clique name starting with a digits-only part",
        with_cliques({"name": "0-x"}),
        ["spec.template.cliques[0].name", "made only of digits"],
    ),
    (
        "clique name too long",
        with_cliques({"name": "a" * 21}),
        ["spec.template.cliques[0].name", "may not be more than 20"],
    ),
    (
        "no cliques",
        cliqueset(template={"cliques": []}),
        ["spec.template.cliques", "should have at least 1 items"],
    ),
    (
        "pod template without containers",
        with_cliques({"template": {"spec": {"restartPolicy": "Always"}}}),
        ["spec.template.cliques[0].template.spec.containers", "Required value"],
    ),
    (
        "pod template with no container",
        with_cliques({"template": {"spec": {"containers": []}}}),
        ["spec.template.cliques[0].template.spec.containers", "at least 1 items"],
    ),
    (
        "pod template without spec",
        with_cliques({"template": {"metadata": {"labels": {"a": "b"}}}}),
        ["spec.template.cliques[0].template.spec", "Required value"],
    ),
    (
        "more gangs than the maximum",
        cliqueset(replicas=10_001),
        ["spec.replicas", "less than or equal to 10000"],
    ),
    (
        "more pods in a clique than the maximum",
        with_cliques({}, {"replicas": 1_001}),
        ["spec.template.cliques[1].replicas", "less than or equal to 1000"],
    ),
    (
        "more pods in a gang than the maximum",
        cliqueset(
            template={
                "cliques": [
                    {
                        "name": f"c{i}",
                        "replicas": 1_000,
                        "template": {"spec": {"containers": [{"name": "m", "image": "x"}]}},
                    }
                    for i in range(6)
                ]
            }
        ),
        [
            "spec.template.cliques",
            "a gang may have at most 5000 pods: the replicas of each clique (or "
            "autoscaling.maxReplicas where higher) times the instances of its scaling group "
            "(replicas, or autoscaling.maxReplicas where higher) is 6000",
        ],
    ),
    (
        "a pod template that finishes (restartPolicy Never)",
        with_cliques(
            {
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}
                }
            }
        ),
        ["spec.template.cliques[0].template.spec.restartPolicy", "Unsupported value", "Never"],
    ),
    (
        "unknown gang-scheduling backend",
        cliqueset(gangScheduling={"backend": "Volcano"}),
        ["spec.gangScheduling.backend", "Unsupported value", "Volcano"],
    ),
    (
        "unknown gang disruption",
        cliqueset(gangScheduling={"disruption": "Rack"}),
        ["spec.gangScheduling.disruption", "Unsupported value", "Rack"],
    ),
    (
        "unknown gang restart policy",
        cliqueset(failurePolicy={"restartPolicy": "RestartPods"}),
        ["spec.failurePolicy.restartPolicy", "Unsupported value", "RestartPods"],
    ),
    (
        "unknown drain policy",
        cliqueset(nodeDrain={"policy": "Evict"}),
        ["spec.nodeDrain.policy", "Unsupported value", "Evict"],
    ),
    (
        "unknown eviction hold",
        cliqueset(nodeDrain={"holdEvictions": "Webhook"}),
        ["spec.nodeDrain.holdEvictions", "Unsupported value", "Webhook"],
    ),
    (
        "negative lostNodeSeconds",
        cliqueset(nodeDrain={"lostNodeSeconds": -1}),
        ["spec.nodeDrain.lostNodeSeconds", "greater than or equal to 0"],
    ),
    (
        "negative minAvailableBreachedSeconds",
        cliqueset(failurePolicy={"minAvailableBreachedSeconds": -1}),
        ["spec.failurePolicy.minAvailableBreachedSeconds", "greater than or equal to 0"],
    ),
    (
        "negative maxGangRestarts",
        cliqueset(failurePolicy={"maxGangRestarts": -3}),
        ["spec.failurePolicy.maxGangRestarts", "greater than or equal to 0"],
    ),
    (
        "negative backoff",
        cliqueset(failurePolicy={"restartBackoff": {"initialSeconds": -5}}),
        ["spec.failurePolicy.restartBackoff.initialSeconds", "greater than or equal to 0"],
    ),
    (
        "backoff longer than a day",
        cliqueset(failurePolicy={"restartBackoff": {"maxSeconds": 86_401}}),
        ["spec.failurePolicy.restartBackoff.maxSeconds", "less than or equal to 86400"],
    ),
    (
        "initial backoff above the maximum",
        cliqueset(failurePolicy={"restartBackoff": {"initialSeconds": 60, "maxSeconds": 30}}),
        [
            "spec.failurePolicy.restartBackoff.initialSeconds",
            "restartBackoff.initialSeconds must be less than or equal to restartBackoff.maxSeconds",
        ],
    ),
    (
        "initial backoff above the defaulted maximum",
        cliqueset(failurePolicy={"restartBackoff": {"initialSeconds": 600}}),
        [
            "spec.failurePolicy.restartBackoff.initialSeconds",
            "initialSeconds must be less than or equal to restartBackoff.maxSeconds",
        ],
    ),
    (
        "unknown subdomain policy",
        cliqueset(subdomainPolicy="PerPod"),
        ["spec.subdomainPolicy", "Unsupported value", "PerPod"],
    ),
    (
        "unknown pack mode",
        cliqueset(placement={"pack": {"topologyKey": "rack", "mode": "Sometimes"}}),
        ["spec.placement.pack.mode", "Unsupported value", "Sometimes"],
    ),
    (
        "pack without topologyKey",
        cliqueset(placement={"pack": {"mode": "Preferred"}}),
        ["spec.placement.pack.topologyKey", "Required value"],
    ),
    (
        "empty pack topologyKey",
        cliqueset(placement={"pack": {"topologyKey": ""}}),
        ["spec.placement.pack.topologyKey", "at least 1 chars"],
    ),
    (
        "exclusive topologyKey that is no label key",
        cliqueset(placement={"exclusive": {"topologyKey": "Rack Number/"}}),
        ["spec.placement.exclusive.topologyKey", "should match"],
    ),
    (
        "empty exclusive topologyKey",
        cliqueset(placement={"exclusive": {"topologyKey": ""}}),
        ["spec.placement.exclusive.topologyKey", "at least 1 chars"],
    ),
    (
        "template label that is no string",
        with_cliques({"template": {"metadata": {"labels": {"a": 1}}, "spec": {"containers": []}}}),
        ["spec.template.cliques[0].template.metadata.labels.a", "string"],
    ),
    (
        "the operator's gang restart annotation in a pod template",
        with_cliques({}, {"template": with_metadata(annotations={GANG_RESTARTS: "7"})}),
        [
            "spec.template.cliques[1].template.metadata.annotations",
            f'annotation keys ["{GANG_RESTARTS}"] are reserved for the operator',
        ],
    ),
    (
        "the operator's labels in a pod template, a subdomain's too",
        with_cliques(
            {"template": with_metadata(labels={"app": "x", HASH: "h", "x.cliques.dev/y": "1"})}
        ),
        [
            "spec.template.cliques[0].template.metadata.labels",
            f'label keys ["{HASH}", "x.cliques.dev/y"] are reserved for the operator',
        ],
    ),
    (
        "more labels in a pod template than the maximum",
        with_cliques({"template": with_metadata(labels={f"l{i}": "" for i in range(257)})}),
        ["spec.template.cliques[0].template.metadata.labels", "must have at most 256 items"],
    ),
    (
        "an unknown in-place policy",
        cliqueset(updateStrategy={"inPlace": "Always"}),
        ["spec.updateStrategy.inPlace", "Unsupported value", "Always"],
    ),
    (
        "a claim of unknown scope",
        cliqueset(resourceClaims=[claim("domain", scope="Rack")]),
        ["spec.resourceClaims[0].scope", "Unsupported value", "Rack"],
    ),
    (
        "two claims of one name",
        cliqueset(resourceClaims=[claim("domain"), claim("domain", scope="Pod")]),
        ["spec.resourceClaims[1]", "Duplicate value"],
    ),
    (
        "a claim name that is no DNS label",
        cliqueset(resourceClaims=[claim("Domain_1")]),
        ["spec.resourceClaims[0].name", "should match"],
    ),
    (
        "a claim without a template",
        cliqueset(resourceClaims=[{"name": "domain", "scope": "Gang"}]),
        ["spec.resourceClaims[0].template", "Required value"],
    ),
    (
        "more Gang-scope claims than a PodGroup shares",
        cliqueset(resourceClaims=[claim(f"d{i}") for i in range(5)]),
        ["spec.resourceClaims", "at most 4 spec.resourceClaims may have scope Gang"],
    ),
    (
        "a claim for a clique the template lacks",
        cliqueset(resourceClaims=[claim("domain", cliques=["leader", "decode"])]),
        ["spec.resourceClaims", "must name a clique of spec.template.cliques"],
    ),
    (
        "a claim named as a pod template's own claim",
        with_cliques(
            {},
            {
                "template": {
                    "spec": {
                        "containers": [{"name": "main", "image": "busybox:1.36"}],
                        "resourceClaims": [{"name": "domain", "resourceClaimName": "mine"}],
                    }
                }
            },
            resourceClaims=[claim("domain"), claim("gpu", scope="Pod")],
        ),
        [
            "spec.resourceClaims",
            'spec.resourceClaims names ["domain"] are also claims of a clique pod template',
        ],
    ),
    (
        "more claims than the maximum",
        cliqueset(resourceClaims=[claim(f"c{i}", scope="Pod") for i in range(17)]),
        ["spec.resourceClaims", "must have at most 16 items"],
    ),
    (
        "more Cliques in a set than the maximum",
        cliqueset(replicas=5_001),
        [
            "spec.replicas",
            "a CliqueSet may have at most 10000 Cliques: spec.replicas x the Cliques of a gang "
            "(one per clique, one per instance of its scaling group: replicas, or "
            "autoscaling.maxReplicas where higher) is 5001 x 2 = 10002",
        ],
    ),
    (
        "more pods in a set than the maximum",
        with_cliques({}, {"replicas": 999}, replicas=101),
        [
            "spec.replicas",
            "a CliqueSet may have at most 100000 pods: spec.replicas x the pods of a gang (the "
            "replicas of each clique, or autoscaling.maxReplicas where higher, times the "
            "instances of its scaling group) is 101 x 1000 = 101000",
        ],
    ),
    # ---- autoscaling and scaling groups
    (
        "a clique's autoscaling minReplicas above maxReplicas",
        with_cliques({}, {"autoscaling": {"minReplicas": 5, "maxReplicas": 3}}),
        [
            "spec.template.cliques[1].autoscaling.minReplicas",
            "autoscaling.minReplicas must be less than or equal to autoscaling.maxReplicas",
        ],
    ),
    (
        "a clique's autoscaling without maxReplicas",
        with_cliques({}, {"autoscaling": {"minReplicas": 1}}),
        ["spec.template.cliques[1].autoscaling.maxReplicas", "Required value"],
    ),
    (
        "a clique's autoscaling maxReplicas of 0",
        with_cliques({}, {"autoscaling": {"maxReplicas": 0}}),
        ["spec.template.cliques[1].autoscaling.maxReplicas", "greater than or equal to 1"],
    ),
    (
        "a clique's autoscaling negative minReplicas",
        with_cliques({}, {"autoscaling": {"minReplicas": -1, "maxReplicas": 2}}),
        ["spec.template.cliques[1].autoscaling.minReplicas", "greater than or equal to 0"],
    ),
    (
        "a clique's autoscaling past the pods of a clique",
        with_cliques({}, {"autoscaling": {"maxReplicas": 1_001}}),
        ["spec.template.cliques[1].autoscaling.maxReplicas", "less than or equal to 1000"],
    ),
    (
        "more autoscaling metrics than the maximum",
        with_cliques({}, {"autoscaling": {"maxReplicas": 4, "metrics": [CPU] * 17}}),
        ["spec.template.cliques[1].autoscaling.metrics", "must have at most 16 items"],
    ),
    (
        "a group's autoscaling minReplicas above maxReplicas",
        with_groups(group(autoscaling={"minReplicas": 3, "maxReplicas": 2})),
        [
            "spec.template.scalingGroups[0].autoscaling.minReplicas",
            "autoscaling.minReplicas must be less than or equal to autoscaling.maxReplicas",
        ],
    ),
    (
        "a group's autoscaling past the instances of a group",
        with_groups(group(autoscaling={"maxReplicas": 101})),
        ["spec.template.scalingGroups[0].autoscaling.maxReplicas", "less than or equal to 100"],
    ),
    (
        "more instances of a group than the maximum",
        with_groups(group(replicas=101)),
        ["spec.template.scalingGroups[0].replicas", "less than or equal to 100"],
    ),
    (
        "a negative count of instances",
        with_groups(group(replicas=-1, minAvailable=0)),
        ["spec.template.scalingGroups[0].replicas", "greater than or equal to 0"],
    ),
    (
        "a group's minAvailable above its replicas",
        with_groups(group(replicas=2, minAvailable=3)),
        [
            "spec.template.scalingGroups[0].minAvailable",
            "minAvailable must be less than or equal to replicas in scaling group pair",
        ],
    ),
    (
        "a group's minAvailable above the defaulted replicas",
        with_groups(group(minAvailable=2)),
        ["spec.template.scalingGroups[0].minAvailable", "in scaling group pair"],
    ),
    (
        "no instances and the defaulted minAvailable",
        with_groups(group(replicas=0)),
        ["spec.template.scalingGroups[0].minAvailable", "in scaling group pair"],
    ),
    (
        "a clique in two scaling groups",
        with_groups(group("a", ("leader", "worker")), group("b", ("worker",))),
        [
            "spec.template.scalingGroups",
            "a clique may be in at most one scaling group (spec.template.scalingGroups[].cliques)",
            'cliques ["worker"] are in more than one',
        ],
    ),
    (
        "a group naming a clique the template lacks",
        with_groups(group("pair", ("worker", "decode")), group("solo", ("leader",))),
        [
            "spec.template.scalingGroups",
            "every spec.template.scalingGroups[].cliques entry must name a clique of",
            'scaling groups ["pair"] name cliques the template lacks',
        ],
    ),
    (
        "a group of no cliques",
        with_groups(group(cliques=())),
        ["spec.template.scalingGroups[0].cliques", "should have at least 1 items"],
    ),
    (
        "a group naming a clique twice",
        with_groups(group(cliques=("worker", "worker"))),
        ["spec.template.scalingGroups[0].cliques[1]", "Duplicate value"],
    ),
    (
        "two groups of one name",
        with_groups(group("pair", ("leader",)), group("pair", ("worker",))),
        ["spec.template.scalingGroups[1]", "Duplicate value"],
    ),
    (
        "more scaling groups than the maximum",
        cliqueset(
            template={
                "cliques": numbered_cliques(9),
                "scalingGroups": [group(f"g{i}", (f"c{i}",)) for i in range(9)],
            }
        ),
        ["spec.template.scalingGroups", "must have at most 8 items"],
    ),
    (
        "a group named as a clique (HPA names would collide)",
        with_groups(group("worker")),
        [
            "spec.template.scalingGroups",
            'spec.template.scalingGroups[].name ["worker"] must not be the name of a clique',
        ],
    ),
    (
        "autoscaling on a clique of a group",
        with_groups(group(), cliques=({}, {"autoscaling": {"maxReplicas": 4}})),
        [
            "spec.template.cliques",
            "spec.template.cliques[].autoscaling is not allowed on a clique of a scaling group",
            '["worker"]',
        ],
    ),
    (
        "with scaling groups, a clique name ending in a dash and digits",
        with_groups(group(cliques=("leader",)), cliques=({}, {"name": "worker-2"})),
        [
            "spec.template.cliques",
            "with spec.template.scalingGroups, a spec.template.cliques[].name must not end in",
            '["worker-2"]',
        ],
    ),
    (
        "a group name that is no DNS label",
        with_groups(group("Pair_1")),
        ["spec.template.scalingGroups[0].name", "should match"],
    ),
    (
        "a group name too long",
        with_groups(group("g" * 21)),
        ["spec.template.scalingGroups[0].name", "may not be more than 20"],
    ),
    (
        "a group name with a digits-only part (ambiguous CliqueScalingGroup names)",
        with_groups(group("a-1-b")),
        [
            "spec.template.scalingGroups[0].name",
            "scaling group name a-1-b must not have a part made only of digits before a dash",
        ],
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), [(b, e) for _, b, e in INVALID], ids=[i for i, _, _ in INVALID]
)
def test_invalid_cliqueset_is_refused_naming_the_field(
    kubectl: Kubectl, namespace: str, body: dict[str, Any], expected: list[str]
) -> None:
    body = json.loads(json.dumps(body))
    for clique in body["spec"]["template"]["cliques"]:
        if clique.get("replicas", 0) is None:
            del clique["replicas"]  # None marks "leave it to the CRD default"
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    for fragment in expected:
        assert fragment in error, f"{fragment!r} not in:\n{error}"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("my.set", "metadata.name must be a DNS-1035 label"),
        ("9lives", "metadata.name must be a DNS-1035 label"),
        ("a" * 53, "metadata.name must be at most 52 characters"),
    ],
)
def test_cliqueset_name_must_make_valid_service_names(
    kubectl: Kubectl, namespace: str, name: str, expected: str
) -> None:
    body = cliqueset()
    body["metadata"]["name"] = name
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    assert expected in error, error


def test_the_longest_valid_cliqueset_is_accepted(kubectl: Kubectl, namespace: str) -> None:
    body = with_cliques(
        {"name": "a" * 20, "replicas": 0, "minAvailable": 0},
        {"startsAfter": ["a" * 20]},
        startupType="Explicit",
        replicas=0,
    )
    body["metadata"]["name"] = "n" * 52
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))


def test_claims_of_every_scope_are_accepted_and_decode(kubectl: Kubectl, namespace: str) -> None:
    own = {"name": "scratch", "resourceClaimTemplateName": "mine"}
    body = with_cliques(
        {},
        {
            "template": {
                "spec": {
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                    "resourceClaims": [own],
                }
            }
        },
        resourceClaims=[
            claim("domain"),
            claim("gpu", scope="Pod", cliques=["worker"]),
            claim("store", scope="Set", cliques=["leader"]),
            *(claim(f"g{i}") for i in range(3)),  # 4 Gang-scope in all: the most allowed
        ],
    )
    body["metadata"]["name"] = "claims"
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    got = json.loads(kubectl.ok("get", "-n", namespace, "cliqueset", "claims", "-o", "json"))
    cqs = msgspec.convert(got, api.CliqueSet)
    assert [(c.name, c.scope, c.cliques) for c in cqs.spec.resource_claims[:3]] == [
        ("domain", "Gang", []),
        ("gpu", "Pod", ["worker"]),
        ("store", "Set", ["leader"]),
    ]
    assert cqs.spec.resource_claims[0].template == body["spec"]["resourceClaims"][0]["template"]


@pytest.mark.parametrize("clique", ["worker-2", "gpu2-worker", "7", "a-b-c", "x9-1"])
def test_clique_names_that_cannot_collide_are_accepted(
    kubectl: Kubectl, namespace: str, clique: str
) -> None:
    kubectl.ok(
        "create", "-n", namespace, "-f", "-", stdin=json.dumps(with_cliques({}, {"name": clique}))
    )


def test_every_gang_field_set_is_accepted_and_decodes(kubectl: Kubectl, namespace: str) -> None:
    gang = {
        "gangScheduling": {"backend": "Workload", "disruption": "Pod"},
        "failurePolicy": {
            "restartPolicy": "RecreateGang",
            "minAvailableBreachedSeconds": 0,
            "maxGangRestarts": 0,
            "restartBackoff": {"initialSeconds": 300, "maxSeconds": 300},
        },
        "placement": {
            "pack": {"topologyKey": "topology.kubernetes.io/rack", "mode": "Preferred"},
            "exclusive": {"topologyKey": "example.com/Rack_1"},
        },
        "nodeDrain": {"policy": "MoveGangs", "holdEvictions": "None", "lostNodeSeconds": 0},
    }
    body = cliqueset(**gang)
    body["metadata"]["name"] = "full"
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    stored = kubectl.json("get", "cqs", "-n", namespace, "full")
    assert {k: stored["spec"][k] for k in gang} == gang
    cqs = api.decode_cliqueset(json.dumps(stored).encode())
    assert cqs.spec.placement is not None and cqs.spec.placement.pack is not None
    assert cqs.spec.placement.pack.mode == "Preferred"
    assert cqs.spec.gang_scheduling.disruption == "Pod"
    assert cqs.spec.node_drain.hold_evictions == "None"
    # Only the pack key given: the mode defaults to Required; nothing else appears.
    body["metadata"]["name"] = "packed"
    body["spec"]["placement"] = {"pack": {"topologyKey": "rack"}}
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    stored = kubectl.json("get", "cqs", "-n", namespace, "packed")
    assert stored["spec"]["placement"] == {"pack": {"topologyKey": "rack", "mode": "Required"}}


def test_keys_outside_the_operators_prefix_are_accepted(kubectl: Kubectl, namespace: str) -> None:
    keys = {
        "cliques.dev": "a name without a prefix",
        "example.com/cliques.dev": "a name",
        "notcliques.dev/x": "another domain",
        "cliques.dev.example.com/x": "another domain",
    }
    body = with_cliques({"template": with_metadata(labels={"app": "x"}, annotations=keys)})
    body["metadata"]["name"] = "tenant"
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    stored = kubectl.json("get", "cqs", "-n", namespace, "tenant")
    assert stored["spec"]["template"]["cliques"][0]["template"]["metadata"]["annotations"] == keys


def test_scaling_groups_and_autoscaling_are_accepted_and_decode(
    kubectl: Kubectl, namespace: str
) -> None:
    leader = {
        "minReplicas": 0,
        "maxReplicas": 1_000,
        "metrics": [CPU],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
    }
    pair = group(
        "pair",
        ("worker",),
        replicas=3,
        minAvailable=2,
        autoscaling={"minReplicas": 2, "maxReplicas": 100, "metrics": [CPU]},
    )
    body = with_groups(pair, cliques=({"autoscaling": leader}, {}))
    body["metadata"]["name"] = "scaled"
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    stored = kubectl.json("get", "cqs", "-n", namespace, "scaled")
    template = stored["spec"]["template"]
    # Pruning kept the HPA's metrics and behavior whole (preserve-unknown-fields).
    assert template["cliques"][0]["autoscaling"] == leader
    assert template["scalingGroups"] == [pair]
    cqs = api.decode_cliqueset(json.dumps(stored).encode())
    assert cqs.spec == msgspec.convert(body, api.CliqueSet).spec
    (decoded,) = cqs.spec.template.scaling_groups
    assert decoded.autoscaling is not None and decoded.autoscaling.metrics == [CPU]
    # Left out, the counts read back at their defaults, from the server and the Structs.
    body = with_groups(
        group("pair", ("worker",), autoscaling={"maxReplicas": 4}),
        cliques=({"autoscaling": {"maxReplicas": 2}}, {}),
    )
    body["metadata"]["name"] = "defaulted"
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    stored = kubectl.json("get", "cqs", "-n", namespace, "defaulted")
    template = stored["spec"]["template"]
    assert template["scalingGroups"] == [
        {
            "name": "pair",
            "cliques": ["worker"],
            "replicas": 1,
            "minAvailable": 1,
            "autoscaling": {"minReplicas": 1, "maxReplicas": 4},
        }
    ]
    assert template["cliques"][0]["autoscaling"] == {"minReplicas": 1, "maxReplicas": 2}
    cqs = api.decode_cliqueset(json.dumps(stored).encode())
    assert cqs.spec == msgspec.convert(body, api.CliqueSet).spec


def test_the_most_scaling_groups_are_accepted(kubectl: Kubectl, namespace: str) -> None:
    """8 groups of 2 cliques, each at 100 instances and autoscaled up to 100."""
    groups = [
        group(
            f"g{i}",
            (f"c{2 * i}", f"c{2 * i + 1}"),
            replicas=100,
            minAvailable=100,
            autoscaling={"minReplicas": 100, "maxReplicas": 100},
        )
        for i in range(8)
    ]
    body = cliqueset(template={"cliques": numbered_cliques(16), "scalingGroups": groups})
    body["metadata"]["name"] = "most"
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))


@pytest.mark.parametrize(
    ("groups", "clique"),
    [
        ([], "worker-2"),  # no scaling group: no instance Clique to meet
        ([group(cliques=("leader",))], "worker2"),
        ([group(cliques=("leader",))], "worker-2a"),
        ([group(cliques=("leader",))], "gpu2-worker"),
        ([group(cliques=("leader", "w"))], "w"),
    ],
)
def test_clique_names_that_no_instance_meets_are_accepted(
    kubectl: Kubectl, namespace: str, groups: list[dict[str, Any]], clique: str
) -> None:
    body = with_groups(*groups, cliques=({}, {"name": clique}))
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))


def test_a_set_of_many_empty_gangs_is_refused_at_admission(
    kubectl: Kubectl, namespace: str
) -> None:
    """10,000 gangs of 16 cliques of no pods, in a 1.4 MB object: no pod, but 160,000
    Cliques, each with a copy of its ~88 KB template (14 GB)."""
    pad = "x" * 87_600
    body = cliqueset(
        replicas=10_000,
        template={
            "cliques": [
                {
                    "name": f"c{i}",
                    "replicas": 0,
                    "template": with_metadata(annotations={"pad": pad}),
                }
                for i in range(16)
            ]
        },
    )
    text = json.dumps(body)
    assert 1_400_000 <= len(text) < 1_500_000
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=text)
    assert "spec.replicas" in error, error[:2000]
    assert "at most 10000 Cliques" in error and "is 10000 x 16 = 160000" in error, error[:2000]
    assert kubectl.ok("get", "cqs", "-n", namespace, "-o", "name") == ""


# ---- Subresources --------------------------------------------------------------------------


def test_scale_subresource(kubectl: Kubectl, namespace: str) -> None:
    kubectl.ok("apply", "--server-side", "-n", namespace, "-f", str(EXAMPLES / "llama.yaml"))
    kubectl.ok("scale", "-n", namespace, "cqs/llama", "--replicas=3")
    assert kubectl.ok("get", "-n", namespace, "cqs/llama", "-o", "jsonpath={.spec.replicas}") == "3"
    scale = json.loads(
        kubectl.ok(
            "get",
            "--raw",
            f"/apis/cliques.dev/v1alpha1/namespaces/{namespace}/cliquesets/llama/scale",
        )
    )
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 3
    # Through the scale subresource too, a negative count is refused by the CRD schema.
    negative = json.dumps({"spec": {"replicas": -1}})
    error = kubectl.refused(
        "patch", "-n", namespace, "cqs/llama", "--subresource=scale", "--type=merge", "-p", negative
    )
    assert "spec.replicas" in error, error
    # And so is a count past the maximum: `kubectl scale` cannot ask for 2**31 - 1 gangs.
    error = kubectl.refused("scale", "-n", namespace, "cqs/llama", "--replicas=2147483647")
    assert "spec.replicas" in error and "less than or equal to 10000" in error, error
    assert kubectl.ok("get", "-n", namespace, "cqs/llama", "-o", "jsonpath={.spec.replicas}") == "3"


def test_a_scale_past_the_set_bounds_is_refused(kubectl: Kubectl, namespace: str) -> None:
    """`kubectl scale` goes through the scale subresource; the rules on spec still apply."""
    body = with_cliques({}, {"replicas": 999}, replicas=1)  # 1,000 pods and 2 Cliques a gang
    body["metadata"]["name"] = "big"
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    kubectl.ok("scale", "-n", namespace, "cqs/big", "--replicas=100")  # 100,000 pods
    error = kubectl.refused("scale", "-n", namespace, "cqs/big", "--replicas=101")
    assert "spec.replicas" in error, error
    assert "at most 100000 pods" in error and "is 101 x 1000 = 101000" in error, error
    # Fewer pods a gang, more gangs: the count of Cliques is the bound.
    kubectl.ok(
        "patch",
        "-n",
        namespace,
        "cqs/big",
        "--type=json",
        "-p",
        json.dumps([{"op": "replace", "path": "/spec/template/cliques/1/replicas", "value": 1}]),
    )
    kubectl.ok("scale", "-n", namespace, "cqs/big", "--replicas=5000")
    error = kubectl.refused("scale", "-n", namespace, "cqs/big", "--replicas=5001")
    assert "at most 10000 Cliques" in error and "is 5001 x 2 = 10002" in error, error
    too_many = json.dumps({"spec": {"replicas": 5001}})
    error = kubectl.refused(
        "patch", "-n", namespace, "cqs/big", "--subresource=scale", "--type=merge", "-p", too_many
    )
    assert "at most 10000 Cliques" in error, error
    assert kubectl.ok("get", "-n", namespace, "cqs/big", "-o", "jsonpath={.spec.replicas}") == (
        "5000"
    )


def test_status_written_from_the_structs_is_accepted(kubectl: Kubectl, namespace: str) -> None:
    kubectl.ok("apply", "--server-side", "-n", namespace, "-f", str(EXAMPLES / "llama.yaml"))
    status = api.CliqueSetStatus(
        observed_generation=1,
        replicas=2,
        ready_replicas=0,
        template_hash="5d8f7c9b6",
        hash_algorithm=1,
        selector="cliques.dev/cliqueset=llama",
        conditions=[
            api.Condition(
                type="Available",
                status="False",
                reason="GangsStarting",
                message="0 of 2 gangs available",
                last_transition_time="2025-01-02T03:04:05Z",
                observed_generation=1,
            )
        ],
    )
    patch = json.dumps({"status": api.to_dict(status)})
    kubectl.ok(
        "patch", "-n", namespace, "cqs/llama", "--subresource=status", "--type=merge", "-p", patch
    )
    stored = api.decode_cliqueset(
        kubectl.ok("get", "-n", namespace, "cqs/llama", "-o", "json").encode()
    )
    assert stored.status == status
    row = kubectl.ok("get", "-n", namespace, "cqs/llama", "--no-headers").split()
    assert row[1:6] == ["2", "0", "0", "0", "GangsStarting"]
    # The scale subresource reads replicas and the selector from status.
    scale = json.loads(
        kubectl.ok(
            "get",
            "--raw",
            f"/apis/cliques.dev/v1alpha1/namespaces/{namespace}/cliquesets/llama/scale",
        )
    )
    assert scale["status"] == {"replicas": 2, "selector": "cliques.dev/cliqueset=llama"}
    bad = json.dumps(
        {"status": {"conditions": [{**api.to_dict(status)["conditions"][0], "reason": "not ok"}]}}
    )
    error = kubectl.refused(
        "patch", "-n", namespace, "cqs/llama", "--subresource=status", "--type=merge", "-p", bad
    )
    assert "status.conditions[0].reason" in error


# ---- Clique -------------------------------------------------------------------------------


def clique_body(name: str = "llama-0-worker", **spec: Any) -> dict[str, Any]:
    clique = api.Clique(
        metadata=api.ObjectMeta(name=name),
        spec=api.CliqueSpec(
            clique_name="worker",
            gang_index=0,
            replicas=2,
            template={"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}},
        ),
    )
    body = api.to_dict(clique)
    body["spec"].update(spec)
    return body


def test_clique_encoded_by_the_structs_is_accepted(kubectl: Kubectl, namespace: str) -> None:
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(clique_body()))
    kubectl.ok("scale", "-n", namespace, "cq/llama-0-worker", "--replicas=4")
    stored = api.decode_clique(
        kubectl.ok("get", "-n", namespace, "cq/llama-0-worker", "-o", "json").encode()
    )
    assert stored.spec.replicas == 4
    header = kubectl.ok("get", "cq", "-n", namespace).splitlines()[0].split()
    assert header == ["NAME", "REPLICAS", "READY", "UPDATED", "AGE"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minAvailable": 3}, ["spec.minAvailable", "less than or equal to spec.replicas"]),
        ({"replicas": -1}, ["spec.replicas", "greater than or equal to 0"]),
        ({"gangIndex": -1}, ["spec.gangIndex", "greater than or equal to 0"]),
        ({"startsAfter": ["llama-0-worker"]}, ["spec.startsAfter", "must not name the Clique"]),
        ({"template": {"spec": {}}}, ["spec.template.spec.containers", "Required value"]),
    ],
)
def test_invalid_clique_is_refused(
    kubectl: Kubectl, namespace: str, spec: dict[str, Any], expected: list[str]
) -> None:
    error = kubectl.refused(
        "create", "-n", namespace, "-f", "-", stdin=json.dumps(clique_body(**spec))
    )
    for fragment in expected:
        assert fragment in error, f"{fragment!r} not in:\n{error}"


def test_clique_identity_is_immutable(kubectl: Kubectl, namespace: str) -> None:
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(clique_body()))
    for patch, field in (({"gangIndex": 1}, "gangIndex"), ({"cliqueName": "x"}, "cliqueName")):
        error = kubectl.refused(
            "patch",
            "-n",
            namespace,
            "cq/llama-0-worker",
            "--type=merge",
            "-p",
            json.dumps({"spec": patch}),
        )
        assert f"spec.{field} is immutable" in error, error


# ---- CliqueScalingGroup -------------------------------------------------------------------


def scaling_group_body(name: str = "llama-0-pair", **spec: Any) -> dict[str, Any]:
    """A CliqueScalingGroup as the Structs encode it (2 instances, minAvailable defaulted),
    with `spec` fields replaced (None: left out)."""
    group = scalinggroup.CliqueScalingGroup(
        metadata=api.ObjectMeta(name=name),
        spec=scalinggroup.CliqueScalingGroupSpec(group_name="pair", gang_index=0, replicas=2),
    )
    body = api.to_dict(group)
    body["spec"].update(spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    return body


def scale_path(namespace: str, name: str) -> str:
    return f"/apis/cliques.dev/v1alpha1/namespaces/{namespace}/cliquescalinggroups/{name}/scale"


def test_a_scaling_group_scales_through_the_scale_subresource(
    kubectl: Kubectl, namespace: str
) -> None:
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(scaling_group_body()))
    header = kubectl.ok("get", "cqsg", "-n", namespace).splitlines()[0].split()
    assert header == ["NAME", "REPLICAS", "READY", "AGE"]
    kubectl.ok("scale", "-n", namespace, "cqsg/llama-0-pair", "--replicas=5")
    scale = json.loads(kubectl.ok("get", "--raw", scale_path(namespace, "llama-0-pair")))
    assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 5)
    # A PUT of the Scale, as an HPA writes it.
    scale["spec"]["replicas"] = 7
    kubectl.ok(
        "replace",
        "--raw",
        scale_path(namespace, "llama-0-pair"),
        "-f",
        "-",
        stdin=json.dumps(scale),
    )
    stored = msgspec.convert(
        kubectl.json("get", "-n", namespace, "cqsg/llama-0-pair"), scalinggroup.CliqueScalingGroup
    )
    assert stored.spec == scalinggroup.CliqueScalingGroupSpec(
        group_name="pair", gang_index=0, replicas=7, min_available=1
    )
    # The status the Structs encode is accepted, and the scale subresource reads it.
    status = scalinggroup.CliqueScalingGroupStatus(
        observed_generation=3,
        replicas=7,
        ready_replicas=6,
        updated_replicas=0,
        selector=(
            "cliques.dev/cliqueset=llama,cliques.dev/gang-index=0,cliques.dev/scaling-group=pair"
        ),
    )
    patch = json.dumps({"status": api.to_dict(status)})
    kubectl.ok(
        "patch",
        "-n",
        namespace,
        "cqsg/llama-0-pair",
        "--subresource=status",
        "--type=merge",
        "-p",
        patch,
    )
    stored = msgspec.convert(
        kubectl.json("get", "-n", namespace, "cqsg/llama-0-pair"), scalinggroup.CliqueScalingGroup
    )
    assert stored.status == status
    scale = json.loads(kubectl.ok("get", "--raw", scale_path(namespace, "llama-0-pair")))
    assert scale["status"] == {"replicas": 7, "selector": status.selector}
    row = kubectl.ok("get", "cqsg", "-n", namespace, "--no-headers").split()
    assert row[:3] == ["llama-0-pair", "7", "6"]


def test_a_scaling_group_cannot_be_scaled_below_min_available(
    kubectl: Kubectl, namespace: str
) -> None:
    body = scaling_group_body(replicas=3, minAvailable=2)
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    kubectl.ok("scale", "-n", namespace, "cqsg/llama-0-pair", "--replicas=2")
    error = kubectl.refused("scale", "-n", namespace, "cqsg/llama-0-pair", "--replicas=1")
    assert "spec.replicas" in error, error
    assert "spec.replicas must be at least spec.minAvailable (2)" in error, error
    assert "kubectl scale (the scale subresource) cannot go below minAvailable" in error, error
    # A PUT of the Scale (what an HPA sends) is checked the same way.
    scale = json.loads(kubectl.ok("get", "--raw", scale_path(namespace, "llama-0-pair")))
    scale["spec"]["replicas"] = 0
    error = kubectl.refused(
        "replace",
        "--raw",
        scale_path(namespace, "llama-0-pair"),
        "-f",
        "-",
        stdin=json.dumps(scale),
    )
    assert "must be at least spec.minAvailable (2)" in error, error
    # And so is a count past the maximum of instances.
    error = kubectl.refused("scale", "-n", namespace, "cqsg/llama-0-pair", "--replicas=101")
    assert "spec.replicas" in error and "less than or equal to 100" in error, error
    assert (
        kubectl.ok("get", "-n", namespace, "cqsg/llama-0-pair", "-o", "jsonpath={.spec.replicas}")
        == "2"
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"minAvailable": 3},
            ["spec.replicas", "must be at least spec.minAvailable (3)", "kubectl scale"],
        ),
        ({"replicas": 0}, ["spec.replicas", "must be at least spec.minAvailable (1)"]),
        ({"replicas": -1, "minAvailable": 0}, ["spec.replicas", "greater than or equal to 0"]),
        ({"replicas": 101}, ["spec.replicas", "less than or equal to 100"]),
        ({"minAvailable": -1}, ["spec.minAvailable", "greater than or equal to 0"]),
        ({"gangIndex": -1}, ["spec.gangIndex", "greater than or equal to 0"]),
        ({"gangIndex": None}, ["spec.gangIndex", "Required value"]),
        ({"groupName": None}, ["spec.groupName", "Required value"]),
        ({"groupName": "Pair_1"}, ["spec.groupName", "should match"]),
        ({"groupName": "g" * 21}, ["spec.groupName", "may not be more than 20"]),
    ],
)
def test_invalid_scaling_group_is_refused(
    kubectl: Kubectl, namespace: str, spec: dict[str, Any], expected: list[str]
) -> None:
    body = scaling_group_body(**spec)
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    for fragment in expected:
        assert fragment in error, f"{fragment!r} not in:\n{error}"


def test_scaling_group_identity_is_immutable(kubectl: Kubectl, namespace: str) -> None:
    kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(scaling_group_body()))
    for patch, field in (({"gangIndex": 1}, "gangIndex"), ({"groupName": "x"}, "groupName")):
        error = kubectl.refused(
            "patch",
            "-n",
            namespace,
            "cqsg/llama-0-pair",
            "--type=merge",
            "-p",
            json.dumps({"spec": patch}),
        )
        assert f"spec.{field} is immutable" in error, error
