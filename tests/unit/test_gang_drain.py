"""Gang-aware drain, planned (no cluster): which pods a cordoned or NoExecute-tainted node
drains, which gangs are stuck on drained nodes, which move now and which wait for the budget
(`maxUnavailable` against every gang down, surge gangs first where `maxSurge` allows), the
patches that move a gang (its restart count raised and forgiven), the `Moving` condition and
Events, the set's PodDisruptionBudget, and the Node informer's bookkeeping and wake-ups."""

from __future__ import annotations

from typing import Any

import pytest

from cliques import gang_metrics
from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import ObjectMeta, OwnerReference, find_condition
from cliques.api.node import Node, NodeMeta, NodeSpec, Taint
from cliques.api.pdb import LabelSelector, PodDisruptionBudget, PodDisruptionBudgetSpec
from cliques.api.pod import Pod, PodSpec, Toleration
from cliques.api.policies import DrainPolicy, EvictionHold, NodeDrain
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset.snapshot import CliqueSetPlan
from cliques.controllers.features import drain
from cliques.kube.resources import CLIQUES, PDBS

from .planner_fixtures import NOW, clique, cliqueset, gangs, services
from .planner_fixtures import set_snapshot as snap


def node(name: str = "n1", *, cordoned: bool = False, taints: list[Taint] | None = None) -> Node:
    return Node(
        metadata=NodeMeta(name=name, uid=f"uid-{name}", resource_version="1"),
        spec=NodeSpec(unschedulable=cordoned, taints=taints or []),
    )


GONE = Taint(key="maintenance", value="gpu", effect="NoExecute")


# -- which pods a node drains -------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "tolerations", "why"),
    [
        (node(cordoned=True), [], "cordoned"),
        (node(cordoned=True), [Toleration(operator="Exists")], "cordoned"),
        (node(taints=[GONE]), [], "tainted maintenance=gpu:NoExecute"),
        (node(taints=[GONE]), [Toleration(operator="Exists")], ""),
        (node(taints=[GONE]), [Toleration(key="maintenance", operator="Exists")], ""),
        (node(taints=[GONE]), [Toleration(key="maintenance", value="gpu", effect="NoExecute")], ""),
        (
            node(taints=[GONE]),
            [Toleration(key="maintenance", value="cpu")],
            "tainted maintenance=gpu:NoExecute",
        ),
        (
            node(taints=[GONE]),
            [Toleration(operator="Exists", effect="NoSchedule")],
            "tainted maintenance=gpu:NoExecute",
        ),
        # tolerated only for a while: the taint manager evicts it then, so it moves now
        (
            node(taints=[GONE]),
            [Toleration(operator="Exists", toleration_seconds=300)],
            "tainted maintenance=gpu:NoExecute",
        ),
        (node(taints=[Taint(key="x", effect="NoSchedule")]), [], ""),
        # the node lifecycle's taints are a lost node, not a drain
        (node(taints=[Taint(key="node.kubernetes.io/unreachable", effect="NoExecute")]), [], ""),
        (node(), [], ""),
    ],
)
def test_why_a_node_drains_a_pod(n: Node, tolerations: list[Toleration], why: str) -> None:
    assert drain.why_drained(n, tolerations) == why


def test_only_cordoned_and_no_execute_nodes_are_marked() -> None:
    assert drain.marked(node(cordoned=True))
    assert drain.marked(node(taints=[GONE]))
    assert not drain.marked(node())
    assert not drain.marked(node(taints=[Taint(key="x", effect="NoSchedule")]))
    lifecycle = Taint(key="node.kubernetes.io/not-ready", effect="NoExecute")
    assert drain.marked(node(taints=[lifecycle])), "a node that may be lost is kept"


# -- planning ------------------------------------------------------------------------------


def on_node(gang: int, role: str, node_name: str = "n1", *, restarts: str = "0") -> drain.Drained:
    name = labels.clique_name("llama", gang, role)
    return drain.Drained(f"{name}-0", node_name, "cordoned", f"uid-{name}", restarts)


