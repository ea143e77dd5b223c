"""Table tests of the CliqueSet planner: gangs, services, resizes, rollouts, upgrades."""

from __future__ import annotations

from typing import Any

from cliques.api import labels
from cliques.api.meta import ObjectMeta, OwnerReference
from cliques.api.service import Service
from cliques.controllers import cliqueset_planner
from cliques.controllers.cliqueset_planner import CliqueSetSnapshot

from .planner_fixtures import NOW, clique, cliqueset

HASHES = {"leader": "h1", "worker": "h1"}


def snap(cqs, cliques, **kw: Any) -> CliqueSetSnapshot:  # type: ignore[no-untyped-def]
    kw.setdefault("hashes", dict(HASHES))
    return CliqueSetSnapshot(cliqueset=cqs, cliques=cliques, now=NOW, **kw)


def gangs(n: int, **kw: Any) -> list:  # type: ignore[type-arg]
    out = []
    for g in range(n):
        out.append(clique(g, "leader", replicas=1, **kw))
        out.append(clique(g, "worker", replicas=2, **kw))
    return out


def services(n: int) -> list[Service]:
    return [
        Service(
            metadata=ObjectMeta(
                name=f"llama-{g}",
                namespace="ns",
                uid=f"svc-{g}",
                owner_references=[
                    OwnerReference(
                        api_version="x",
                        kind="CliqueSet",
                        name="llama",
                        uid="cqs-uid",
                        controller=True,
                    )
                ],
            )
        )
        for g in range(n)
    ]


