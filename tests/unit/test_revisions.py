"""Revisions of a CliqueSet's gang template (`controllers.features.revisions`, the planner's
`_revisions` phase): the first one, a new one per change that rolls and none for one that
does not, a change back renumbered, the history limit, names that never collide, nothing
written once the history is in order; and the undo's patch (`cliques.rollout.history`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from cliques import _core
from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.controllerrevision import ControllerRevision, ControllerRevisionData
from cliques.api.meta import ObjectMeta, OwnerReference
from cliques.controllers.base.actions import Create, Delete, Patch
from cliques.controllers.base.revision import Hasher
from cliques.controllers.cliqueset import planner, template_hash
from cliques.controllers.cliqueset.planner import CliqueSetPlan
from cliques.controllers.features import revisions
from cliques.kube.resources import CONTROLLER_REVISIONS
from cliques.rollout import history
from tests.unit.planner_fixtures import cliqueset, gangs, services, set_snapshot

HASHER = Hasher()
BUCKET = str(_core.bucket_of("ns", "llama"))


def with_spec(cqs: CliqueSet, **changes: Any) -> CliqueSet:
    spec = msgspec.structs.replace(cqs.spec, **changes)
    return msgspec.structs.replace(cqs, spec=spec)


def with_meta(cqs: CliqueSet, **changes: Any) -> CliqueSet:
    return msgspec.structs.replace(cqs, metadata=msgspec.structs.replace(cqs.metadata, **changes))


def plan_of(cqs: CliqueSet, have: list[ControllerRevision], **kw: Any) -> CliqueSetPlan:
    """The plan of `cqs` with its real template hashes, Cliques in order and the
    ControllerRevisions `have`."""
    hashes, _ = template_hash.hashes(cqs, HASHER)
    kw.setdefault("services", services(cqs.spec.replicas))
    cliques = gangs(cqs.spec.replicas, hash_=hashes["leader"])
    snap = set_snapshot(cqs, cliques, hashes=hashes, revisions_served=True, revisions=have, **kw)
    return planner.plan(snap)


def revision_writes(plan: CliqueSetPlan) -> tuple[list[Create], list[Patch], list[Delete]]:
    def ours(actions: list[Any]) -> list[Any]:
        return [a for a in actions if a.resource == CONTROLLER_REVISIONS]

    return ours(plan.creates), ours(plan.patches), ours(plan.deletes)


def applied(have: list[ControllerRevision], plan: CliqueSetPlan) -> list[ControllerRevision]:
    """`have` after the plan's revision writes, as the API server would make them."""
    creates, patches, deletes = revision_writes(plan)
    gone = {d.name for d in deletes}
    out = {r.metadata.name: r for r in have if r.metadata.name not in gone}
    for c in creates:
        m = c.body["metadata"]
        out[c.name] = ControllerRevision(
            metadata=ObjectMeta(
                name=c.name,
                namespace=m["namespace"],
                uid=f"uid-{c.name}",
                resource_version="1",
                labels=m["labels"],
                annotations=m.get("annotations", {}),
                owner_references=[OwnerReference(**_snake(o)) for o in m["ownerReferences"]],
            ),
            revision=c.body["revision"],
        )
    for p in patches:
        r = out[p.name]
        assert p.patch["metadata"]["resourceVersion"] == r.metadata.resource_version
        notes = {**r.metadata.annotations, **p.patch["metadata"].get("annotations", {})}
        meta = msgspec.structs.replace(
            r.metadata,
            annotations=notes,
            resource_version=str(int(r.metadata.resource_version) + 1),
        )
        out[p.name] = msgspec.structs.replace(r, metadata=meta, revision=p.patch["revision"])
    return sorted(out.values(), key=lambda r: r.revision)


def _snake(ref: dict[str, Any]) -> dict[str, Any]:
    return {
        "api_version": ref["apiVersion"],
        "kind": ref["kind"],
        "name": ref["name"],
        "uid": ref["uid"],
        "controller": ref["controller"],
    }


def numbers(have: list[ControllerRevision]) -> dict[str, int]:
    return {r.metadata.name: r.revision for r in have}