def with_drain(cqs: CliqueSet, **fields: Any) -> CliqueSet:
    import msgspec

    spec = msgspec.structs.replace(cqs.spec, node_drain=NodeDrain(**fields))
    return msgspec.structs.replace(cqs, spec=spec)


def plan(
    cliques: list[Any],
    pods: tuple[drain.Drained, ...],
    *,
    cqs: CliqueSet | None = None,
    budgets: list[PodDisruptionBudget] | None = None,
    served: bool = True,
    **kw: Any,
) -> CliqueSetPlan:
    cqs = cqs if cqs is not None else cliqueset(replicas=4)
    n = max([c.spec.gang_index for c in cliques], default=-1) + 1
    view = drain.View(served=served, pods=pods, budgets=budgets if budgets is not None else [])
    base = snap(cqs, cliques, services=services(n), **kw)
    import dataclasses

    return cliqueset_planner.plan(dataclasses.replace(base, drain=view))


def moved(out: CliqueSetPlan) -> dict[str, dict[str, Any]]:
    return {
        p.name: p.patch["metadata"]["annotations"]
        for p in out.patches
        if p.resource == CLIQUES and p.reason == "GangMove"
    }


def moving_condition(out: CliqueSetPlan) -> Any:
    assert out.status is not None
    return find_condition(out.status.conditions, drain.CONDITION_MOVING)


def test_a_cordon_moves_one_gang_at_a_time_within_max_unavailable() -> None:
    out = plan(gangs(4), (on_node(1, "leader"), on_node(2, "worker"), on_node(2, "leader")))
    marks = {
        labels.ANNOTATION_GANG_RESTARTS: "1",
        labels.ANNOTATION_FORGIVEN_RESTARTS: "1",
        labels.ANNOTATION_MOVED_AT: NOW,
        labels.ANNOTATION_RESTART_NODES: "1:-",  # the new pods do not go back (same_nodes)
    }
    assert moved(out) == {"llama-1-leader": marks, "llama-1-worker": marks}
    patch = next(p for p in out.patches if p.reason == "GangMove")
    assert patch.patch["metadata"]["resourceVersion"] == "5"
    assert patch.expect  # the planner waits until the watch shows the new count
    assert out.moving == [1, 2]
    cond = moving_condition(out)
    assert cond.status == "True" and cond.reason == drain.REASON_NODE_DRAIN
    assert "n1 (cordoned)" in cond.message and "moving 1 now" in cond.message
    assert "2 wait for maxUnavailable" in cond.message
    assert [e.reason for e in out.events if e.reason == drain.EVENT_MOVING] == ["MovingGang"]
    assert "gang 1" in next(e.message for e in out.events if e.reason == "MovingGang")
    assert out.requeue_after == drain.WAIT_REQUEUE


def test_max_unavailable_2_moves_two_gangs() -> None:
    out = plan(
        gangs(4),
        (on_node(1, "leader"), on_node(2, "worker")),
        cqs=cliqueset(replicas=4, max_unavailable=2),
    )
    assert sorted(moved(out)) == [
        "llama-1-leader",
        "llama-1-worker",
        "llama-2-leader",
        "llama-2-worker",
    ]
    assert not out.requeue_after


def test_a_gang_that_is_down_anyway_moves_at_once_and_counts_against_the_budget() -> None:
    cliques = gangs(4)
    cliques[2:4] = [clique(1, "leader", ready=False), clique(1, "worker", replicas=2, ready=False)]
    out = plan(cliques, (on_node(1, "leader"), on_node(3, "leader")))
    # gang 1 is starting (down): it moves, free; gang 3 is available and waits, since gang 1
    # being down spends maxUnavailable 1
    assert sorted(moved(out)) == ["llama-1-leader", "llama-1-worker"]
    assert "3 wait for maxUnavailable" in moving_condition(out).message


def test_another_gang_down_holds_every_move_back() -> None:
    cliques = gangs(4)
    cliques[0:2] = [clique(0, "leader", ready=False), clique(0, "worker", replicas=2, ready=False)]
    out = plan(cliques, (on_node(2, "leader"),))
    assert moved(out) == {}
    assert out.moving == [2]


