"""cliques.api Structs: decode realistic API-server JSON, defaults, and encode valid JSON back."""

import datetime
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from cliques import api
from cliques.api import labels

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"

# A CliqueSet as the API server returns it: defaulted, with managedFields and status.
CLIQUESET_JSON: dict[str, Any] = {
    "apiVersion": "cliques.dev/v1alpha1",
    "kind": "CliqueSet",
    "metadata": {
        "name": "llama",
        "namespace": "serving",
        "uid": "3f9c2d7e-0c1a-4d5e-9f3b-2a1b0c9d8e7f",
        "resourceVersion": "18342",
        "generation": 3,
        "creationTimestamp": "2025-01-02T03:04:05Z",
        "labels": {"team": "inference"},
        "annotations": {"note": "x"},
        "finalizers": ["example.com/keep"],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "replicas": 2,
        "startupType": "InOrder",
        "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1},
        "headlessService": True,
        "template": {
            "cliques": [
                {
                    "name": "leader",
                    "replicas": 1,
                    "minAvailable": 1,
                    "template": {
                        "metadata": {"labels": {"app": "llama"}},
                        "spec": {"containers": [{"name": "main", "image": "vllm:latest"}]},
                    },
                },
                {
                    "name": "worker",
                    "replicas": 4,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "vllm:latest",
                                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                                }
                            ]
                        }
                    },
                },
            ]
        },
    },
    "status": {
        "observedGeneration": 3,
        "replicas": 2,
        "surgeReplicas": 0,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "updatedReplicas": 2,
        "gangRestarts": 1,
        "templateHash": "7c9f8d6b5",
        "hashAlgorithm": 1,
        "selector": "cliques.dev/cliqueset=llama",
        "conditions": [
            {
                "type": "Available",
                "status": "False",
                "reason": "GangsUnavailable",
                "message": "1 of 2 gangs available",
                "lastTransitionTime": "2025-01-02T03:05:00Z",
                "observedGeneration": 3,
            }
        ],
    },
}

