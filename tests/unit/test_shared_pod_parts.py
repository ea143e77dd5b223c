"""Pods decoded for the operator's cache share one copy of each distinct container list and
condition list (`pod.SharedParts`), and read the same as before."""

from __future__ import annotations

import msgspec

from cliques.api.pod import Pod, SharedParts
from cliques.controllers.clique import controller as clique_controller


def _raw(name: str, image: str, ready: str = "True", cpu: str = "1") -> bytes:
    return msgspec.json.encode(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "labels": {"i": name},
                "annotations": {"a": cpu},
            },
            "spec": {
                "containers": [
                    {"name": "main", "image": image, "resources": {"requests": {"cpu": cpu}}}
                ],
                "tolerations": [{"key": "k", "operator": "Exists"}],
            },
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": ready},
                ],
                "containerStatuses": [{"name": "main", "image": image, "ready": ready == "True"}],
            },
        }
    )


def _decoded(raw: bytes, share: SharedParts | None = None) -> Pod:
    pod = msgspec.json.decode(raw, type=Pod)
    return share(pod) if share is not None else pod


def test_equal_lists_are_one_object_and_different_ones_stay_apart() -> None:
    share = SharedParts()
    a, b = _decoded(_raw("a", "x:1"), share), _decoded(_raw("b", "x:1"), share)
    c = _decoded(_raw("c", "x:1", ready="False", cpu="2"), share)
    assert a.spec.containers is b.spec.containers
    assert a.status.conditions is b.status.conditions
    assert a.status.container_statuses is b.status.container_statuses
    assert a.metadata.annotations is b.metadata.annotations
    assert a.spec.tolerations is b.spec.tolerations is c.spec.tolerations
    assert c.spec.containers is not a.spec.containers
    assert c.status.conditions is not a.status.conditions
    assert c.status.container_statuses is not a.status.container_statuses
    assert c.metadata.annotations is not a.metadata.annotations
    assert a.is_ready and b.is_ready and not c.is_ready
    assert c.spec.containers[0].resources.requests == {"cpu": "2"}
    assert c.metadata.annotations == {"a": "2"}
    assert b.metadata.name == "b" and b.metadata.labels == {"i": "b"}, "not the labels"
    # 9 non-empty parts, and the empty init containers, gates and finalizers, one each
    assert len(share) == 13


def test_a_shared_pod_equals_the_pod_decoded_alone() -> None:
    share = SharedParts()
    for name, image, ready in (("a", "x:1", "True"), ("b", "x:1", "True"), ("c", "y", "False")):
        raw = _raw(name, image, ready)
        assert _decoded(raw, share) == _decoded(raw)


def test_equal_json_of_two_fields_is_not_shared_between_them() -> None:
    """A part is shared only with an equal part of the same field, never with another
    field's part that happens to encode alike."""
    share = SharedParts()
    raw = msgspec.json.decode(_raw("a", "x:1"))
    raw["status"]["containerStatuses"] = [{"name": "main", "image": "x:1"}]
    raw["spec"]["containers"] = [{"name": "main", "image": "x:1"}]
    pod = _decoded(msgspec.json.encode(raw), share)
    assert pod.spec.containers is not pod.status.container_statuses
    assert type(pod.status.container_statuses[0]).__name__ == "ContainerStatus"


def test_past_its_limit_the_table_starts_over_and_pods_stay_right() -> None:
    share = SharedParts(limit=3)
    for i in range(7):
        pod = _decoded(_raw(f"p{i}", f"x:{i}", ready="True" if i % 2 else "False"), share)
        assert pod.spec.containers[0].image == f"x:{i}"
        assert pod.is_ready == bool(i % 2)
        assert len(share) <= 3


def test_the_pod_informer_shares_them() -> None:
    (watch,) = [w for w in clique_controller.WATCHES if w.name == "pods"]
    assert watch.transform is SharedParts


def test_label_values_and_owner_kinds_are_one_string_across_pods() -> None:
    share = SharedParts()
    pods = []
    for name in ("a", "b"):
        raw = msgspec.json.decode(_raw(name, "x:1"))
        raw["metadata"]["labels"]["cliques.dev/cliqueset"] = "llama-" + "70b"
        owner = {"apiVersion": "cliques.dev/v1alpha1", "kind": "Clique", "name": "c", "uid": "u"}
        raw["metadata"]["ownerReferences"] = [owner]
        pods.append(_decoded(msgspec.json.encode(raw), share))
    a, b = pods
    assert a.metadata.labels["cliques.dev/cliqueset"] is b.metadata.labels["cliques.dev/cliqueset"]
    assert a.metadata.owner_references[0].kind is b.metadata.owner_references[0].kind
    assert a.metadata.labels["i"] == "a" and b.metadata.labels["i"] == "b"


def test_empty_lists_and_repeated_strings_are_one_object_across_pods() -> None:
    """An empty list decoded is a list of its own per field and pod; the namespace, node,
    subdomain, phase and creation second repeat across pods, each decoded anew."""
    share = SharedParts()
    pods = []
    for name in ("a", "b"):
        raw = msgspec.json.decode(_raw(name, "x:1"))
        raw["metadata"]["creationTimestamp"] = "2026-11-29T08:00:00Z"
        raw["spec"].update(nodeName="node-1", subdomain="set-0")
        pods.append(_decoded(msgspec.json.encode(raw), share))
    a, b = pods
    for field in ("init_containers", "scheduling_gates", "readiness_gates"):
        assert getattr(a.spec, field) is getattr(b.spec, field) == [], field
    assert a.metadata.finalizers is b.metadata.finalizers == []
    assert a.spec.init_containers is not a.spec.scheduling_gates, "each field its own"
    for get in (
        lambda p: p.metadata.namespace,
        lambda p: p.metadata.creation_timestamp,
        lambda p: p.spec.node_name,
        lambda p: p.spec.subdomain,
        lambda p: p.status.phase,
    ):
        assert get(a) is get(b)
    assert a.spec.node_name == "node-1" and a.status.phase == "Running"
    assert a == _decoded(msgspec.json.encode(msgspec.json.decode(msgspec.json.encode(a))))


def test_cached_pods_and_cliques_are_not_tracked_by_the_garbage_collector() -> None:
    """The Structs informers cache by the hundred thousand hold plain data and no cycle:
    untracked, each is 16 bytes smaller and no full collection walks it."""
    import gc

    from cliques.api.clique import Clique

    pod = _decoded(_raw("a", "x:1"))
    clique = msgspec.json.decode(
        b'{"metadata":{"name":"c","ownerReferences":[{"apiVersion":"v","kind":"S","name":"s",'
        b'"uid":"u"}]},"spec":{"cliqueName":"w",'
        b'"gangIndex":0,"template":{}},"status":{"conditions":[{"type":"Ready",'
        b'"status":"True","reason":"R","lastTransitionTime":"t"}]}}',
        type=Clique,
    )
    structs = [pod, pod.metadata, pod.spec, pod.status, *pod.spec.containers]
    structs += [*pod.status.conditions, *pod.status.container_statuses]
    structs += [clique, clique.metadata, clique.spec, clique.status]
    structs += [*clique.metadata.owner_references]
    assert clique.status is not None
    structs += clique.status.conditions
    assert [type(s).__name__ for s in structs if gc.is_tracked(s)] == []