def test_a_pod_of_an_earlier_restart_is_already_being_replaced() -> None:
    restarted = {labels.ANNOTATION_GANG_RESTARTS: "1"}
    cliques = gangs(4)
    cliques[2:4] = [
        clique(1, "leader", annotations=restarted, ready=False),
        clique(1, "worker", replicas=2, annotations=restarted, ready=False),
    ]
    out = plan(cliques, (on_node(1, "leader", restarts="0"),))
    assert moved(out) == {}
    assert out.moving == []
    assert moving_condition(out) is None  # never said True: nothing to say


def test_the_condition_turns_false_once_no_gang_is_left() -> None:
    first = plan(gangs(4), (on_node(1, "leader"),))
    cqs = cliqueset(replicas=4)
    import msgspec

    assert first.status is not None
    cqs = msgspec.structs.replace(cqs, status=first.status)
    out = plan(gangs(4), (), cqs=cqs)
    cond = moving_condition(out)
    assert cond.status == "False" and cond.reason == drain.REASON_MOVED


def test_a_second_move_raises_the_counts_again_and_keeps_them_forgiven() -> None:
    marks = {labels.ANNOTATION_GANG_RESTARTS: "3", labels.ANNOTATION_FORGIVEN_RESTARTS: "1"}
    cliques = gangs(2)
    cliques[0:2] = [
        clique(0, "leader", annotations=marks),
        clique(0, "worker", replicas=2, annotations=marks),
    ]
    out = plan(cliques, (on_node(0, "worker", restarts="3"),), cqs=cliqueset(replicas=2))
    assert moved(out)["llama-0-worker"] == {
        labels.ANNOTATION_GANG_RESTARTS: "4",
        labels.ANNOTATION_FORGIVEN_RESTARTS: "2",
        labels.ANNOTATION_MOVED_AT: NOW,
        labels.ANNOTATION_RESTART_NODES: "4:-",
    }


def test_cliques_that_disagree_are_levelled_not_moved_again() -> None:
    cliques = gangs(2)
    cliques[0] = clique(0, "leader", annotations={labels.ANNOTATION_GANG_RESTARTS: "1"})
    out = plan(cliques, (on_node(0, "worker", restarts="0"),), cqs=cliqueset(replicas=2))
    assert moved(out) == {"llama-0-worker": {labels.ANNOTATION_GANG_RESTARTS: "1"}}


def test_nothing_moves_while_expectations_are_pending() -> None:
    out = plan(gangs(4), (on_node(1, "leader"),), expectations_satisfied=False)
    assert moved(out) == {}
    assert out.moving == [1]


@pytest.mark.parametrize("served", [True, False])
def test_no_move_with_policy_none_or_where_drains_are_not_served(served: bool) -> None:
    cqs = with_drain(
        cliqueset(replicas=4), policy=DrainPolicy.NONE, hold_evictions=EvictionHold.NONE
    )
    out = plan(gangs(4), (on_node(1, "leader"),), cqs=cqs if served else None, served=served)
    assert moved(out) == {}
    assert out.moving == []


def test_an_outdated_gang_on_a_drained_node_moves_first_and_rolls_later() -> None:
    out = plan(gangs(4), (on_node(0, "leader"),), hashes={"leader": "h2", "worker": "h2"})
    assert sorted(moved(out)) == ["llama-0-leader", "llama-0-worker"]
    # the move spent maxUnavailable: no roll in the same plan, and gang 0 is not rolled
    assert [p.name for p in out.patches if p.patch_type == "json"] == []


# -- surge first ---------------------------------------------------------------------------


def test_with_max_surge_a_surge_gang_comes_first() -> None:
    cqs = cliqueset(replicas=4, max_unavailable=0, max_surge=1)
    out = plan(gangs(4), (on_node(1, "leader"),), cqs=cqs)
    made = sorted({c.body["spec"]["gangIndex"] for c in out.creates if c.resource == CLIQUES})
    assert made == [4]
    assert moved(out) == {}  # the surge gang is not available yet


