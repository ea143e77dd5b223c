"""The indexed store: lookups by owner UID and by label stay consistent through updates."""

from cliques.api.meta import ObjectMeta, OwnerReference
from cliques.api.pod import Pod
from cliques.kube import store


def pod(name: str, owner: str, cqs: str = "s", rv: str = "1") -> Pod:
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace="ns",
            resource_version=rv,
            labels={"cliques.dev/cliqueset": cqs},
            owner_references=[
                OwnerReference(
                    api_version="v1", kind="Clique", name="c", uid=owner, controller=True
                )
            ],
        )
    )


def test_indexes_follow_upserts_and_removes() -> None:
    s: store.Store[Pod] = store.Store(
        {"controller": store.by_controller, "cqs": store.by_label("cliques.dev/cliqueset")}
    )
    s.upsert(pod("a", "u1"))
    s.upsert(pod("b", "u1"))
    s.upsert(pod("c", "u2", cqs="t"))
    assert sorted(p.metadata.name for p in s.by_index("controller", "ns/u1")) == ["a", "b"]
    assert [p.metadata.name for p in s.by_index("cqs", "ns/t")] == ["c"]
    # re-owned: moves between index buckets
    old = s.upsert(pod("a", "u2", rv="2"))
    assert old is not None and old.metadata.resource_version == "1"
    assert [p.metadata.name for p in s.by_index("controller", "ns/u1")] == ["b"]
    assert sorted(p.metadata.name for p in s.by_index("controller", "ns/u2")) == ["a", "c"]
    s.remove("ns/b")
    assert s.by_index("controller", "ns/u1") == []
    assert "ns/u1" not in s.index_values("controller")
    assert len(s) == 2 and "ns/a" in s and sorted(s) == ["ns/a", "ns/c"]


def test_an_update_in_place_is_what_the_index_returns() -> None:
    s: store.Store[Pod] = store.Store(
        {"controller": store.by_controller, "cqs": store.by_label("cliques.dev/cliqueset")}
    )
    s.upsert(pod("a", "u1"))
    s.upsert(pod("b", "u1"))
    newer = pod("a", "u1", rv="2")
    s.upsert(newer)
    by_owner = {p.metadata.name: p for p in s.by_index("controller", "ns/u1")}
    assert by_owner["a"] is newer and len(by_owner) == 2
    assert {p.metadata.name: p for p in s.by_index("cqs", "ns/s")}["a"] is newer
    # a label change alone moves it in that index only
    s.upsert(pod("a", "u1", cqs="t", rv="3"))
    assert [p.metadata.name for p in s.by_index("cqs", "ns/t")] == ["a"]
    assert [p.metadata.name for p in s.by_index("cqs", "ns/s")] == ["b"]
    assert len(s.by_index("controller", "ns/u1")) == 2


def test_a_forged_owner_reference_from_another_namespace_is_no_child() -> None:
    s: store.Store[Pod] = store.Store({"controller": store.by_controller})
    s.upsert(pod("a", "u1"))
    forged = pod("evil", "u1")
    forged.metadata.namespace = "other"
    s.upsert(forged)
    assert [p.metadata.name for p in s.by_index("controller", store.owner_key("ns", "u1"))] == ["a"]


def test_random_upserts_and_removes_keep_every_index_equal_to_a_scan() -> None:
    """An index value with one object keeps it as a pair, with more as a dict, and back:
    through any order of upserts, re-owning and removes, each index answers as a scan of
    the store's objects would, in both forms."""
    import random

    rng = random.Random(7)
    s: store.Store[Pod] = store.Store(
        {"controller": store.by_controller, "cqs": store.by_label("cliques.dev/cliqueset")}
    )
    version = 0
    for _ in range(3000):
        name = f"p{rng.randrange(12)}"
        if rng.random() < 0.3:
            s.remove(f"ns/{name}")
        else:
            version += 1
            owner, cqs = f"u{rng.randrange(4)}", f"s{rng.randrange(3)}"
            s.upsert(pod(name, owner, cqs=cqs, rv=str(version)))
        for index, fn in (
            ("controller", store.by_controller),
            ("cqs", store.by_label("cliques.dev/cliqueset")),
        ):
            want: dict[str, list[Pod]] = {}
            for obj in s.objects():
                for value in fn(obj):
                    want.setdefault(value, []).append(obj)
            assert sorted(s.index_values(index)) == sorted(want)
            for value, objs in want.items():
                got = s.by_index(index, value)
                assert sorted(id(o) for o in got) == sorted(id(o) for o in objs)
            assert s.by_index(index, "ns/none") == []
