"""Pods decoded for the operator's cache share one copy of each distinct container list and
condition list (`pod.SharedParts`), and read the same as before."""

from __future__ import annotations

import msgspec

from cliques.api.pod import Pod, SharedParts
from cliques.controllers.clique import controller as clique_controller


def _raw(name: str, image: str, ready: str = "True", cpu: str = "1") -> bytes:
    return msgspec.json.encode(
        {
            "metadata": {"name": name, "namespace": "ns", "labels": {"i": name}},
            "spec": {
                "containers": [
                    {"name": "main", "image": image, "resources": {"requests": {"cpu": cpu}}}
                ]
            },
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": ready},
                ],
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
    assert c.spec.containers is not a.spec.containers
    assert c.status.conditions is not a.status.conditions
    assert a.is_ready and b.is_ready and not c.is_ready
    assert c.spec.containers[0].resources.requests == {"cpu": "2"}
    assert b.metadata.name == "b" and b.metadata.labels == {"i": "b"}, "only the lists"
    assert len(share) == 4


def test_a_shared_pod_equals_the_pod_decoded_alone() -> None:
    share = SharedParts()
    for name, image, ready in (("a", "x:1", "True"), ("b", "x:1", "True"), ("c", "y", "False")):
        raw = _raw(name, image, ready)
        assert _decoded(raw, share) == _decoded(raw)


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