def test_once_the_surge_gang_is_available_the_gang_moves() -> None:
    cqs = cliqueset(replicas=4, max_unavailable=0, max_surge=1)
    out = plan(gangs(5), (on_node(1, "leader"),), cqs=cqs)
    assert sorted(moved(out)) == ["llama-1-leader", "llama-1-worker"]
    assert not [d for d in out.deletes if d.resource == CLIQUES]  # the surge gang stays


def test_the_surge_gang_goes_once_the_moved_gang_is_available_again() -> None:
    cqs = cliqueset(replicas=4, max_unavailable=0, max_surge=1)
    out = plan(gangs(5), (), cqs=cqs)
    assert sorted(d.name for d in out.deletes if d.resource == CLIQUES) == [
        "llama-4-leader",
        "llama-4-worker",
    ]


# -- the PodDisruptionBudget ---------------------------------------------------------------


def budget(spec: PodDisruptionBudgetSpec, name: str = "llama-gangs") -> PodDisruptionBudget:
    return PodDisruptionBudget(
        metadata=ObjectMeta(
            name=name,
            namespace="ns",
            uid=f"uid-{name}",
            resource_version="9",
            owner_references=[
                OwnerReference(
                    api_version="cliques.dev/v1alpha1",
                    kind="CliqueSet",
                    name="llama",
                    uid="cqs-uid",
                    controller=True,
                )
            ],
        ),
        spec=spec,
    )


RIGHT = PodDisruptionBudgetSpec(
    max_unavailable=0,
    selector=LabelSelector(match_labels={labels.LABEL_CLIQUESET: "llama"}),
    unhealthy_pod_eviction_policy="AlwaysAllow",
)


def test_the_set_gets_a_budget_that_refuses_every_eviction_of_its_ready_pods() -> None:
    out = plan(gangs(2), (), cqs=cliqueset(replicas=2))
    (made,) = [c for c in out.creates if c.resource == PDBS]
    assert made.name == "llama-gangs"
    body = made.body
    assert body["apiVersion"] == "policy/v1" and body["kind"] == "PodDisruptionBudget"
    assert body["spec"] == {
        "maxUnavailable": 0,
        "selector": {"matchLabels": {labels.LABEL_CLIQUESET: "llama"}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }
    assert body["metadata"]["ownerReferences"][0]["uid"] == "cqs-uid"
    assert body["metadata"]["labels"][labels.LABEL_CLIQUESET] == "llama"
    assert labels.LABEL_BUCKET in body["metadata"]["labels"]


def test_a_budget_in_order_gets_no_write_and_one_changed_is_patched_back() -> None:
    out = plan(gangs(2), (), cqs=cliqueset(replicas=2), budgets=[budget(RIGHT)])
    assert not [w for w in (*out.creates, *out.patches, *out.deletes) if w.resource == PDBS]
    import msgspec

    wrong = msgspec.structs.replace(RIGHT, max_unavailable=1)
    out = plan(gangs(2), (), cqs=cliqueset(replicas=2), budgets=[budget(wrong)])
    (patch,) = [p for p in out.patches if p.resource == PDBS]
    assert patch.patch["spec"]["maxUnavailable"] == 0
    assert patch.patch["metadata"]["resourceVersion"] == "9"


@pytest.mark.parametrize(
    "fields",
    [
        {"hold_evictions": EvictionHold.NONE},
        {"policy": DrainPolicy.NONE, "hold_evictions": EvictionHold.NONE},
    ],
)
def test_a_set_that_holds_no_evictions_has_its_budget_deleted(fields: dict[str, Any]) -> None:
    cqs = with_drain(cliqueset(replicas=2), **fields)
    out = plan(gangs(2), (), cqs=cqs, budgets=[budget(RIGHT)])
    assert [d.name for d in out.deletes if d.resource == PDBS] == ["llama-gangs"]
    assert not [c for c in out.creates if c.resource == PDBS]


def test_no_budget_where_drains_are_not_served() -> None:
    out = plan(gangs(2), (), cqs=cliqueset(replicas=2), served=False)
    assert not [c for c in out.creates if c.resource == PDBS]


# -- the Node informer's bookkeeping -------------------------------------------------------


class FakeStore:
    def __init__(self, by_node: dict[str, list[Any]] | None = None) -> None:
        self.by_node = by_node or {}

    def by_index(self, index: str, key: str) -> list[Any]:
        return list(self.by_node.get(key, [])) if index in ("node", "controller") else []


class FakeInformer:
    def __init__(self, store: FakeStore | None = None) -> None:
        self.store = store or FakeStore()
        self.handlers: list[Any] = []

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)

    def emit(self, kind: str, old: Any, new: Any) -> None:
        for h in self.handlers:
            h(kind, old, new)


