"""`podReadiness: Gang` (`features.gang_ready`): the readiness gate in the pod templates and
the hash, when a gang is whole, the pod status patches that set each pod's
`cliques.dev/gang-ready` condition (and none when it is right already), the operator's own
judgement by container readiness (no InOrder deadlock), and the wake-ups across a gang."""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import PodReadiness
from cliques.api.pod import Pod, PodCondition, ReadinessGate
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.cliqueset import bodies as cliqueset_bodies
from cliques.controllers.cliqueset import template_hash
from cliques.controllers.features import gang_ready
from cliques.kube.resources import PODS

from .planner_fixtures import NOW, clique, cliqueset
from .planner_fixtures import pod as bare_pod
from .test_clique_wakeups import controller, queued

GATE = labels.CONDITION_GANG_READY


def gated(c: Clique) -> Clique:
    """`c` with the gate in its pod template, as the CliqueSet controller makes it."""
    spec = msgspec.structs.replace(
        c.spec, template=dict(gang_ready.add_gate(c.spec.template, PodReadiness.GANG))
    )
    return msgspec.structs.replace(c, spec=spec)


def pod(
    c: Clique,
    index: int,
    *,
    containers: bool = True,
    gate: str = "",
    hash_: str = "h1",
    restarts: str = "",
    has_gate: bool = True,
    **kw: Any,
) -> Pod:
    """A pod of `c` carrying the gate (`has_gate`): ContainersReady as `containers`, its
    gate condition `gate` ("" for none), Ready only when both are True, as a kubelet has
    it."""
    made = bare_pod(c, index, hash_=hash_, **kw)
    conds = [
        PodCondition(type="ContainersReady", status="True" if containers else "False"),
        PodCondition(
            type="Ready",
            status="True" if containers and (gate == "True" or not has_gate) else "False",
        ),
    ]
    if gate:
        conds.append(PodCondition(type=GATE, status=gate))
    tags = {**made.metadata.labels, labels.LABEL_CLIQUESET: "llama"}
    notes = {labels.ANNOTATION_GANG_RESTARTS: restarts} if restarts else {}
    return msgspec.structs.replace(
        made,
        metadata=msgspec.structs.replace(made.metadata, labels=tags, annotations=notes),
        spec=msgspec.structs.replace(
            made.spec,
            readiness_gates=[ReadinessGate(condition_type=GATE)] if has_gate else [],
        ),
        status=msgspec.structs.replace(made.status, conditions=conds),
    )


def gang(workers: int = 2) -> tuple[Clique, Clique]:
    return gated(clique(0, "leader")), gated(clique(0, "worker", replicas=workers))


def by_clique(cliques: tuple[Clique, ...], pods: list[Pod]) -> dict[str, list[Pod]]:
    return {
        c.metadata.name: [p for p in pods if p.metadata.owner_references[0].uid == c.metadata.uid]
        for c in cliques
    }


def whole(cliques: tuple[Clique, ...], pods: list[Pod]) -> bool:
    return clique_planner.gang_whole(list(cliques), by_clique(cliques, pods))


def plan(
    c: Clique,
    pods: list[Pod],
    gang: tuple[Clique, ...] = (),
    others: tuple[Pod, ...] | list[Pod] = (),
) -> Any:
    """The plan of `c` with its `pods`, keeping the gates of the gang `gang` (itself and
    the other Cliques, whose pods are `others`), or of no gang (`gang` empty)."""
    view = None
    if gang:
        view = clique_planner.GangView(tuple(gang), by_clique(tuple(gang), [*pods, *others]))
    return clique_planner.plan(
        CliqueSnapshot(clique=c, pods=pods, now=NOW, template_hash="h1", gang=view)
    )


def gate_patches(p: Any) -> list[tuple[str, str]]:
    return [
        (x.name, x.patch["status"]["conditions"][0]["status"])
        for x in p.patches
        if x.sub == "status"
    ]


# The pod template and the hash


