"""Table tests of the Clique planner: creates, deletes, re-labels, gating, status."""

from __future__ import annotations

import msgspec

from cliques.api import labels
from cliques.api.clique import CliqueStatus
from cliques.api.meta import find_condition
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique import status as clique_status
from cliques.controllers.clique.planner import CliqueSnapshot

from .planner_fixtures import NOW, clique, pod


def snap(c, pods, **kw) -> CliqueSnapshot:  # type: ignore[no-untyped-def]
    kw.setdefault("template_hash", "h1")
    return CliqueSnapshot(clique=c, pods=pods, now=NOW, **kw)


def names(actions) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.name for a in actions]


def test_fresh_clique_creates_every_index_with_identity() -> None:
    c = clique(0, "worker", replicas=3, ready=False)
    c.status = None
    plan = clique_planner.plan(snap(c, []))
    assert names(plan.creates) == ["llama-0-worker-0", "llama-0-worker-1", "llama-0-worker-2"]
    body = plan.creates[1].body
    meta = body["metadata"]
    assert meta["labels"][labels.LABEL_POD_INDEX] == "1"
    assert meta["labels"][labels.LABEL_TEMPLATE_HASH] == "h1"
    assert meta["labels"][labels.LABEL_BUCKET] == "7"
    assert meta["labels"]["app"] == "x"
    assert meta["ownerReferences"][0]["uid"] == c.metadata.uid
    assert meta["ownerReferences"][0]["controller"] is True
    spec = body["spec"]
    assert spec["hostname"] == "worker-1"
    assert spec["subdomain"] == "llama-0"
    env = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
    assert env == {
        "CLIQUES_SET": "llama",
        "CLIQUES_GANG_INDEX": "0",
        "CLIQUES_CLIQUE": "worker",
        "CLIQUES_POD_INDEX": "1",
        "CLIQUES_CLIQUE_SIZE": "3",
        "CLIQUES_LEADER_ADDRESS": "leader-0.llama-0.ns.svc",
    }
    # the Clique's template was not mutated by building pods
    assert "env" not in c.spec.template["spec"]["containers"][0]
    assert all(a.owner_uid == c.metadata.uid for a in plan.creates)


def test_only_missing_indices_are_created() -> None:
    c = clique(0, "worker", replicas=3)
    plan = clique_planner.plan(snap(c, [pod(c, 0), pod(c, 2)]))
    assert names(plan.creates) == ["llama-0-worker-1"]
    assert plan.deletes == []


def test_scale_down_removes_highest_first() -> None:
    c = clique(0, "worker", replicas=2)
    plan = clique_planner.plan(snap(c, [pod(c, i) for i in range(4)]))
    assert names(plan.deletes) == ["llama-0-worker-3", "llama-0-worker-2"]
    assert {d.reason for d in plan.deletes} == {"ScaleDown"}
    assert plan.creates == []


def test_terminating_pod_holds_its_index() -> None:
    c = clique(0, "worker", replicas=2)
    plan = clique_planner.plan(snap(c, [pod(c, 0), pod(c, 1, deleting=True)]))
    assert plan.creates == [] and plan.deletes == []


def test_lost_pod_recreated_at_its_index() -> None:
    c = clique(0, "worker", replicas=4)
    pods = [pod(c, i) for i in (0, 1, 3)]
    plan = clique_planner.plan(snap(c, pods))
    assert names(plan.creates) == ["llama-0-worker-2"]


def test_pending_expectations_block_creates_and_deletes() -> None:
    c = clique(0, "worker", replicas=2)
    plan = clique_planner.plan(snap(c, [pod(c, 5)], expectations_satisfied=False))
    assert plan.creates == [] and plan.deletes == []


def test_outdated_pods_deleted_and_previous_hash_pods_relabelled() -> None:
    c = clique(0, "worker", replicas=3, annotations={labels.ANNOTATION_PREVIOUS_HASHES: "old1"})
    pods = [pod(c, 0, hash_="h1"), pod(c, 1, hash_="old1"), pod(c, 2, hash_="stale")]
    plan = clique_planner.plan(snap(c, pods))
    assert names(plan.deletes) == ["llama-0-worker-2"]
    assert plan.deletes[0].reason == "TemplateChanged"
    assert plan.deletes[0].uid == "pod-uid-2"
    assert names(plan.patches) == ["llama-0-worker-1"]
    patch = plan.patches[0].patch
    assert patch["metadata"]["labels"] == {labels.LABEL_TEMPLATE_HASH: "h1"}


def test_finished_pod_is_replaced() -> None:
    c = clique(0, "worker", replicas=1)
    plan = clique_planner.plan(snap(c, [pod(c, 0, phase="Failed", ready=False)]))
    assert names(plan.deletes) == ["llama-0-worker-0"]
    assert plan.deletes[0].reason == "PodFinished"


def test_gated_until_dependencies_ready() -> None:
    c = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    c.status = None
    plan = clique_planner.plan(snap(c, [], waiting_for=["llama-0-leader"]))
    assert plan.creates == []
    started = find_condition(plan.status.conditions, "Started")
    assert started is not None and started.status == "False"
    assert "llama-0-leader" in started.message
    # once the dependency is Ready, pods are created
    plan = clique_planner.plan(snap(c, [], waiting_for=[]))
    assert len(plan.creates) == 2


def test_started_clique_recreates_lost_pods_even_if_dependency_is_down() -> None:
    c = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    plan = clique_planner.plan(snap(c, [pod(c, 0)], waiting_for=["llama-0-leader"]))
    assert names(plan.creates) == ["llama-0-worker-1"]