def a_pod(name: str, node_name: str, *, cliqueset_: str = "llama", restarts: str = "2") -> Pod:
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace="ns",
            labels={labels.LABEL_CLIQUESET: cliqueset_},
            annotations={labels.ANNOTATION_GANG_RESTARTS: restarts},
            owner_references=[
                OwnerReference(
                    api_version="cliques.dev/v1alpha1",
                    kind="Clique",
                    name="c",
                    uid="uid-c",
                    controller=True,
                )
            ],
        ),
        spec=PodSpec(node_name=node_name),
    )


def test_the_view_holds_the_sets_pods_on_marked_nodes_only() -> None:
    pods = {
        "n1": [
            a_pod("llama-0-leader-0", "n1"),
            a_pod("other-0-leader-0", "n1", cliqueset_="other"),
        ],
        "n2": [a_pod("llama-1-leader-0", "n2")],
    }
    nodes = FakeInformer()
    informers = drain.Informers(nodes, FakeInformer(FakeStore(pods)), FakeInformer())  # type: ignore[arg-type]
    cqs = cliqueset()
    assert informers.view(cqs, "ns/cqs-uid").pods == ()
    nodes.emit("ADDED", None, node("n1", cordoned=True))
    nodes.emit("ADDED", None, node("n2"))
    (one,) = informers.view(cqs, "ns/cqs-uid").pods
    assert one == drain.Drained("llama-0-leader-0", "n1", "cordoned", "uid-c", "2")
    nodes.emit("MODIFIED", node("n1", cordoned=True), node("n1"))  # uncordoned
    assert informers.view(cqs, "ns/cqs-uid").pods == ()
    assert drain.sets_on(pods["n1"]) == {"ns/llama", "ns/other"}


def test_a_node_change_matters_only_when_its_cordon_or_taints_change() -> None:
    assert drain.changed(None, node())
    assert not drain.changed(node(), node())
    assert drain.changed(node(), node(cordoned=True))
    assert drain.changed(node(), node(taints=[GONE]))


def test_the_node_decodes_only_its_name_cordon_and_taints() -> None:
    import msgspec

    raw = (
        b'{"metadata":{"name":"n1","uid":"u","resourceVersion":"7","labels":{"a":"b"},'
        b'"annotations":{"x":"y"}},"spec":{"unschedulable":true,"taints":[{"key":"k",'
        b'"effect":"NoExecute","timeAdded":"2026-01-01T00:00:00Z"}]},'
        b'"status":{"capacity":{"pods":"2"},"images":[{"names":["a"]}]}}'
    )
    n = msgspec.json.decode(raw, type=Node)
    assert n.metadata.name == "n1" and n.metadata.labels == {}
    assert n.spec.unschedulable and n.spec.taints == [
        Taint(key="k", effect="NoExecute", time_added="2026-01-01T00:00:00Z")
    ]


# -- the moving gauge ----------------------------------------------------------------------


def test_the_moving_gauge_counts_the_gangs_on_drained_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cliques.operator import health

    monkeypatch.delenv(gang_metrics.MULTIPROC_ENV, raising=False)
    table = gang_metrics.SetTable()
    try:
        table.observe(
            "ns", "drained", desired=4, gangs={}, restarting=0, failed=0, queued=0, moving=2
        )
        text = health.render_metrics(lambda: True).decode()
        line = 'cliques_cliqueset_gangs_moving{cliqueset="drained",namespace="ns"} 2.0'
        assert line in text
    finally:
        table.close()