def record(cqs: CliqueSet, have: list[ControllerRevision]) -> list[ControllerRevision]:
    return applied(have, plan_of(cqs, have))


def name_of(cqs: CliqueSet) -> str:
    hashes, _ = template_hash.hashes(cqs, HASHER)
    return revisions.current_name(cqs.metadata.name, hashes)


V1 = cliqueset()
V2 = cliqueset(image="vllm:2", generation=2)


def test_the_first_revision_is_made_with_number_1_and_named_in_the_status() -> None:
    plan = plan_of(V1, [])
    creates, patches, deletes = revision_writes(plan)
    assert patches == deletes == []
    (made,) = creates
    assert plan.creates[0] is made, "the revision goes out before the Cliques"
    name = made.name
    assert name == name_of(V1) and name.startswith("llama-")
    assert len(name) - len("llama-") in (19, 20)
    body = made.body
    assert body["apiVersion"] == "apps/v1" and body["kind"] == "ControllerRevision"
    assert body["revision"] == 1
    assert body["metadata"]["labels"] == {
        labels.LABEL_CLIQUESET: "llama",
        labels.LABEL_BUCKET: BUCKET,
    }
    (owner,) = body["metadata"]["ownerReferences"]
    assert owner["uid"] == "cqs-uid" and owner["kind"] == "CliqueSet" and owner["controller"]
    assert msgspec.json.decode(body["data"]) == {
        "spec": {"template": msgspec.to_builtins(V1.spec.template)}
    }
    assert made.owner_uid == "cqs-uid"
    assert plan.status is not None and plan.status.current_revision == name


def test_the_data_written_back_gives_the_same_hashes() -> None:
    placed = cliqueset(image="vllm:3")
    data = revisions.data(placed)
    spec = msgspec.convert({**msgspec.to_builtins(placed.spec), **data["spec"]}, type(placed.spec))
    back = msgspec.structs.replace(placed, spec=spec)
    assert template_hash.hashes(back, HASHER) == template_hash.hashes(placed, HASHER)


def test_an_image_change_makes_revision_2() -> None:
    have = record(V1, [])
    plan = plan_of(V2, have)
    creates, patches, deletes = revision_writes(plan)
    assert patches == deletes == []
    (made,) = creates
    assert made.body["revision"] == 2 and made.name == name_of(V2) != name_of(V1)
    assert plan.status is not None and plan.status.current_revision == made.name
    assert numbers(applied(have, plan)) == {name_of(V1): 1, name_of(V2): 2}


@pytest.mark.parametrize(
    "change",
    [
        lambda c: with_spec(c, replicas=5),
        lambda c: cliqueset(roles=(("leader", 1), ("worker", 4))),  # a clique's size
        lambda c: cliqueset(max_unavailable=3),
        lambda c: cliqueset(roles=(("worker", 2), ("leader", 1))),  # the cliques' order
    ],
    ids=["replicas", "clique-replicas", "update-strategy", "clique-order"],
)
def test_a_change_that_rolls_nothing_makes_no_revision(change: Any) -> None:
    have = record(V1, [])
    changed = change(V1)
    assert name_of(changed) == name_of(V1)
    assert revision_writes(plan_of(changed, have)) == ([], [], [])


def test_a_change_back_renumbers_revision_1_to_3_and_makes_none() -> None:
    have = record(V2, record(V1, []))
    back = cliqueset(image="vllm:1", generation=3)
    plan = plan_of(back, have)
    creates, patches, deletes = revision_writes(plan)
    assert creates == deletes == []
    (patch,) = patches
    assert patch.name == name_of(V1) and patch.patch["revision"] == 3
    assert patch.patch["metadata"] == {"resourceVersion": "1"}, "guarded by its version"
    assert patch.expect == f"{name_of(V1)}@3"
    assert numbers(applied(have, plan)) == {name_of(V2): 2, name_of(V1): 3}
    assert plan.status is not None and plan.status.current_revision == name_of(V1)


