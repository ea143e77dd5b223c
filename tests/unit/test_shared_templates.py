"""Cliques decoded for the operator's cache share one copy of each distinct pod template."""

from __future__ import annotations

import msgspec

from cliques.api.clique import Clique, SharedTemplates


def _raw(name: str, image: str, gang: int = 0) -> bytes:
    return msgspec.json.encode(
        {
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {
                "cliqueName": "worker",
                "gangIndex": gang,
                "template": {"spec": {"containers": [{"name": "main", "image": image}]}},
            },
        }
    )


def test_equal_templates_are_one_object_and_different_ones_stay_apart() -> None:
    share = SharedTemplates()
    a, b, c = (
        share(msgspec.json.decode(_raw(n, img, g), type=Clique))
        for n, img, g in (("a", "x:1", 0), ("b", "x:1", 1), ("c", "x:2", 2))
    )
    assert a.spec.template is b.spec.template
    assert c.spec.template is not a.spec.template
    assert c.spec.template["spec"]["containers"][0]["image"] == "x:2"
    assert b.spec.gang_index == 1 and b.metadata.name == "b", "only the template is shared"
    assert len(share) == 2


def test_past_its_limit_the_table_starts_over_and_templates_stay_right() -> None:
    share = SharedTemplates(limit=2)
    for i in range(5):
        got = share(msgspec.json.decode(_raw(f"c{i}", f"x:{i}"), type=Clique))
        assert got.spec.template["spec"]["containers"][0]["image"] == f"x:{i}"
        assert len(share) <= 2


def test_large_distinct_templates_are_bounded_by_their_bytes() -> None:
    share = SharedTemplates(max_bytes=10_000)
    for i in range(20):
        got = share(msgspec.json.decode(_raw(f"c{i}", f"x:{i}" + "y" * 3_000), type=Clique))
        assert got.spec.template["spec"]["containers"][0]["image"].startswith(f"x:{i}")
        assert share._bytes <= 10_000 and len(share) <= 3


def _with_status(name: str, ready: str, since: str) -> bytes:
    body = msgspec.json.decode(_raw(name, "x:1"))
    cond = {"type": "Ready", "status": ready, "reason": "R", "lastTransitionTime": since}
    body["status"] = {"readyReplicas": 1, "conditions": [cond]}
    return msgspec.json.encode(body)


def test_equal_condition_lists_are_one_object_and_different_ones_stay_apart() -> None:
    share = SharedTemplates()
    t = "2026-11-28T10:00:00Z"
    a, b, c, d = (
        share(msgspec.json.decode(_with_status(n, ready, since), type=Clique))
        for n, ready, since in (
            ("a", "True", t),
            ("b", "True", t),
            ("c", "False", t),
            ("d", "True", "x"),
        )
    )
    assert a.status is not None and b.status is not None
    assert c.status is not None and d.status is not None
    assert a.status.conditions is b.status.conditions
    assert c.status.conditions is not a.status.conditions
    assert d.status.conditions is not a.status.conditions
    assert [x.status for x in c.status.conditions] == ["False"]
    assert a == msgspec.json.decode(_with_status("a", "True", t), type=Clique)
    assert len(share) == 1, "conditions are kept apart from templates"


def _of_set(name: str, owner_uid: str, role: str = "worker") -> bytes:
    body = msgspec.json.decode(_raw(name, "x:1"))
    body["apiVersion"], body["kind"] = "cliques.dev/v1alpha1", "Clique"
    body["spec"]["cliqueName"] = role
    body["spec"]["startsAfter"] = ["leader"]
    owner = {"apiVersion": "cliques.dev/v1alpha1", "kind": "CliqueSet", "name": "s"}
    body["metadata"]["ownerReferences"] = [{**owner, "uid": owner_uid, "controller": True}]
    body["metadata"]["creationTimestamp"] = "2026-11-29T08:00:00Z"
    body["status"] = {"templateHash": "abcd"}
    return msgspec.json.encode(body)


def test_a_sets_cliques_share_their_owner_references_and_repeated_strings() -> None:
    share = SharedTemplates()
    a, b, other = (
        share(msgspec.json.decode(_of_set(n, uid), type=Clique))
        for n, uid in (("a", "u1"), ("b", "u1"), ("c", "u2"))
    )
    assert a.metadata.owner_references is b.metadata.owner_references
    assert other.metadata.owner_references is not a.metadata.owner_references
    assert other.metadata.owner_references[0].uid == "u2"
    assert a.metadata.finalizers is b.metadata.finalizers == []
    assert a.spec.starts_after is b.spec.starts_after == ["leader"]
    assert a.status is not None and b.status is not None
    assert a.status.template_hash is b.status.template_hash
    for get in (
        lambda c: c.api_version,
        lambda c: c.kind,
        lambda c: c.spec.clique_name,
        lambda c: c.metadata.namespace,
        lambda c: c.metadata.creation_timestamp,
    ):
        assert get(a) is get(b)
    assert a == msgspec.json.decode(_of_set("a", "u1"), type=Clique)
    assert len(share) == 1, "the parts are kept apart from templates"