# -- the new pods wait a little -------------------------------------------------------------


def test_a_moved_gang_makes_its_pods_again_15_seconds_after_the_move() -> None:
    from cliques.controllers.clique import planner as clique_planner
    from cliques.controllers.clique.planner import CliqueSnapshot

    moved_at = {labels.ANNOTATION_MOVED_AT: NOW, labels.ANNOTATION_GANG_RESTARTS: "1"}
    cq = clique(0, "worker", replicas=2, annotations=moved_at)
    assert drain.hold(cq, NOW) == drain.MOVE_HOLD
    assert drain.hold(cq, "2026-11-22T08:00:04Z") == 11.0
    assert drain.hold(cq, "2026-11-22T08:00:15Z") == 0.0
    assert drain.hold(clique(0, "worker"), NOW) == 0.0

    def at(now: str) -> Any:
        return clique_planner.plan(CliqueSnapshot(clique=cq, pods=[], template_hash="h1", now=now))

    held = at("2026-11-22T08:00:04Z")
    assert held.creates == [] and held.requeue_after == 11.0
    made = at("2026-11-22T08:00:16Z")
    assert sorted(c.name for c in made.creates) == ["llama-0-worker-0", "llama-0-worker-1"]


# -- the controller's wake-ups -------------------------------------------------------------


class Recorded:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def add(self, key: str) -> None:
        self.keys.append(key)


def test_a_cordon_wakes_only_the_sets_with_pods_on_the_node() -> None:
    from cliques.controllers.base.revision import Hasher
    from cliques.controllers.cliqueset.controller import CliqueSetController, SetInformers
    from cliques.kube import store
    from cliques.kube.expectations import Expectations
    from cliques.kube.informer import Informer
    from cliques.kube.resources import CLIQUES, CLIQUESETS, NODES, PODS, SERVICES

    from .test_controller_forget import Quiet

    client: Any = None
    owned = {"controller": store.by_controller}
    pods: Informer[Pod] = Informer(client, PODS, Pod, indexers={**owned, "node": drain.by_node})
    nodes: Informer[Node] = Informer(client, NODES, Node)
    budgets: Informer[PodDisruptionBudget] = Informer(
        client, PDBS, PodDisruptionBudget, indexers=owned
    )
    feature = drain.Informers(nodes, pods, budgets)
    informers = SetInformers(
        Informer(client, CLIQUESETS, CliqueSet),
        Informer(client, CLIQUES, Any, indexers=owned),  # type: ignore[arg-type]
        Informer(client, SERVICES, Any, indexers=owned),  # type: ignore[arg-type]
        drain=feature,
    )
    exp = Expectations("cliqueset")
    ctl = CliqueSetController(informers, Quiet(client, exp, None), exp, Hasher())
    queue = Recorded()
    ctl.queue = queue  # type: ignore[assignment]
    pods.store.upsert(a_pod("llama-0-leader-0", "n1"))
    pods.store.upsert(a_pod("other-0-leader-0", "n2", cliqueset_="other"))

    ctl._on_node("MODIFIED", node("n1"), node("n1", cordoned=True))
    assert queue.keys == ["ns/llama"]
    ctl._on_node("MODIFIED", node("n1", cordoned=True), node("n1", cordoned=True))
    ctl._on_node("MODIFIED", node("n3"), node("n3", cordoned=True))  # none of our pods there
    assert queue.keys == ["ns/llama"]  # a heartbeat or an empty node wakes no set
    ctl._on_node("MODIFIED", node("n2"), node("n2", taints=[GONE]))
    assert queue.keys == ["ns/llama", "ns/other"]


# -- a lost node ---------------------------------------------------------------------------

UNREACHABLE = "node.kubernetes.io/unreachable"


def lost_taint(added: str, key: str = UNREACHABLE) -> Taint:
    return Taint(key=key, effect="NoExecute", time_added=added)