def test_the_history_limit_deletes_the_oldest_but_never_the_current() -> None:
    have: list[ControllerRevision] = []
    for n in range(1, 6):
        have = record(cliqueset(image=f"vllm:{n}"), have)
    assert sorted(numbers(have).values()) == [1, 2, 3, 4, 5]
    latest = with_spec(cliqueset(image="vllm:5"), revision_history_limit=2)
    _, _, deletes = revision_writes(plan_of(latest, have))
    assert [d.name for d in deletes] == [name_of(cliqueset(image=f"vllm:{n}")) for n in (1, 2)]
    assert all(d.uid == f"uid-{d.name}" and d.owner_uid == "cqs-uid" for d in deletes)
    # Back to the oldest with no history kept: it is renumbered, every other one goes.
    oldest = with_spec(cliqueset(image="vllm:1"), revision_history_limit=0)
    plan = plan_of(oldest, have)
    creates, patches, deletes = revision_writes(plan)
    assert creates == [] and [p.name for p in patches] == [name_of(oldest)]
    assert name_of(oldest) not in {d.name for d in deletes}
    assert numbers(applied(have, plan)) == {name_of(oldest): 6}


def test_a_revision_being_deleted_is_neither_counted_nor_made_again_yet() -> None:
    have = record(V1, [])
    (r,) = have
    going = msgspec.structs.replace(
        r, metadata=msgspec.structs.replace(r.metadata, deletion_timestamp="2026-01-01T00:00:00Z")
    )
    assert revision_writes(plan_of(V1, [going])) == ([], [], [])


def test_names_never_collide_between_sets_whose_names_run_into_each_other() -> None:
    # `llama` + `-0-...` and `llama-0` + `-...`: the hash has no '-', so the set's name
    # reads back from the right, and it is 19 or 20 characters, longer than a StatefulSet's.
    sets = [cliqueset(image=f"vllm:{n}") for n in range(20)]
    names = set()
    for set_name in ("llama", "llama-0", "llama-0-leader", "l"):
        for cqs in sets:
            name = name_of(with_meta(cqs, name=set_name))
            owner, _, suffix = name.rpartition("-")
            assert owner == set_name and len(suffix) in (19, 20) and suffix.isalnum()
            names.add(name)
    assert len(names) == 4 * 20
    with pytest.raises(ValueError, match="without '-'"):
        labels.revision_name("llama", "0-abc")


def test_the_history_is_in_order_after_the_writes_of_one_plan() -> None:
    have = record(V2, record(V1, []))
    for cqs in (V2, cliqueset(image="vllm:1", generation=3), with_spec(V1, replicas=7)):
        first = plan_of(cqs, have)
        after = applied(have, first)
        status = first.status
        written = with_meta(msgspec.structs.replace(cqs, status=status), resource_version="11")
        second = plan_of(written, after)
        assert revision_writes(second) == ([], [], []), cqs.spec
        assert second.status is None, "the status says the same"
        have = after


def test_nothing_is_recorded_while_expectations_are_pending_or_without_the_watch() -> None:
    assert revision_writes(plan_of(V1, [], expectations_satisfied=False)) == ([], [], [])
    hashes, _ = template_hash.hashes(V1, HASHER)
    plan = planner.plan(set_snapshot(V1, [], hashes=hashes))
    assert revision_writes(plan) == ([], [], [])
    assert plan.status is not None and plan.status.current_revision == ""


def test_the_change_cause_goes_with_the_revision() -> None:
    caused = with_meta(V1, annotations={revisions.CHANGE_CAUSE: "first"})
    (made,) = revision_writes(plan_of(caused, []))[0]
    assert made.body["metadata"]["annotations"] == {revisions.CHANGE_CAUSE: "first"}
    have = record(V1, [])
    later = with_meta(V1, annotations={revisions.CHANGE_CAUSE: "annotated after"})
    (patch,) = revision_writes(plan_of(later, have))[1]
    assert patch.patch["metadata"]["annotations"] == {revisions.CHANGE_CAUSE: "annotated after"}
    assert patch.patch["revision"] == 1 and patch.reason == "ChangeCause"


# -- undo ---------------------------------------------------------------------------------


