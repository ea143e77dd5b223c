"""Gangs admitted by Kueue, planned: the pod group each gang's pods carry (names, sizes,
roles), the revision that makes any change of a queued set a new group, what the set says
of each gang (Queued while a pod is gated, Admitted, Evicted, with Kueue's message), and
that a set whose queue does not exist, or whose cluster has no Kueue, creates nothing."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.api.clique import Clique, CliqueStatus
from cliques.api.cliqueset import CliqueSet
from cliques.api.kueue import KueueCondition, KueueWorkload, KueueWorkloadStatus
from cliques.api.meta import ObjectMeta
from cliques.api.pod import Pod, PodSpec, SchedulingGate
from cliques.controllers.clique.planner import same_to_planner
from cliques.controllers.cliqueset import bodies as set_bodies
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import kueue
from tests.unit.planner_fixtures import HASHES, cliqueset, gangs, set_snapshot


def queued(cqs: CliqueSet, queue: str = "team-a", priority: str = "") -> CliqueSet:
    extra = {kueue.QUEUE_LABEL: queue}
    if priority:
        extra[kueue.PRIORITY_LABEL] = priority
    meta = msgspec.structs.replace(cqs.metadata, labels={**cqs.metadata.labels, **extra})
    return msgspec.structs.replace(cqs, metadata=meta)


def with_replicas(cqs: CliqueSet, role: str, n: int) -> CliqueSet:
    cliques = [
        msgspec.structs.replace(c, replicas=n) if c.name == role else c
        for c in cqs.spec.template.cliques
    ]
    spec = msgspec.structs.replace(
        cqs.spec, template=msgspec.structs.replace(cqs.spec.template, cliques=cliques)
    )
    return msgspec.structs.replace(cqs, spec=spec)


def test_only_a_labelled_set_is_queued() -> None:
    assert kueue.queue_of(cliqueset()) is None
    assert kueue.queue_of(queued(cliqueset(), priority="high")) == kueue.Queue("team-a", "high")


def test_every_pod_of_a_gang_carries_its_group() -> None:
    cqs = queued(cliqueset(replicas=2), priority="high")
    tmpl = cqs.spec.template.cliques[1]
    body = set_bodies.gang_template(cqs, 1, tmpl, kueue_revision="rev0000001")
    meta = body["metadata"]
    assert meta["labels"][kueue.QUEUE_LABEL] == "team-a"
    assert meta["labels"][kueue.PRIORITY_LABEL] == "high"
    assert meta["labels"][kueue.GROUP_LABEL] == "llama-1-rev0000001"
    assert meta["annotations"][kueue.TOTAL_ANNOTATION] == str(kueue.gang_size(cqs))
    assert meta["annotations"][kueue.SERVING_ANNOTATION] == "true"
    assert meta["annotations"][kueue.ROLE_ANNOTATION] == tmpl.name
    assert meta["annotations"][kueue.REVISION_ANNOTATION] == "rev0000001"
    # the revision annotation alone survives `unresolve`, as `hash_basis` adds it
    plain = set_bodies.gang_template(cqs, 1, tmpl)
    assert kueue.unresolve(body) == kueue.hash_basis(plain, "rev0000001")
    # a set Kueue does not queue: nothing added
    assert set_bodies.gang_template(cliqueset(), 1, tmpl, kueue_revision="x") == plain


def test_a_group_name_is_a_label_value() -> None:
    name = kueue.group_name("x" * 80, 12345, "abcdefghij")
    assert len(name) <= 63 and name.endswith("-12345-abcdefghij")
    assert kueue.group_name("a-b", 0, "r") == "a-b-0-r"


def test_two_sets_sharing_their_first_50_characters_get_two_groups() -> None:
    """Two 60-character set names that share 50 and are cut: each group name carries the
    hash of its set, so Kueue never sees one group of both sets' pods; a name that fits
    is kept as it always was, and a cut one is never a kept one (it is 63 long)."""
    rev = "abcdefghij"
    first, second = "a" * 50 + "-first-set", "a" * 50 + "-other-set"
    assert len(first) == len(second) == 60
    one, two = kueue.group_name(first, 3, rev), kueue.group_name(second, 3, rev)
    assert one != two
    assert len(one) == len(two) == 63 and one.endswith("-3-abcdefghij")
    assert kueue.group_names(first, 3, rev) == (one, f"{first[:50]}-3-{rev}")
    assert kueue.group_names(second, 3, rev)[1] == kueue.group_names(first, 3, rev)[1]
    assert kueue.group_names("llama", 3, rev) == ("llama-3-abcdefghij",)
    assert kueue.group_name("b" * 49, 3, rev) == f"{'b' * 49}-3-{rev}"  # 62: kept as is


def test_the_revision_covers_the_queue_the_templates_and_the_sizes() -> None:
    cqs = queued(cliqueset())
    base = kueue.revision(cqs, HASHES)
    assert kueue.revision(queued(cliqueset()), dict(HASHES)) == base
    assert kueue.revision(queued(cliqueset(), queue="team-b"), HASHES) != base
    assert kueue.revision(queued(cliqueset(), priority="high"), HASHES) != base
    assert kueue.revision(cqs, {**HASHES, "worker": "other"}) != base
    assert kueue.revision(with_replicas(cqs, "worker", 3), HASHES) != base
    assert len(base) == 10


def workload(*conds: tuple[str, str, str, str]) -> KueueWorkload:
    return KueueWorkload(
        metadata=ObjectMeta(name="w"),
        status=KueueWorkloadStatus(
            conditions=[
                KueueCondition(type=t, status=s, reason=r, message=m) for t, s, r, m in conds
            ]
        ),
    )


QUOTA = "couldn't assign flavors to pod set leader: insufficient quota for cpu in flavor default"


def test_gang_states_come_from_the_gates_and_the_workloads() -> None:
    pending = workload(("QuotaReserved", "False", "Pending", QUOTA))
    admitted = workload(
        ("QuotaReserved", "True", "QuotaReserved", ""), ("Admitted", "True", "Admitted", "")
    )
    evicted = workload(("Evicted", "True", "Preempted", "Preempted to accommodate a workload"))
    states = kueue.gang_states(
        range(4), {0: 2, 1: 0, 2: 3, 3: 0}, {0: pending, 1: admitted, 2: evicted}
    )
    assert [(s.gang, s.state, s.reason) for s in states] == [
        (0, "Queued", "Pending"),
        (1, "Admitted", ""),
        (2, "Evicted", "Preempted"),
        (3, "Admitted", ""),  # no pod gated: admitted, whatever its Workload was not seen
    ]
    assert states[0].message == QUOTA
    status, reason, message = kueue.verdict(kueue.Queue("team-a"), states)
    assert (status, reason) == ("False", "Evicted")
    assert "2 of 4 gang(s) not admitted" in message and "gang 2 evicted (Preempted)" in message
    status, reason, message = kueue.verdict(kueue.Queue("team-a"), states[1:2])
    assert (status, reason) == ("True", "AllGangsAdmitted")


def gated_pod(gates: list[str]) -> Pod:
    return Pod(spec=PodSpec(scheduling_gates=[SchedulingGate(name=g) for g in gates]))


def test_kueue_lifting_its_gate_wakes_the_clique() -> None:
    assert not same_to_planner(gated_pod([kueue.GATE]), gated_pod([]))


def plan(cqs: CliqueSet, cliques: list[Clique], **kw: Any) -> cliqueset_planner.CliqueSetPlan:
    kw.setdefault("kueue_revision", "rev0000001")
    return cliqueset_planner.plan(set_snapshot(cqs, cliques, **kw))


@pytest.mark.parametrize(
    ("served", "queues", "reason"),
    [
        (False, frozenset({"team-a"}), "KueueNotInstalled"),
        (True, frozenset({"other"}), "LocalQueueNotFound"),
    ],
)
def test_a_set_kueue_cannot_admit_creates_no_clique(
    served: bool, queues: frozenset[str], reason: str
) -> None:
    out = plan(queued(cliqueset(replicas=2)), [], kueue_served=served, local_queues=queues)
    assert not [c for c in out.creates if c.resource.plural == "cliques"]
    assert out.status is not None
    cond = next(c for c in out.status.conditions if c.type == "Admitted")
    assert (cond.status, cond.reason) == ("False", reason)
    assert "no pod is created" in cond.message
    # with the queue there, the gangs' Cliques are made, each template carrying the group
    out = plan(queued(cliqueset(replicas=2)), [], kueue_served=True, local_queues={"team-a"})
    made = [c for c in out.creates if c.resource.plural == "cliques"]
    assert made
    labels_ = made[0].body["spec"]["template"]["metadata"]["labels"]
    assert labels_[kueue.GROUP_LABEL].endswith("-rev0000001")


def test_the_set_lists_gangs_that_wait() -> None:
    cqs = queued(cliqueset(replicas=2))
    live = gangs(2)
    waiting = [
        msgspec.structs.replace(
            c, status=msgspec.structs.replace(c.status or CliqueStatus(), queued_replicas=1)
        )
        if c.spec.gang_index == 1
        else c
        for c in live
    ]
    name = kueue.group_name(cqs.metadata.name, 1, "rev0000001")
    out = plan(
        cqs,
        waiting,
        kueue_served=True,
        local_queues={"team-a"},
        kueue_workloads={name: workload(("QuotaReserved", "False", "Pending", QUOTA))},
    )
    assert out.status is not None and out.status.queue is not None
    assert out.status.queue.admitted_gangs == 1
    (entry,) = out.status.queue.gangs
    assert (entry.gang, entry.state, entry.reason, entry.message) == (1, "Queued", "Pending", QUOTA)
    cond = next(c for c in out.status.conditions if c.type == "Admitted")
    assert cond.status == "False" and QUOTA in cond.message


def test_a_pod_being_deleted_is_released_from_kueues_finalizer() -> None:
    from cliques.controllers.clique import planner as clique_planner
    from cliques.controllers.clique.planner import CliqueSnapshot
    from tests.unit.planner_fixtures import NOW, clique, pod

    c = clique(0, "worker", replicas=1)
    p = pod(c, 0)
    meta = msgspec.structs.replace(
        p.metadata,
        deletion_timestamp=NOW,
        finalizers=["example.com/keep", kueue.FINALIZER],
    )
    going = msgspec.structs.replace(p, metadata=meta)
    out = clique_planner.plan(CliqueSnapshot(clique=c, pods=[going], template_hash="h1", now=NOW))
    (patch,) = [x for x in out.patches if x.reason == "KueueRelease"]
    assert patch.patch_type == "json" and patch.name == p.metadata.name
    assert patch.patch[1:] == [
        {"op": "test", "path": "/metadata/finalizers/1", "value": kueue.FINALIZER},
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]
    # a pod that is not being deleted, or has no such finalizer, is left alone
    assert kueue.release_patch(p) is None
    kept = msgspec.structs.replace(
        p, metadata=msgspec.structs.replace(p.metadata, finalizers=[kueue.FINALIZER])
    )
    out = clique_planner.plan(CliqueSnapshot(clique=c, pods=[kept], template_hash="h1", now=NOW))
    assert not [x for x in out.patches if x.reason == "KueueRelease"]


def _going(p: Pod, *, uid: str | None = None, owner_uid: str | None = None) -> Pod:
    """`p` being deleted with Kueue's finalizer, as another pod (`uid`) or another owner's."""
    refs = [
        msgspec.structs.replace(r, uid=owner_uid if owner_uid is not None else r.uid)
        for r in p.metadata.owner_references
    ]
    meta = msgspec.structs.replace(
        p.metadata,
        uid=uid or p.metadata.uid,
        deletion_timestamp="2026-11-22T08:00:00Z",
        finalizers=[kueue.FINALIZER],
        owner_references=refs,
    )
    return msgspec.structs.replace(p, metadata=meta)


def test_only_the_pod_seen_going_with_its_clique_is_released() -> None:
    """A pod re-read by name is released only if it is the pod seen (its UID) and still the
    Clique's seen owning it (the controller's UID): a pod of the same name made by anyone
    else since, or one whose controller is another object of kind Clique, never is."""
    from tests.unit.planner_fixtures import clique, pod

    c = clique(0, "worker", replicas=1)
    seen = _going(pod(c, 0))
    pod_uid, owner_uid = seen.metadata.uid, c.metadata.uid
    assert kueue.release_of(seen, pod_uid, owner_uid) == kueue.release_patch(seen)
    assert kueue.release_of(seen, pod_uid, owner_uid) is not None
    # the same name, another pod (made by someone else, or by another Clique of the name)
    assert kueue.release_of(_going(pod(c, 0), uid="someone-elses"), pod_uid, owner_uid) is None
    # the same pod, now controlled by another object of kind Clique
    assert kueue.release_of(_going(pod(c, 0), owner_uid="other"), pod_uid, owner_uid) is None
    # no controller at all, gone, not being deleted, or no UIDs recorded
    orphan = msgspec.structs.replace(
        seen, metadata=msgspec.structs.replace(seen.metadata, owner_references=[])
    )
    assert kueue.release_of(orphan, pod_uid, owner_uid) is None
    assert kueue.release_of(None, pod_uid, owner_uid) is None
    assert kueue.release_of(pod(c, 0), pod_uid, owner_uid) is None
    assert kueue.release_of(seen, "", "") is None


def test_the_clique_planner_releases_only_its_own_pods() -> None:
    from cliques.controllers.clique import planner as clique_planner
    from cliques.controllers.clique.planner import CliqueSnapshot
    from tests.unit.planner_fixtures import NOW, clique, pod

    c = clique(0, "worker", replicas=1)
    for going, released in ((_going(pod(c, 0)), True), (_going(pod(c, 0), owner_uid="x"), False)):
        out = clique_planner.plan(
            CliqueSnapshot(clique=c, pods=[going], template_hash="h1", now=NOW)
        )
        assert bool([x for x in out.patches if x.reason == "KueueRelease"]) is released