def test_the_gate_is_in_the_templates_and_the_hash_only_for_gang() -> None:
    cqs = cliqueset()
    tmpl = cqs.spec.template.cliques[0]
    plain = cliqueset_bodies.gang_template(cqs, 0, tmpl)
    assert "readinessGates" not in plain["spec"]
    before, _ = template_hash.hashes(cqs, Hasher())
    # the default Pod hashes as a set without the field always did: no roll on upgrade
    assert before["leader"] == Hasher().template_hash(tmpl.template)
    cqs.spec.pod_readiness = PodReadiness.GANG
    with_gate = cliqueset_bodies.gang_template(cqs, 0, tmpl)
    assert with_gate["spec"]["readinessGates"] == [{"conditionType": GATE}]
    assert "readinessGates" not in tmpl.template["spec"]  # the user's template is untouched
    after, _ = template_hash.hashes(cqs, Hasher())
    assert after["leader"] != before["leader"]  # switching rolls the set
    # the Clique's template hashes as the set does (the rehash after an algorithm upgrade)
    assert Hasher().template_hash(dict(with_gate)) == after["leader"]


def test_a_users_own_gates_are_kept_and_the_gate_is_added_once() -> None:
    tmpl = {"spec": {"containers": [], "readinessGates": [{"conditionType": "x.io/warm"}]}}
    out = gang_ready.add_gate(tmpl, PodReadiness.GANG)
    assert out["spec"]["readinessGates"] == [
        {"conditionType": "x.io/warm"},
        {"conditionType": GATE},
    ]
    assert gang_ready.add_gate(out, PodReadiness.GANG) is out
    assert gang_ready.add_gate(tmpl, PodReadiness.POD) is tmpl


# Container readiness, the operator's own judgement


def test_a_gated_pod_is_ready_by_its_containers_and_others_by_ready() -> None:
    leader, _ = gang()
    waiting = pod(leader, 0)  # containers ready, gate not set: not Ready
    assert not waiting.is_ready and waiting.containers_ready and waiting.gang_gated
    assert not pod(leader, 0, containers=False, gate="True").containers_ready
    plain = bare_pod(clique(0, "leader"), 0)  # no gate: Ready is the judgement
    assert plain.containers_ready and not plain.gang_gated
    assert not bare_pod(clique(0, "leader"), 0, ready=False).containers_ready
    assert not pod(leader, 0, deleting=True).containers_ready


def test_in_order_start_reads_container_readiness_no_deadlock() -> None:
    leader, worker = gang()
    # the leader's pod: containers ready, not Ready (its gang is not whole: no workers yet)
    lp = [pod(leader, 0)]
    deps = {leader.metadata.name: leader}
    assert clique_planner.waiting_for(worker, deps, {leader.metadata.name: lp}) == []
    # and the leader's own status reads it ready: the CliqueSet sees it start
    status = plan(leader, lp, (leader, worker)).status
    assert status is not None and status.ready_replicas == 1
    ready = next(c for c in status.conditions if c.type == "Ready")
    assert ready.status == "True"


# Gang whole


def test_a_gang_is_whole_only_with_every_pod_of_every_clique_ready() -> None:
    leader, worker = gang()
    pods = [pod(leader, 0), pod(worker, 0), pod(worker, 1)]
    assert whole((leader, worker), pods)
    assert not whole((leader, worker), pods[:2])  # a worker missing
    assert not whole((leader, worker), [*pods[:2], pod(worker, 1, containers=False)])
    assert not whole((leader, worker), [*pods[:2], pod(worker, 1, deleting=True)])
    assert not whole((), [])
    # a pod whose delete was sent (not in the cache yet) does not count
    assert not clique_planner.gang_whole(
        [leader, worker], by_clique((leader, worker), pods), {"llama-0-worker-1"}
    )


def restarted(c: Clique, n: int) -> Clique:
    meta = msgspec.structs.replace(
        c.metadata, annotations={**c.metadata.annotations, labels.ANNOTATION_GANG_RESTARTS: str(n)}
    )
    return msgspec.structs.replace(c, metadata=meta)