@pytest.mark.parametrize(
    ("tolerations", "why"),
    [
        ([], "unreachable since 2026-11-22T07:59:00Z"),
        # the default toleration (300 s) only delays the taint manager: it still counts
        (
            [Toleration(key=UNREACHABLE, operator="Exists", toleration_seconds=300)],
            "unreachable since 2026-11-22T07:59:00Z",
        ),
        ([Toleration(key=UNREACHABLE, operator="Exists")], ""),  # tolerated for good
        ([Toleration(operator="Exists")], ""),
    ],
)
def test_a_pod_on_a_node_that_may_be_lost(tolerations: list[Toleration], why: str) -> None:
    n = node(taints=[lost_taint("2026-11-22T07:59:00Z")])
    assert drain.why_drained(n, tolerations) == ""  # no drain
    assert drain.lost(n, tolerations) == (why, "2026-11-22T07:59:00Z" if why else "")


def lost_pod(gang: int, since: str) -> drain.Drained:
    name = labels.clique_name("llama", gang, "leader")
    return drain.Drained(
        f"{name}-0", "n1", f"unreachable since {since}", f"uid-{name}", "0", lost_since=since
    )


def test_a_lost_node_moves_its_gangs_once_the_bound_is_past() -> None:
    # NOW is 08:00:00; the default bound is 60 s
    early = plan(gangs(4), (lost_pod(1, "2026-11-22T07:59:40Z"),))
    assert moved(early) == {}
    assert early.requeue_after == pytest.approx(40.0)  # looked at again when it comes due
    late = plan(gangs(4), (lost_pod(1, "2026-11-22T07:58:30Z"),))
    assert set(moved(late)) == {"llama-1-leader", "llama-1-worker"}
    # off a lost node alone, the new pods are not held back (no drain evicts them by
    # name there): no moved-at, and an earlier one is removed
    assert all(a[labels.ANNOTATION_MOVED_AT] is None for a in moved(late).values())
    assert drain.only_lost(("n1",), {"n1": "unreachable since x"})
    assert not drain.only_lost(("n1", "n2"), {"n1": "unreachable since x", "n2": "cordoned"})
    cond = moving_condition(late)
    assert cond.status == "True"
    assert "n1 (unreachable since 2026-11-22T07:58:30Z)" in cond.message
    assert drain.LOST_HINT in cond.message


def test_the_lost_node_bound_is_the_sets() -> None:
    cqs = with_drain(cliqueset(replicas=4), lost_node_seconds=10)
    out = plan(gangs(4), (lost_pod(1, "2026-11-22T07:59:40Z"),), cqs=cqs)
    assert set(moved(out)) == {"llama-1-leader", "llama-1-worker"}
    off = with_drain(cliqueset(replicas=4), policy=DrainPolicy.NONE)
    out = plan(gangs(4), (lost_pod(1, "2026-11-22T07:50:00Z"),), cqs=off)
    assert moved(out) == {} and not out.requeue_after


def test_a_lost_node_without_a_time_is_left_to_the_taint_manager() -> None:
    out = plan(gangs(4), (lost_pod(1, "not a time"),))
    assert moved(out) == {}


def test_gangs_a_lost_node_broke_do_not_hold_each_others_moves_without_a_failure_policy() -> None:
    # Without failurePolicy RecreateGang no gang records that it was available whole, so
    # a broken gang (BelowMinAvailable) must count as broken by the world, not as one the
    # operator has down: else two gangs the lost node broke hold each other's moves back
    # for good (maxUnavailable 1).
    cliques = gangs(4)
    cliques[2:6] = [
        clique(g, role, replicas=n, ready=False, ready_reason="BelowMinAvailable")
        for g in (1, 2)
        for role, n in (("leader", 1), ("worker", 2))
    ]
    cqs = cliqueset(replicas=4)
    assert cqs.spec.failure_policy.restart_policy != "RecreateGang"
    out = plan(cliques, (lost_pod(1, "2026-11-22T07:58:30Z"), lost_pod(2, "2026-11-22T07:58:30Z")))
    assert set(moved(out)) == {"llama-1-leader", "llama-1-worker"}
    assert "2 wait for maxUnavailable" in moving_condition(out).message