def stored(cqs: CliqueSet, number: int, **notes: str) -> ControllerRevisionData:
    body = revisions.body(cqs, name_of(cqs), number, BUCKET)
    return ControllerRevisionData(
        metadata=ObjectMeta(name=body["metadata"]["name"], annotations=notes),
        revision=number,
        data=msgspec.json.decode(body["data"]),
    )


def patched(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A small RFC 6902 applier (test, add, replace, remove) for the undo's patches."""
    import copy

    out = copy.deepcopy(obj)
    for op in ops:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]
        ]
        node: Any = out
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        key: Any = int(last) if isinstance(node, list) else last
        if op["op"] == "test":
            assert node[key] == op["value"], op
        elif op["op"] in ("add", "replace"):
            node[key] = op["value"]
        else:
            del node[key]
    return out


def undone(now: CliqueSet, target: ControllerRevisionData) -> CliqueSet:
    raw = patched(msgspec.to_builtins(now), history.undo_patch(now, target))
    return msgspec.convert(raw, CliqueSet)


def test_undo_writes_the_templates_back_and_keeps_the_sizes() -> None:
    now = with_spec(cliqueset(image="vllm:2", roles=(("leader", 1), ("worker", 4))), replicas=5)
    back = undone(now, stored(V1, 1))
    assert template_hash.hashes(back, HASHER) == template_hash.hashes(V1, HASHER)
    assert back.spec.replicas == 5
    assert [c.replicas for c in back.spec.template.cliques] == [1, 4]
    ops = history.undo_patch(now, stored(V1, 1))
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "10"}


def test_undo_to_other_cliques_writes_the_whole_template_back() -> None:
    now = cliqueset(roles=(("leader", 1), ("worker", 2), ("router", 1)), image="vllm:2")
    back = undone(now, stored(V1, 1))
    assert [c.name for c in back.spec.template.cliques] == ["leader", "worker"]
    assert template_hash.hashes(back, HASHER) == template_hash.hashes(V1, HASHER)


def test_undo_gives_the_set_the_revisions_change_cause() -> None:
    now = with_meta(V2, annotations={revisions.CHANGE_CAUSE: "to v2", "keep": "me"})
    back = undone(now, stored(V1, 1, **{revisions.CHANGE_CAUSE: "v1"}))
    assert back.metadata.annotations == {revisions.CHANGE_CAUSE: "v1", "keep": "me"}
    back = undone(now, stored(V1, 1))
    assert back.metadata.annotations == {"keep": "me"}
    bare = undone(V2, stored(V1, 1, **{revisions.CHANGE_CAUSE: "v1"}))
    assert bare.metadata.annotations == {revisions.CHANGE_CAUSE: "v1"}


def test_undo_picks_the_previous_revision_and_refuses_what_is_not_there() -> None:
    found = [stored(V1, 1), stored(V2, 2), stored(cliqueset(image="vllm:3"), 3)]
    current = found[2].metadata.name
    assert history.pick("llama", found, current, None) is found[1]
    assert history.pick("llama", found, current, 1) is found[0]
    with pytest.raises(history.NoSuchRevision, match=r"no revision 7 \(revisions: 1, 2, 3\)"):
        history.pick("llama", found, current, 7)
    with pytest.raises(history.AlreadyAtRevision, match="at revision 3 already"):
        history.pick("llama", found, current, 3)
    with pytest.raises(history.NoSuchRevision, match="no previous revision"):
        history.pick("llama", found[2:], current, None)
    # Not recorded yet (the operator has not seen the edit): the latest recorded is previous.
    assert history.pick("llama", found, "", None) is found[2]


def test_the_current_revision_is_what_the_templates_hash_to() -> None:
    found = [stored(V1, 1), stored(V2, 2)]
    assert history.current_of(V1, found) == found[0].metadata.name
    info = history.info(found[1], history.current_of(V2, found))
    assert info.current and info.revision == 2
    assert info.images == {"leader": ("vllm:2",), "worker": ("vllm:2",)}


def test_the_snapshot_view_defaults_leave_revisions_off() -> None:
    assert dataclasses.replace(revisions.View()).served is False
    assert revisions.observed_token(object()) is None