def test_a_pod_of_another_epoch_does_not_count() -> None:
    leader, worker = gang()
    base = [pod(leader, 0), pod(worker, 0)]
    # of the old template hash (a roll under way)
    assert not whole((leader, worker), [*base, pod(worker, 1, hash_="h0")])
    # of an older gang restart: the Cliques record restart 1, the pods restart 0
    lead1, work1 = restarted(leader, 1), restarted(worker, 1)
    old = [pod(lead1, 0), pod(work1, 0), pod(work1, 1)]
    assert not whole((lead1, work1), old)
    new = [pod(lead1, 0, restarts="1"), pod(work1, 0, restarts="1"), pod(work1, 1, restarts="1")]
    assert whole((lead1, work1), new)
    # a Clique not reached by the restart yet: the gang is not whole
    assert not whole((lead1, worker), [new[0], *pods_of(worker)])


def pods_of(c: Clique) -> list[Pod]:
    return [pod(c, i) for i in range(c.spec.replicas)]


# The gate patches, written by the gang's keeper


def test_the_keeper_is_the_first_live_clique_by_name() -> None:
    leader, worker = gang()
    assert clique_planner.keeper([worker, leader]) == leader.metadata.name
    going = msgspec.structs.replace(
        leader, metadata=msgspec.structs.replace(leader.metadata, deletion_timestamp=NOW)
    )
    assert clique_planner.keeper([going, worker]) == worker.metadata.name
    assert clique_planner.keeper([]) == ""


def test_gates_turn_true_when_whole_for_every_pod_of_the_gang_and_never_twice() -> None:
    leader, worker = gang()
    own, others = [pod(leader, 0)], pods_of(worker)
    out = plan(leader, own, (leader, worker), others)
    assert gate_patches(out) == [
        ("llama-0-leader-0", "True"),
        ("llama-0-worker-0", "True"),
        ("llama-0-worker-1", "True"),
    ]
    patch = next(p for p in out.patches if p.sub == "status")
    assert patch.resource == PODS and patch.patch_type == "strategic" and patch.status_neutral
    cond = patch.patch["status"]["conditions"][0]
    assert cond["type"] == GATE and cond["lastTransitionTime"] == NOW
    # the Clique's status is written in the same reconcile: the gate patches are neutral
    assert out.awaited_writes == 0
    # once the cache shows them True: nothing more to write
    done_own = [pod(leader, 0, gate="True")]
    done = [pod(worker, i, gate="True") for i in (0, 1)]
    assert gate_patches(plan(leader, done_own, (leader, worker), done)) == []
    # a Clique that does not keep the gates writes none
    assert gate_patches(plan(worker, others)) == []


def test_gates_turn_false_as_soon_as_the_gang_breaks_only_where_true() -> None:
    leader, worker = gang()
    own = [pod(leader, 0, gate="True")]
    broken = [pod(worker, 0, gate="True", containers=False), pod(worker, 1, gate="True")]
    assert gate_patches(plan(leader, own, (leader, worker), broken)) == [
        ("llama-0-leader-0", "False"),
        ("llama-0-worker-0", "False"),
        ("llama-0-worker-1", "False"),
    ]
    # a pod without the condition, or with it False, is not Ready by it: no write
    quiet = [pod(worker, 0), pod(worker, 1, gate="False", containers=False)]
    assert gate_patches(plan(leader, [pod(leader, 0)], (leader, worker), quiet[:1])) == []
    assert gate_patches(plan(leader, [pod(leader, 0)], (leader, worker), quiet)) == []


def test_no_gate_patch_for_pods_without_the_gate_being_deleted_or_of_another_epoch() -> None:
    c = gated(clique(0, "worker", replicas=3))
    pods = [
        pod(c, 0, has_gate=False),
        pod(c, 1, deleting=True),
        pod(c, 2, hash_="h0", gate="True"),  # an old pod keeps no True gate
    ]
    # (its delete waits for earlier writes to be seen: the old pod is still there)
    view = clique_planner.GangView((c,), {c.metadata.name: pods})
    snap = CliqueSnapshot(
        clique=c, pods=pods, now=NOW, template_hash="h1", gang=view, expectations_satisfied=False
    )
    assert gate_patches(clique_planner.plan(snap)) == [("llama-0-worker-2", "False")]
    # a pod the plan deletes gets no patch
    assert gate_patches(plan(c, pods, (c,))) == []