def test_status_not_rewritten_when_nothing_changed() -> None:
    c = clique(0, "worker", replicas=2)
    c.status = None
    pods = [pod(c, 0), pod(c, 1)]
    first = clique_planner.plan(snap(c, pods))
    assert isinstance(first.status, CliqueStatus)
    assert first.status.ready_replicas == 2 and first.status.updated_replicas == 2
    c.status = first.status
    second = clique_planner.plan(snap(c, pods))
    assert second.status is None, "a no-op reconcile must not write status"


def test_ready_clique_losing_a_pod_is_below_min_available() -> None:
    c = clique(0, "worker", replicas=2)
    pods = [pod(c, 0), pod(c, 1, ready=False)]
    plan = clique_planner.plan(snap(c, pods))
    ready = find_condition(plan.status.conditions, "Ready")
    assert ready is not None and ready.status == "False"
    assert ready.reason == clique_status.REASON_BELOW_MIN


def test_starting_clique_is_not_below_min_available() -> None:
    c = clique(0, "worker", replicas=2, ready=False)
    plan = clique_planner.plan(snap(c, [pod(c, 0, ready=False)]))
    ready = find_condition(plan.status.conditions, "Ready")
    assert ready is not None and ready.reason == "Starting"


def test_same_to_planner_ignores_binding_but_not_readiness_or_deletion() -> None:
    import msgspec

    from cliques.api.pod import PodCondition, PodSpec

    c = clique(0, "leader")
    base = pod(c, 0, ready=False)
    bound = msgspec.structs.replace(base, spec=PodSpec(node_name="kwok-node-1"))
    assert clique_planner.same_to_planner(base, bound)
    ready = msgspec.structs.replace(
        base,
        status=msgspec.structs.replace(
            base.status, conditions=[PodCondition(type="Ready", status="True")]
        ),
    )
    assert not clique_planner.same_to_planner(base, ready)
    deleting = pod(c, 0, ready=False, deleting=True)
    assert not clique_planner.same_to_planner(base, deleting)
    finished = pod(c, 0, ready=False, phase="Succeeded")
    assert not clique_planner.same_to_planner(base, finished)
    relabelled = pod(c, 0, ready=False, hash_="h2")
    assert not clique_planner.same_to_planner(base, relabelled)


def test_progress_only_for_pods_on_their_way_to_ready() -> None:
    c = clique(0, "worker", replicas=2, ready=False)
    c.status = None
    # first status of a started Clique whose pods exist but are not Ready: progress
    first = clique_planner.plan(snap(c, [pod(c, 0, ready=False), pod(c, 1, ready=False)]))
    assert first.status is not None
    assert clique_planner.progress_only(None, first.status)
    c.status = first.status
    # one pod Ready, still below minAvailable: more progress
    more = clique_planner.plan(snap(c, [pod(c, 0), pod(c, 1, ready=False)]))
    assert more.status is not None and more.status.ready_replicas == 1
    assert clique_planner.progress_only(c.status, more.status)
    # both Ready: the condition turns, which is news
    done = clique_planner.plan(snap(c, [pod(c, 0), pod(c, 1)]))
    assert done.status is not None
    assert not clique_planner.progress_only(c.status, done.status)


def test_a_new_templates_first_status_is_progress_and_its_ready_news() -> None:
    # A Ready Clique whose template changes: its first status of the new template (Updating)
    # may wait, since nobody takes the old template's status for the new one's.
    c = clique(0, "worker", replicas=2)
    assert c.status is not None and c.status.template_hash == "h1"
    updating = clique_planner.plan(snap(c, [pod(c, 0), pod(c, 1)], template_hash="h2"))
    assert updating.status is not None and updating.status.template_hash == "h2"
    ready = find_condition(updating.status.conditions, "Ready")
    assert ready is not None and ready.reason == "Updating"
    assert clique_planner.progress_only(c.status, updating.status)
    relabelled = msgspec.structs.replace(
        c,
        metadata=msgspec.structs.replace(
            c.metadata, labels={**c.metadata.labels, "cliques.dev/template-hash": "h2"}
        ),
    )
    assert not clique_planner.status_current(relabelled), "the held status of h1 is not h2's"
    # a Starting Clique whose template changes: the same
    s = clique(0, "worker", replicas=2, ready=False)
    again = clique_planner.plan(snap(s, [pod(s, 0, ready=False)], template_hash="h2"))
    assert again.status is not None
    assert clique_planner.progress_only(s.status, again.status)
    # the new template's pods Ready: news
    c.status = updating.status
    done = clique_planner.plan(
        snap(c, [pod(c, 0, hash_="h2"), pod(c, 1, hash_="h2")], template_hash="h2")
    )
    assert done.status is not None
    assert not clique_planner.progress_only(c.status, done.status)


def test_news_is_never_progress_only() -> None:
    # a Ready Clique losing a pod (BelowMinAvailable) is news
    c = clique(0, "worker", replicas=2)
    lost = clique_planner.plan(snap(c, [pod(c, 0), pod(c, 1, ready=False)]))
    assert lost.status is not None
    assert not clique_planner.progress_only(c.status, lost.status)
    # a gated Clique (Started=False) is news, the first status included
    g = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    g.status = None
    gated = clique_planner.plan(snap(g, [], waiting_for=["llama-0-leader"]))
    assert gated.status is not None
    assert not clique_planner.progress_only(None, gated.status)
    # fewer ready pods while not Ready: news too
    one = clique(0, "worker", replicas=3, ready=False)
    one.status = msgspec.structs.replace(one.status, ready_replicas=2)
    fewer = clique_planner.plan(snap(one, [pod(one, 0), pod(one, 1, ready=False)]))
    assert fewer.status is not None and fewer.status.ready_replicas == 1
    assert not clique_planner.progress_only(one.status, fewer.status)