POD_JSON: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {
        "name": "llama-0-worker-2",
        "namespace": "serving",
        "uid": "u-1",
        "resourceVersion": "99",
        "labels": {labels.LABEL_POD_INDEX: "2", labels.LABEL_CLIQUE: "worker"},
        "ownerReferences": [
            {
                "apiVersion": "cliques.dev/v1alpha1",
                "kind": "Clique",
                "name": "llama-0-worker",
                "uid": "u-0",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [{"manager": "cliques-operator"}],
    },
    "spec": {
        "hostname": "worker-2",
        "subdomain": "llama-0",
        "nodeName": "kwok-node-3",
        "containers": [{"name": "main", "image": "vllm", "env": [{"name": "A", "value": "1"}]}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    },
    "status": {
        "phase": "Running",
        "podIP": "10.0.0.7",
        "podIPs": [{"ip": "10.0.0.7"}],
        "hostIP": "10.1.0.1",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": None},
            {"type": "Ready", "status": "True", "lastProbeTime": None},
        ],
        "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0}],
    },
}


def test_cliqueset_decodes_everything_the_operator_reads() -> None:
    cqs = api.decode_cliqueset(json.dumps(CLIQUESET_JSON).encode())
    assert cqs.metadata.name == "llama"
    assert cqs.metadata.generation == 3
    assert cqs.metadata.finalizers == ["example.com/keep"]
    assert cqs.spec.startup_type == "InOrder"
    assert [c.name for c in cqs.spec.template.cliques] == ["leader", "worker"]
    worker = cqs.spec.clique("worker")
    assert worker is not None
    assert worker.min_available is None
    assert worker.effective_min_available == 4
    assert worker.template["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "8"
    }
    assert cqs.spec.clique("nope") is None
    assert cqs.status is not None
    assert cqs.status.hash_algorithm == 1
    available = api.find_condition(cqs.status.conditions, "Available")
    assert available is not None and available.status == "False"
    assert api.find_condition(cqs.status.conditions, "Degraded") is None


def test_cliqueset_round_trip_keeps_what_it_models() -> None:
    cqs = api.decode_cliqueset(json.dumps(CLIQUESET_JSON).encode())
    again = json.loads(api.encode(cqs))
    expected = json.loads(json.dumps(CLIQUESET_JSON))
    del expected["metadata"]["managedFields"]  # not modelled, so not written back
    # Fields at their CRD default are left out; the API server puts them back.
    expected["spec"]["updateStrategy"] = {}
    # A Struct-valued field encodes as its own (empty) defaults, never left out.
    expected["spec"]["gangScheduling"] = {}
    expected["spec"]["failurePolicy"] = {"restartBackoff": {}}
    expected["spec"]["nodeDrain"] = {}
    del expected["spec"]["headlessService"]
    del expected["spec"]["template"]["cliques"][0]["replicas"]
    # Status Structs encode every field, zeros included.
    expected["status"] |= {
        "updatedInPlace": 0,
        "updatedByReplacement": 0,
        "currentRevision": "",
        "queue": None,
    }
    assert again == expected
    assert api.decode_cliqueset(api.encode(cqs)) == cqs


def test_defaults_match_the_crd_and_are_omitted_on_encode() -> None:
    minimal = {
        "metadata": {"name": "x"},
        "spec": {"template": {"cliques": [{"name": "a", "template": {"spec": {}}}]}},
    }
    cqs = api.decode_cliqueset(json.dumps(minimal).encode())
    spec = cqs.spec
    assert spec.replicas == 1
    assert spec.startup_type == "AnyOrder"
    assert spec.update_strategy == api.UpdateStrategy(type="RollingUpdate", max_unavailable=1)
    assert spec.headless_service is True
    clique = spec.template.cliques[0]
    assert (clique.replicas, clique.min_available, clique.starts_after) == (1, None, [])
    assert clique.effective_min_available == 1
    assert cqs.status is None
    # apiVersion and kind are filled in even though the list item had none.
    assert (cqs.api_version, cqs.kind) == ("cliques.dev/v1alpha1", "CliqueSet")
    assert json.loads(api.encode(cqs)) == {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": "x"},
        "spec": {
            "updateStrategy": {},
            "gangScheduling": {},
            "failurePolicy": {"restartBackoff": {}},
            "nodeDrain": {},
            "template": {"cliques": [{"name": "a", "template": {"spec": {}}}]},
        },
    }


def test_a_new_object_encodes_without_server_fields() -> None:
    clique = api.Clique(
        metadata=api.ObjectMeta(
            name=labels.clique_name("llama", 0, "worker"),
            namespace="serving",
            labels={labels.LABEL_CLIQUESET: "llama", labels.LABEL_GANG_INDEX: "0"},
            owner_references=[
                api.OwnerReference(
                    api_version=labels.API_VERSION,
                    kind=labels.KIND_CLIQUESET,
                    name="llama",
                    uid="u-0",
                    controller=True,
                    block_owner_deletion=True,
                )
            ],
        ),
        spec=api.CliqueSpec(
            clique_name="worker",
            gang_index=0,
            replicas=4,
            min_available=4,
            starts_after=["llama-0-leader"],
            template={"spec": {"containers": [{"name": "main", "image": "vllm"}]}},
        ),
    )
    body = json.loads(api.encode(clique))
    assert body == {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "Clique",
        "metadata": {
            "name": "llama-0-worker",
            "namespace": "serving",
            "labels": {"cliques.dev/cliqueset": "llama", "cliques.dev/gang-index": "0"},
            "ownerReferences": [
                {
                    "apiVersion": "cliques.dev/v1alpha1",
                    "kind": "CliqueSet",
                    "name": "llama",
                    "uid": "u-0",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "cliqueName": "worker",
            "gangIndex": 0,
            "replicas": 4,
            "minAvailable": 4,
            "startsAfter": ["llama-0-leader"],
            "template": {"spec": {"containers": [{"name": "main", "image": "vllm"}]}},
        },
    }
    assert api.to_dict(clique) == body
    assert api.decode_clique(api.encode(clique)) == clique
    assert clique.metadata.controller_ref() is not None


def test_status_encodes_zero_counts() -> None:
    # A count that drops to 0 must be written as 0, or a merge patch would leave it stale.
    when = datetime.datetime(2025, 1, 2, 3, 4, 5, 600000, tzinfo=datetime.UTC)
    status = api.CliqueStatus(
        conditions=[
            api.Condition(
                type="Ready",
                status="False",
                reason="Scaling",
                last_transition_time=api.format_time(when),
            )
        ]
    )
    assert json.loads(api.encode(status)) == {
        "observedGeneration": 0,
        "replicas": 0,
        "readyReplicas": 0,
        "updatedReplicas": 0,
        "gangRestarts": 0,
        "queuedReplicas": 0,
        "templateHash": "",
        "hashAlgorithm": 0,
        "selector": "",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "Scaling",
                "message": "",
                "lastTransitionTime": "2025-01-02T03:04:05Z",
                "observedGeneration": 0,
            }
        ],
    }


def test_format_time_converts_to_utc_and_refuses_naive() -> None:
    east = datetime.timezone(datetime.timedelta(hours=2))
    assert (
        api.format_time(datetime.datetime(2025, 1, 2, 5, 0, tzinfo=east)) == "2025-01-02T03:00:00Z"
    )
    with pytest.raises(ValueError, match="aware"):
        api.format_time(datetime.datetime(2025, 1, 2))


def test_slim_pod_decodes_a_full_pod() -> None:
    pod = api.decode_pod(json.dumps(POD_JSON).encode())
    assert pod.metadata.name == "llama-0-worker-2"
    assert pod.spec == api.PodSpec(
        hostname="worker-2",
        subdomain="llama-0",
        node_name="kwok-node-3",
        containers=[api.ContainerImage(name="main", image="vllm")],
        tolerations=[api.Toleration(key="nvidia.com/gpu", operator="Exists")],
    )
    assert [(s.name, s.ready) for s in pod.status.container_statuses] == [("main", True)]
    assert pod.status.pod_ip == "10.0.0.7"
    assert pod.status.phase == "Running"
    assert pod.is_ready and not pod.is_terminal
    ref = pod.metadata.controller_ref()
    assert ref is not None and ref.name == "llama-0-worker" and ref.block_owner_deletion


def test_pod_readiness() -> None:
    pending = api.decode_pod(b'{"metadata": {"name": "p"}}')
    assert not pending.is_ready
    deleting = json.loads(json.dumps(POD_JSON))
    deleting["metadata"]["deletionTimestamp"] = "2025-01-02T03:04:05Z"
    assert not api.decode_pod(json.dumps(deleting).encode()).is_ready
    failed = json.loads(json.dumps(POD_JSON))
    failed["status"]["phase"] = "Failed"
    assert api.decode_pod(json.dumps(failed).encode()).is_terminal


def test_lists_decode_with_their_continue_token() -> None:
    body = {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "120", "continue": "abc", "remainingItemCount": 7},
        "items": [POD_JSON, POD_JSON],
    }
    pods = api.decode_pod_list(json.dumps(body).encode())
    assert pods.metadata.resource_version == "120"
    assert pods.metadata.continue_ == "abc"
    assert pods.metadata.remaining_item_count == 7
    assert len(pods.items) == 2
    listed = {"metadata": {"resourceVersion": "5"}, "items": [CLIQUESET_JSON]}
    cliquesets = api.decode_cliqueset_list(json.dumps(listed).encode())
    assert cliquesets.items[0].spec.replicas == 2
    cliques = api.decode_clique_list(b'{"metadata": {}, "items": []}')
    assert cliques.items == []