def test_same_to_planner_sees_container_readiness_not_the_gate_it_writes() -> None:
    leader, _ = gang()
    a = pod(leader, 0)
    assert clique_planner.same_to_planner(a, pod(leader, 0))
    assert clique_planner.same_to_planner(a, pod(leader, 0, gate="True"))
    assert not clique_planner.same_to_planner(a, pod(leader, 0, containers=False))


# Wake-ups across a gang, and the controller's view of it


async def test_a_pod_turning_ready_wakes_the_keeper_of_a_gated_gang() -> None:
    leader, worker = gang()
    ctl = controller(leader, worker)
    starting, ready = pod(worker, 0, containers=False), pod(worker, 0)
    ctl._on_pod("MODIFIED", starting, ready)
    assert await queued(ctl) == {"ns/llama-0-leader", "ns/llama-0-worker"}
    # the keeper's own pod: itself only
    ctl._on_pod("MODIFIED", pod(leader, 0, containers=False), pod(leader, 0))
    assert await queued(ctl) == {"ns/llama-0-leader"}
    # its gate set True by the operator: nothing to plan
    ctl._on_pod("MODIFIED", ready, pod(worker, 0, gate="True"))
    assert await queued(ctl) == set()


async def test_a_pod_of_an_ungated_gang_wakes_no_sibling() -> None:
    leader, worker = clique(0, "leader"), clique(0, "worker", replicas=2)
    ctl = controller(leader, worker)
    ctl._on_pod("MODIFIED", pod(worker, 0, containers=False), pod(worker, 0))
    assert "ns/llama-0-leader" not in await queued(ctl)


def test_the_keeper_reads_the_gang_across_its_cliques() -> None:
    leader, worker = gang()
    ctl = controller(leader, worker)
    for p in (pod(leader, 0), pod(worker, 0)):
        ctl.pods.store.upsert(p)
    assert ctl.snapshot(worker).gang is None  # not the keeper
    assert gate_patches(clique_planner.plan(ctl.snapshot(leader))) == []  # not whole
    ctl.pods.store.upsert(pod(worker, 1))
    # one pod of N turning ready costs at most N gate patches, and none in steady state
    assert len(gate_patches(clique_planner.plan(ctl.snapshot(leader)))) == 3
    for p in (pod(leader, 0, gate="True"), *(pod(worker, i, gate="True") for i in (0, 1))):
        ctl.pods.store.upsert(p)
    assert gate_patches(clique_planner.plan(ctl.snapshot(leader))) == []


async def test_what_wakes_the_keeper_beyond_pod_readiness() -> None:
    leader, worker = gang()
    ctl = controller(leader, worker)
    # a new pod (not ready) makes no gang whole: its own Clique only
    ctl._on_pod("ADDED", None, pod(worker, 0, containers=False))
    assert await queued(ctl) == {"ns/llama-0-worker"}
    # a Clique joining a gang that is not whole: itself only
    ctl._on_clique("ADDED", None, worker)
    assert await queued(ctl) == {"ns/llama-0-worker"}
    # ... one that is whole (its gates up): the keeper too
    ctl.pods.store.upsert(pod(leader, 0, gate="True"))
    ctl._on_clique("ADDED", None, worker)
    assert await queued(ctl) == {"ns/llama-0-worker", "ns/llama-0-leader"}
    # a spec change (replicas) or a Clique gone: the keeper
    grown = msgspec.structs.replace(
        worker,
        metadata=msgspec.structs.replace(worker.metadata, generation=2),
        spec=msgspec.structs.replace(worker.spec, replicas=3),
    )
    ctl._on_clique("MODIFIED", worker, grown)
    assert "ns/llama-0-leader" in await queued(ctl)
    ctl._on_clique("DELETED", worker, worker)
    assert "ns/llama-0-leader" in await queued(ctl)
    # a pod deleted: the keeper
    ctl._on_pod("DELETED", pod(worker, 1), pod(worker, 1))
    assert "ns/llama-0-leader" in await queued(ctl)