def template_patched(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(p.name for p in plan.patches if p.patch_type == "json")


def test_new_cliqueset_creates_every_clique_and_service() -> None:
    cqs = cliqueset(replicas=2, startup="InOrder")
    plan = cliqueset_planner.plan(snap(cqs, []))
    cliques = [c for c in plan.creates if c.resource.kind == "Clique"]
    svcs = [c for c in plan.creates if c.resource.kind == "Service"]
    assert sorted(c.name for c in cliques) == [
        "llama-0-leader",
        "llama-0-worker",
        "llama-1-leader",
        "llama-1-worker",
    ]
    assert sorted(s.name for s in svcs) == ["llama-0", "llama-1"]
    worker = next(c for c in cliques if c.name == "llama-1-worker").body
    assert worker["spec"]["startsAfter"] == ["llama-1-leader"]
    assert worker["spec"]["replicas"] == 2 and worker["spec"]["minAvailable"] == 2
    lab = worker["metadata"]["labels"]
    assert lab[labels.LABEL_TEMPLATE_HASH] == "h1"
    assert lab[labels.LABEL_GANG_INDEX] == "1"
    assert lab[labels.LABEL_BUCKET].isdigit()
    ann = worker["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_LEADER_ADDRESS] == "leader-0.llama-1.ns.svc"
    assert ann[labels.ANNOTATION_SUBDOMAIN] == "llama-1"
    svc = next(s for s in svcs if s.name == "llama-0").body
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {
        labels.LABEL_CLIQUESET: "llama",
        labels.LABEL_GANG_INDEX: "0",
    }


def test_steady_state_is_a_no_op() -> None:
    cqs = cliqueset(replicas=2)
    first = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert first.writes == 0
    cqs.status = first.status
    second = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert second.writes == 0 and second.status is None and second.events == []


def test_scale_down_deletes_highest_gangs() -> None:
    cqs = cliqueset(replicas=1)
    plan = cliqueset_planner.plan(snap(cqs, gangs(3), services=services(3)))
    deleted = sorted(d.name for d in plan.deletes)
    assert deleted == [
        "llama-1",
        "llama-1-leader",
        "llama-1-worker",
        "llama-2",
        "llama-2-leader",
        "llama-2-worker",
    ]
    assert plan.creates == []


def test_rolling_update_respects_max_unavailable() -> None:
    cqs = cliqueset(replicas=3, max_unavailable=1)
    hashes = {"leader": "h2", "worker": "h2"}
    plan = cliqueset_planner.plan(snap(cqs, gangs(3), services=services(3), hashes=hashes))
    assert template_patched(plan) == ["llama-0-leader", "llama-0-worker"]
    ops = next(p for p in plan.patches if p.name == "llama-0-leader").patch
    assert {"op": "test", "path": "/metadata/uid", "value": "uid-llama-0-leader"} in ops
    assert not any(o["path"] == "/metadata/resourceVersion" for o in ops)


def test_rollout_waits_while_an_updated_gang_is_not_ready() -> None:
    cqs = cliqueset(replicas=3, max_unavailable=1)
    cl = gangs(3)
    # gang 0 already carries h2 but is not ready yet
    cl[0] = clique(0, "leader", hash_="h2", ready=False)
    cl[1] = clique(0, "worker", replicas=2, hash_="h2", ready=False)
    hashes = {"leader": "h2", "worker": "h2"}
    plan = cliqueset_planner.plan(snap(cqs, cl, services=services(3), hashes=hashes))
    assert template_patched(plan) == []


def test_unavailable_outdated_gang_is_updated_first_for_free() -> None:
    cqs = cliqueset(replicas=3, max_unavailable=1)
    cl = gangs(3)
    cl[2] = clique(1, "leader", ready=False)  # gang 1 is down (and outdated)
    hashes = {"leader": "h2", "worker": "h2"}
    plan = cliqueset_planner.plan(snap(cqs, cl, services=services(3), hashes=hashes))
    assert template_patched(plan) == ["llama-1-leader", "llama-1-worker"]


def test_max_unavailable_two() -> None:
    cqs = cliqueset(replicas=4, max_unavailable=2)
    hashes = {"leader": "h2", "worker": "h2"}
    plan = cliqueset_planner.plan(snap(cqs, gangs(4), services=services(4), hashes=hashes))
    assert {p.name.rsplit("-", 1)[0] for p in plan.patches if p.patch_type == "json"} == {
        "llama-0",
        "llama-1",
    }


def test_recreate_updates_every_gang() -> None:
    cqs = cliqueset(replicas=3, strategy="Recreate")
    hashes = {"leader": "h2", "worker": "h2"}
    plan = cliqueset_planner.plan(snap(cqs, gangs(3), services=services(3), hashes=hashes))
    assert len(template_patched(plan)) == 6


def test_same_hash_rolls_nothing() -> None:
    """A re-order-only edit gives the same canonical hash: nothing is patched."""
    cqs = cliqueset(replicas=2, image="vllm:1")
    plan = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert plan.patches == []


def test_replica_change_resizes_in_place_without_roll() -> None:
    cqs = cliqueset(replicas=2, roles=(("leader", 1), ("worker", 5)))
    plan = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert template_patched(plan) == []
    resized = sorted(p.name for p in plan.patches)
    assert resized == ["llama-0-worker", "llama-1-worker"]
    body = plan.patches[0].patch
    assert body["spec"] == {"replicas": 5, "minAvailable": 5}
    assert body["metadata"]["resourceVersion"] == "5"


def test_hash_algorithm_upgrade_relabels_instead_of_rolling() -> None:
    cqs = cliqueset(replicas=2)
    cl = gangs(2, hash_="oldhash", algorithm=1)
    hashes = {"leader": "newhash", "worker": "newhash"}
    plan = cliqueset_planner.plan(
        snap(
            cqs, cl, services=services(2), hashes=hashes, algorithm=2, rehash=lambda tmpl: "newhash"
        )
    )
    assert template_patched(plan) == []
    assert len(plan.patches) == 4
    meta = plan.patches[0].patch["metadata"]
    assert meta["labels"] == {labels.LABEL_TEMPLATE_HASH: "newhash"}
    assert meta["annotations"][labels.ANNOTATION_PREVIOUS_HASHES] == "oldhash"
    assert meta["annotations"][labels.ANNOTATION_HASH_ALGORITHM] == "2"


def test_hash_algorithm_upgrade_with_a_real_change_rolls() -> None:
    cqs = cliqueset(replicas=1)
    cl = gangs(1, hash_="oldhash", algorithm=1)
    hashes = {"leader": "newhash", "worker": "newhash"}
    plan = cliqueset_planner.plan(
        snap(
            cqs,
            cl,
            services=services(1),
            hashes=hashes,
            algorithm=2,
            rehash=lambda tmpl: "something-else",
        )
    )
    assert template_patched(plan) == ["llama-0-leader", "llama-0-worker"]


def test_startup_cycle_is_invalid_spec_and_creates_nothing() -> None:
    cqs = cliqueset(replicas=2, startup="Explicit")
    cqs.spec.template.cliques[0].starts_after = ["worker"]
    cqs.spec.template.cliques[1].starts_after = ["leader"]
    plan = cliqueset_planner.plan(snap(cqs, []))
    assert plan.writes == 0
    degraded = next(c for c in plan.status.conditions if c.type == "Degraded")
    assert degraded.status == "True" and degraded.reason == "InvalidSpec"
    assert "leader -> worker -> leader" in degraded.message
    assert plan.events and plan.events[0].type == "Warning"


def test_pending_expectations_block_creates_deletes_and_rollouts() -> None:
    cqs = cliqueset(replicas=3)
    hashes = {"leader": "h2", "worker": "h2"}
    plan = cliqueset_planner.plan(
        snap(cqs, gangs(1), services=services(5), hashes=hashes, expectations_satisfied=False)
    )
    assert plan.creates == [] and plan.deletes == [] and template_patched(plan) == []


def test_status_counts_and_conditions() -> None:
    cqs = cliqueset(replicas=3)
    cl = gangs(3)
    cl[5] = clique(2, "worker", replicas=2, ready=False, ready_reason="BelowMinAvailable")
    plan = cliqueset_planner.plan(snap(cqs, cl, services=services(3)))
    st = plan.status
    assert (st.replicas, st.ready_replicas, st.available_replicas) == (3, 2, 2)
    conds = {c.type: c for c in st.conditions}
    assert conds["Available"].status == "False"
    assert conds["Degraded"].status == "True" and "2/worker" in conds["Degraded"].message
    assert st.selector == "cliques.dev/cliqueset=llama"


def _same_plan(a, b) -> bool:  # type: ignore[no-untyped-def]
    return (
        a.status == b.status
        and [(p.name, p.patch) for p in a.patches] == [(p.name, p.patch) for p in b.patches]
        and [c.name for c in a.creates] == [c.name for c in b.creates]
        and [d.name for d in a.deletes] == [d.name for d in b.deletes]
    )


def test_gang_memo_gives_the_plans_of_a_fresh_judgement() -> None:
    """A sequence of plans through one memo equals the same plans judged from scratch,
    while Cliques are replaced (new status, new hash), the template and the replica count
    change, and the set shrinks."""
    memo = cliqueset_planner.GangMemo()
    cl = gangs(4)
    steps: list[tuple[Any, list[Any], dict[str, str]]] = [
        (cliqueset(replicas=4), cl, dict(HASHES)),
        # gang 1's leader drops out of Ready (a new object in the cache)
        (cliqueset(replicas=4), [*cl[:2], clique(1, "leader", ready=False), *cl[3:]], HASHES),
        # a new template: every gang is outdated, one rolls at a time
        (cliqueset(replicas=4), cl, {"leader": "h2", "worker": "h2"}),
        # gang 0 now carries h2 and is Ready
        (
            cliqueset(replicas=4),
            [clique(0, "leader", hash_="h2"), clique(0, "worker", replicas=2, hash_="h2"), *cl[2:]],
            {"leader": "h2", "worker": "h2"},
        ),
        # a resize of the workers (the context changes: nothing may be reused)
        (cliqueset(replicas=4, roles=(("leader", 1), ("worker", 3))), cl, HASHES),
        # scale down to 2 gangs
        (cliqueset(replicas=2), cl, HASHES),
        (cliqueset(replicas=4), cl, HASHES),
    ]
    for cqs, cliques, hashes in steps:
        fresh = cliqueset_planner.plan(snap(cqs, cliques, services=services(4), hashes=hashes))
        memoised = cliqueset_planner.plan(
            snap(cqs, cliques, services=services(4), hashes=hashes, memo=memo)
        )
        assert _same_plan(fresh, memoised)


def test_gang_memo_rejudges_only_changed_gangs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    memo = cliqueset_planner.GangMemo()
    cqs = cliqueset(replicas=5)
    cl = gangs(5)
    judged: list[int] = []
    judge = cliqueset_planner._judge

    def counting(snap_, gang, members, ctx):  # type: ignore[no-untyped-def]
        judged.append(gang)
        return judge(snap_, gang, members, ctx)

    monkeypatch.setattr(cliqueset_planner, "_judge", counting)
    cliqueset_planner.plan(snap(cqs, cl, services=services(5), memo=memo))
    assert judged == [0, 1, 2, 3, 4]
    judged.clear()
    cl[6] = clique(3, "leader", ready=False)  # a new object for gang 3's leader
    plan = cliqueset_planner.plan(snap(cqs, cl, services=services(5), memo=memo))
    assert judged == [3]
    assert plan.status is not None and plan.status.available_replicas == 4
    judged.clear()
    cliqueset_planner.plan(snap(cqs, cl, services=services(5), memo=memo, algorithm=2))
    assert judged == [0, 1, 2, 3, 4]  # another context: everything judged again