def test_a_wrong_type_names_its_path() -> None:
    bad = json.loads(json.dumps(CLIQUESET_JSON))
    bad["spec"]["template"]["cliques"][1]["replicas"] = "four"
    with pytest.raises(msgspec.ValidationError, match=r"spec\.template\.cliques\[1\]\.replicas"):
        api.decode_cliqueset(json.dumps(bad).encode())
    bad = json.loads(json.dumps(CLIQUESET_JSON))
    bad["spec"]["startupType"] = "Sometimes"
    with pytest.raises(ValueError, match=r"spec\.startupType"):
        api.decode_cliqueset(json.dumps(bad).encode())


@pytest.mark.parametrize(
    "name", ["llama.yaml", "explicit.yaml", "gang.yaml", "domains.yaml", "kueue/cliqueset.yaml"]
)
def test_the_examples_decode(name: str) -> None:
    manifest = yaml.safe_load((EXAMPLES / name).read_text())
    cqs = msgspec.convert(manifest, api.CliqueSet)
    assert cqs.kind == "CliqueSet"
    names = [c.name for c in cqs.spec.template.cliques]
    assert len(names) == len(set(names))
    for clique in cqs.spec.template.cliques:
        assert clique.effective_min_available <= clique.replicas
        assert set(clique.starts_after) <= set(names) - {clique.name}
        assert clique.template["spec"]["containers"]
    if name == "explicit.yaml":
        assert cqs.spec.startup_type == "Explicit"
    elif name == "domains.yaml":
        assert [(c.name, c.scope) for c in cqs.spec.resource_claims] == [
            ("domain", "Gang"),
            ("gpu", "Pod"),
        ]
    elif name == "gang.yaml":
        spec = cqs.spec
        assert spec.gang_scheduling.backend == "Auto"
        assert spec.failure_policy.restart_policy == "RecreateGang"
        assert spec.placement is not None
        assert spec.placement.pack is not None and spec.placement.exclusive is not None
    elif name == "kueue/cliqueset.yaml":
        assert cqs.metadata.labels["kueue.x-k8s.io/queue-name"] == "team-a"
    else:
        assert cqs.spec.startup_type == "InOrder"
        assert [c.name for c in cqs.spec.template.cliques] == ["leader", "worker"]
