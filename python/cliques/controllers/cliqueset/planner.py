"""The CliqueSet planner (pure): from a CliqueSet and its Cliques, the plan of actions.

- Gangs: `replicas` gangs, each one Clique per clique template, named
  `<cliqueset>-<gang>-<clique>`; with `headlessService`, the headless Services the gangs'
  DNS layout needs (`subdomains`: one per CliqueSet, or one per gang), their ports kept
  those of the pod templates (a merge patch when they differ).
  Scaling adds or removes the highest gang indices; a removed clique template deletes its
  Cliques. The bodies come from `bodies` (Cliques) and `builders` (Services).
- Existing gangs are judged and the gangs to roll picked by `cliqueset_rollout`: in-place
  changes become merge patches, a roll a JSON patch of the Clique's template.
- The status comes from `cliqueset_status`.
- Pod template keys reserved for the operator (`bounds`, refused by the CRD since; a set
  stored before may carry them) are left out of Cliques and pods, said by a Warning Event
  once per generation.
- An invalid spec, a set that asks for more Cliques, pods or bytes of templates than one
  set may (`bounds`, counting scaling-group instances and autoscaling maxima, and the
  instances its CliqueScalingGroups ask for once the template's are applied), a pod
  template the canonical form refuses (`snap.invalid`, found while hashing), a startsAfter
  cycle or a placement whose pods could never be scheduled
  (`placement.unplaceable_cliques`), is an InvalidSpec: no Clique is created or changed, the
  conditions say why and a Warning Event is recorded (once, while the status says so).
- Gang scheduling (`gang_scheduling`): the Workload is created before the Cliques of new
  gangs, which record it; with the Workload backend no Clique gets a `startsAfter`; the
  `GangScheduling` condition (an Event when it changes); a `Workload` backend the cluster
  cannot serve is an InvalidSpec.
- `failurePolicy: RecreateGang` (`gang_failures`): breach marks and restart counts as
  annotations of each gang's Cliques, a requeue when the next restart is due, the
  conditions GangRestarting and GangFailed, the total on `status.gangRestarts`. A restart
  is a disruption the operator causes: restarts and rolls share one budget,
  `maxUnavailable` (`cliqueset_rollout.restart_budget`, then `pick`), restarts first; a
  due restart beyond it waits (`deferred`), and an outdated gang rolls instead.
- Gang-aware drain (`drain`): a gang with a pod on a drained node (cordoned, or a NoExecute
  taint the pod does not tolerate) is made again whole, paced by the same budget (after
  the failure policy's restarts, before the roll's picks), surge gangs first where
  `maxSurge` allows; the set's PodDisruptionBudget; the condition Moving.
- Revisions (`revisions`): each gang template the set rolls to is recorded as a
  ControllerRevision the set owns, numbered; `status.currentRevision` names the current one.
- While creates or deletes are unobserved (`expectations_satisfied` false), nothing is
  created, deleted or rolled: the cache may lack objects that exist.

`plan` reads the setup (`setup.read`, or why the spec is an InvalidSpec), sorts the Cliques by
gang and judges the gangs, then runs `PHASES` in order over one `Step`: the revisions of
the gang template (`revisions`), gang scheduling's writes, new Cliques, the Services, the
scale targets, restarts, moves and rolls, the PodDisruptionBudget, the claim objects, the
expectations gate, the status.
Each phase is a small function that reads the step and adds its part; a feature that adds
to the plan is one line in `PHASES`.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet, StartupType
from cliques.api.cliqueset_status import (
    AdmissionState,
    GangAdmission,
    QueueStatus,
)
from cliques.api.meta import ConditionStatus
from cliques.api.policies import GangRestartPolicy
from cliques.api.service import Service
from cliques.controllers.base import builders, conditions
from cliques.controllers.base.actions import CREATE_BURST, Create, Delete, Event, Patch
from cliques.controllers.cliqueset import bodies, restarts
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset import setup as setups
from cliques.controllers.cliqueset import status as cliqueset_status
from cliques.controllers.cliqueset import surge as surge_gangs
from cliques.controllers.cliqueset.snapshot import CliqueSetPlan, CliqueSetSnapshot, Setup
from cliques.controllers.features import (
    autoscaling,
    claims,
    drain,
    eviction_requests,
    gang_failures,
    gang_scheduling,
    kueue,
    revisions,
    scaling,
    subdomains,
)
from cliques.kube.resources import CLIQUES, HPAS, RESOURCE_CLAIM_TEMPLATES, SCALING_GROUPS, SERVICES

#: The planner's input, output and entry point.
__all__ = ["CliqueSetPlan", "CliqueSetSnapshot", "plan"]


def _ports_of(svc: Service) -> list[dict[str, Any]]:
    """A Service's ports in the form `builders.service_ports` gives them."""
    return [
        {"name": p.name, "port": p.port, "protocol": p.protocol, "targetPort": p.target_port}
        for p in svc.spec.ports
    ]


@dataclass(frozen=True)
class _Members:
    """The set's Cliques by gang and member, and the deletes of those no gang keeps
    (highest gang and instance first); with, for the next plan (`_members_again`), the
    Cliques in the order they were read and what was read of the set."""

    by_gang: dict[int, dict[str, Clique]]
    removed: list[Delete]
    cliques: list[Clique] = field(default_factory=list)
    #: replicas, clique names and the members every gang wants, of a set without scaling
    #: groups (None with groups: a gang's members are its own)
    read: tuple[int, frozenset[str], frozenset[str]] | None = None
    #: (gang, member) -> the place in `cliques` of the Clique `by_gang` holds (the last
    #: of that gang and member)
    where: dict[tuple[int, str], int] = field(default_factory=dict)
    #: the gangs below replicas that lack a member, in order, of a set without scaling
    #: groups (`_new_cliques` makes their Cliques; None: every gang is looked at)
    lacking: list[int] | None = None


@dataclass
class _Writes:
    creates: list[Create] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)


@dataclass
class Step:
    """One plan on its way through the phases: the snapshot and setup every phase reads,
    the Cliques by gang and the verdicts on the gangs, and what the phases have added so
    far (the creates and deletes, held until the expectations gate lets them go)."""

    snap: CliqueSetSnapshot
    setup: Setup
    out: CliqueSetPlan
    members: _Members
    gangs: cliqueset_rollout.Gangs
    #: the set as the user wrote it (`snap.cliqueset` has the surge gangs in its replicas)
    user: CliqueSet
    creates: list[Create] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    #: what the restarts and rolls phase decided (read by the status)
    rolls: restarts.Rolls = field(default_factory=lambda: restarts.Rolls(failing={}))
    #: claims the Cliques name that cannot be made (read by the status)
    missing: list[str] = field(default_factory=list)
    #: the gangs with pods on drained nodes (`drain.stuck`)
    stuck: drain.Stuck = field(default_factory=drain.Stuck)

    @property
    def room(self) -> int:
        """Creates this plan may still add (`CREATE_BURST` per plan)."""
        return CREATE_BURST - len(self.creates)


#: A phase of the plan: it reads the step and adds its part to it.
Phase = Callable[[Step], None]


def plan(snap: CliqueSetSnapshot) -> CliqueSetPlan:
    """The plan of one CliqueSet: the setup, the Cliques by gang and the verdicts on the
    gangs, then each of `PHASES` in order (the module docstring says what each keeps)."""
    setup = setups.read(snap)
    if isinstance(setup, str):
        return setups.invalid(snap, setup)
    user = snap.cliqueset
    out = CliqueSetPlan(events=setups.reserved_keys_events(user))
    members, gangs = _judged(snap, setup, snap.previous)
    # While a roll with maxSurge is under way, the set is planned with its surge gangs:
    # `replicas + kept` gangs (`surge`); the status counts the user's `replicas`.
    rollable, _ = cliqueset_rollout.partitioned(gangs.outdated, user.spec.update_strategy.partition)
    above = setup.surge.replicas  # (only gangs at or above it count: `surge.made`)
    made = surge_gangs.made(
        [g for g, m in members.by_gang.items() if g >= above and surge_gangs.live(m)], above
    )
    # Gangs stuck on drained nodes are made again like rolled ones: surge gangs first.
    stuck = drain.stuck(snap.drain, user, snap.cliques, snap.now)
    # Gangs EvictionRequests ask to move go the same way.
    stuck = eviction_requests.merged(
        stuck,
        eviction_requests.asked(snap.evictions, user, snap.cliques),
        eviction_requests.under_way(snap.evictions, user, snap.cliques),
    )
    moving = sorted(set(rollable) | {g for g in stuck.gangs if g < user.spec.replicas})
    above_ok = surge_gangs.available_above(
        setup.surge, gangs, members.by_gang, snap.rehashes, setup.counts
    )
    kept = surge_gangs.kept(setup.surge, gangs.facts, moving, made, above_ok)
    if kept:
        wide = dataclasses.replace(
            snap, cliqueset=surge_gangs.widened(user, setup.surge.keeping(kept))
        )
        wide_setup = setups.read(wide, setup.surge.keeping(kept))
        if not isinstance(wide_setup, str):  # (beyond the set's bounds: no surge)
            snap, setup = wide, wide_setup
            members, gangs = _judged(snap, setup, gangs.judgement)
    out.judgement = dataclasses.replace(
        gangs.judgement, trees=setup.sched.tree_memo, members=members
    )
    step = Step(snap, setup, out, members, gangs, user, deletes=list(members.removed))
    step.stuck = stuck
    for phase in PHASES:
        phase(step)
    return out


def _judged(
    snap: CliqueSetSnapshot, setup: Setup, previous: cliqueset_rollout.Judgement | None
) -> tuple[_Members, cliqueset_rollout.Gangs]:
    """The Cliques by gang (and those of removed gangs, cliques and instances), and the
    verdicts on the gangs (kept between plans with the gang trees, for the gangs whose
    Cliques are the same)."""
    cqs = snap.cliqueset
    memo = previous.members if previous is not None else None
    members = _members_by_gang(snap, setup, memo if isinstance(memo, _Members) else None)
    ctx = cliqueset_rollout.context(
        cqs, snap.hashes, setup.deps, snap.algorithm, start_gates=setup.start_gates
    )
    gangs = cliqueset_rollout.judge_gangs(
        members.by_gang, cqs.spec.replicas, ctx, snap.rehashes, previous, setup.counts
    )
    return members, gangs


def _revisions(step: Step) -> None:
    """The ControllerRevisions of the set's gang template (`revisions`): the current one
    made or renumbered, the oldest beyond `revisionHistoryLimit` deleted (only while
    expectations hold: the cache must show every revision to number the next)."""
    snap = step.snap
    if not snap.revisions.served or not snap.expectations_satisfied:
        return
    made = revisions.plan(snap.cliqueset, snap.hashes, snap.revisions.revisions, step.setup.bucket)
    step.creates += made.creates[: max(0, step.room)]
    step.out.patches += made.patches
    step.deletes += made.deletes


def _gang_scheduling(step: Step) -> None:
    """Gang scheduling's writes: Workloads, PodGroups and composite trees (creates only
    while expectations hold: their bodies are built only when they can be sent)."""
    sched = step.setup.sched
    if step.snap.expectations_satisfied:
        step.creates += sched.creates
    step.deletes[:0] = sched.deletes
    step.out.patches += sched.patches


def _cliques(step: Step) -> None:
    """The Cliques of new gangs and members."""
    if step.snap.expectations_satisfied:
        members = step.members
        step.creates += _new_cliques(
            step.snap, step.setup, members.by_gang, step.room, members.lacking
        )


def _subdomains(step: Step) -> None:
    """The headless Services of the gangs' DNS layout."""
    services = _services(step.snap, step.setup, step.gangs.facts, step.room)
    step.creates += services.creates
    step.out.patches += services.patches
    step.deletes += services.deletes


def _scaling(step: Step) -> None:
    """The scale targets: CliqueScalingGroups and HPAs."""
    snap, setup = step.snap, step.setup
    lay = setup.lay
    if lay.groups or snap.scaling.groups or snap.scaling.hpas or lay.autoscaled:
        _scale_targets(
            snap,
            lay,
            setup.counts,
            step.gangs.facts,
            setup.bucket,
            step.out,
            step.creates,
            step.deletes,
        )


def _restarts_and_rolls(step: Step) -> None:
    """Gang restarts first (a broken gang is down already), then rollouts, within one
    budget; in-place changes (`restarts`)."""
    step.rolls = restarts.restarts_and_rolls(
        step.snap, step.setup, step.members.by_gang, step.gangs, step.stuck
    )
    step.out.patches += step.rolls.patches
    step.out.events += step.rolls.events
    step.out.deferred = step.rolls.deferred
    step.out.moving = sorted(step.stuck.gangs)
    if step.rolls.move_waiting:
        wait = drain.WAIT_REQUEUE
        step.out.requeue_after = min(step.out.requeue_after or wait, wait)
    if step.stuck.next_due > 0:  # a node that may be lost comes due then
        due = step.stuck.next_due
        step.out.requeue_after = min(step.out.requeue_after or due, due)
    said = eviction_requests.reports(
        step.snap.evictions,
        step.user,
        step.snap.now,
        moved=step.rolls.moved,
        waiting=step.rolls.move_waiting,
    )
    step.out.patches += said.patches
    if said.requeue_after > 0:  # the next heartbeat of an open Eviction falls due then
        due = said.requeue_after
        step.out.requeue_after = min(step.out.requeue_after or due, due)


def _disruption_budget(step: Step) -> None:
    """The set's PodDisruptionBudget, which holds off piecemeal evictions while gangs move
    (`drain.budget_plan`; made only while expectations hold)."""
    made = drain.budget_plan(step.snap.cliqueset, step.snap.drain, step.setup.bucket)
    if step.snap.expectations_satisfied:
        step.creates += made.creates[: max(0, step.room)]
    step.out.patches += made.patches
    step.deletes += made.deletes


def _claims(step: Step) -> None:
    """The claim objects the Cliques name, those this plan makes and rolls to included."""
    made = _claim_objects(step.snap, step.setup.bucket, step.creates, step.out.patches)
    step.creates[:0] = made.creates
    step.deletes += made.deletes
    step.missing = made.missing


def _expectations(step: Step) -> None:
    """Creates and deletes go only while the cache has seen the last ones."""
    if not step.snap.expectations_satisfied:
        return
    step.out.creates, step.out.deletes = step.creates, step.deletes
    if step.deletes:
        message = f"deleting {len(step.deletes)} object(s) of removed gangs"
        step.out.events.append(Event("Normal", "ScalingDown", message))


def _status_phase(step: Step) -> None:
    """The failure policy's marks, the status and its conditions."""
    _status(step, step.members.by_gang, step.gangs, step.rolls)


#: The phases of a plan, in order: a feature that adds to the plan is one line here.
PHASES: tuple[Phase, ...] = (
    _revisions,
    _gang_scheduling,
    _cliques,
    _subdomains,
    _scaling,
    _restarts_and_rolls,
    _disruption_budget,
    _claims,
    _expectations,
    _status_phase,
)


def _members_by_gang(
    snap: CliqueSetSnapshot, setup: Setup, last: _Members | None = None
) -> _Members:
    """The set's Cliques by gang and member; those of a gang above `replicas`, of a removed
    clique, of an instance beyond its gang's count or of a clique that moved into or out of
    a scaling group are deleted (the gang's wanted member takes the place of the last).
    `last`: what the set's last plan found, reused where it decides the same
    (`_members_again`)."""
    cqs = snap.cliqueset
    replicas, roles, wanted_of = cqs.spec.replicas, setup.roles, setup.wanted_of
    # Without scaling groups every gang wants the same members (`setup._members`): looked up once.
    same = wanted_of(0) if not setup.lay.groups else None
    read = (replicas, frozenset(roles), frozenset(same)) if same is not None else None
    if last is not None and read is not None and last.read == read:
        again = _members_again(snap.cliques, last, read)
        if again is not None:
            return again
    by_gang: dict[int, dict[str, Clique]] = {}
    removed: list[tuple[int, int, str, Clique, str]] = []
    member_of = scaling.member_of
    where: dict[tuple[int, str], int] = {}
    for i, clique in enumerate(snap.cliques):
        spec = clique.spec
        gang, role = spec.gang_index, spec.clique_name
        key = member_of(clique)
        why = ""
        if gang >= replicas:
            why = "ScaleDown"
        elif role not in roles:
            why = "CliqueRemoved"
        elif key not in (same if same is not None else wanted_of(gang)):
            why = "InstanceRemoved" if role in setup.lay.group_of else "CliqueRegrouped"
        if why in ("InstanceRemoved", "CliqueRegrouped"):
            if clique.metadata.deletion_timestamp is None:
                inst = scaling.instance_of(clique)
                removed.append((-gang, -(inst or 0), key, clique, why))
            continue
        by_gang.setdefault(gang, {})[key] = clique
        where[gang, key] = i
        if clique.metadata.deletion_timestamp is None and why:
            removed.append((-gang, 0, key, clique, why))
    uid = cqs.metadata.uid
    deletes = [
        Delete(CLIQUES, clique.metadata.name, clique.metadata.uid, uid, why)
        for _, _, _, clique, why in sorted(removed, key=lambda r: r[:3])
    ]
    lacking = None
    if same is not None:
        wanted = same.keys()
        lacking = [
            g for g in range(replicas) if g not in by_gang or not wanted <= by_gang[g].keys()
        ]
    # (a copy of the list: what the caller's holds now, whatever it does with it later)
    return _Members(by_gang, deletes, list(snap.cliques), read, where, lacking)


def _members_again(
    cliques: list[Clique], last: _Members, read: tuple[int, frozenset[str], frozenset[str]]
) -> _Members | None:
    """`_members_by_gang` of `cliques` from what the last plan found (`last`, of a set
    without scaling groups whose replicas, cliques and wanted members were the same:
    `read`), or None where it cannot tell. Only the Cliques not where they were in the
    last plan's list are read (as `controller.moved_or_new`: the list of a store index
    keeps its order): each must stand for its predecessor at that place, a member of the
    same gang and name that a gang keeps (no delete), at the place the last plan kept it
    from (no later one of the same gang and member: an object may be listed twice). Every
    other place holds the same object, sorted as before; so the new Clique takes its
    predecessor's place in its gang, the deletes are the same, and no gang changes but
    those (nor lacks a member it did not)."""
    before = last.cliques
    if len(cliques) != len(before):
        return None
    replicas, roles, wanted = read
    member_of = scaling.member_of
    changed: dict[int, list[tuple[str, Clique]]] = {}
    for i in itertools.compress(range(len(cliques)), map(operator.is_not, cliques, before)):
        new, old = cliques[i], before[i]
        gang, role, key = new.spec.gang_index, new.spec.clique_name, member_of(new)
        if (
            gang >= replicas
            or role not in roles
            or key not in wanted
            or old.spec.gang_index != gang
            or old.spec.clique_name != role
            or member_of(old) != key
            or last.where.get((gang, key)) != i
        ):
            return None
        changed.setdefault(gang, []).append((key, new))
    by_gang = dict(last.by_gang)
    for gang, news in changed.items():
        members = by_gang[gang] = dict(by_gang[gang])
        for key, new in news:
            members[key] = new
    return _Members(by_gang, list(last.removed), list(cliques), read, last.where, last.lacking)


def _new_cliques(
    snap: CliqueSetSnapshot,
    setup: Setup,
    by_gang: Mapping[int, Mapping[str, Clique]],
    room: int,
    lacking: list[int] | None = None,
) -> list[Create]:
    """The Cliques of gangs and members that have none, gang by gang, at most `room` (the
    next pass, started by these creates' watch events, goes on). `lacking`: the gangs
    that lack a member, if known (`_Members.lacking`): only those are looked at."""
    cqs = snap.cliqueset
    sched = setup.sched
    creates: list[Create] = []
    # Without scaling groups every gang wants the same members (`setup._members`).
    same = setup.wanted_of(0).keys() if not setup.lay.groups else None
    for index in lacking if lacking is not None else range(cqs.spec.replicas):
        if len(creates) >= room:
            break
        have = by_gang.get(index)
        if (
            have is not None
            and (same if same is not None else setup.wanted_of(index).keys()) <= have.keys()
        ):
            continue
        have = have or {}
        uses = gang_scheduling.gang_workload(have, sched.current)
        if uses and uses == sched.current and not sched.ready:
            continue  # its Workload first
        if setup.group_first and sched.pod_group(index) not in setup.observed_groups | {""}:
            continue  # its PodGroup first (its claims go through it)
        if setup.queue_problem:
            continue  # no pod of a set Kueue cannot admit
        creates += _gang_cliques(snap, setup, index, have, uses)
    return creates


def _gang_cliques(
    snap: CliqueSetSnapshot, setup: Setup, index: int, have: Mapping[str, Clique], uses: str
) -> list[Create]:
    """The Cliques gang `index` lacks (it has `have`; its Workload is `uses`)."""
    cqs = snap.cliqueset
    meta = cqs.metadata
    sched, lay = setup.sched, setup.lay
    # A clique added to an existing gang joins the gang's DNS layout.
    layout = subdomains.gang_annotations(have.values())
    if layout is None:
        layout = subdomains.new_gang_annotations(cqs, index, setup.policy)
    restarts = gang_failures.restarts_of(have)
    creates: list[Create] = []
    for member_name, member in setup.wanted_of(index).items():
        if member_name in have:
            continue
        role = member.role
        tmpl = setup.roles[role]
        group = sched.member_pod_group(index, member.group, member.instance)
        annotations = {labels.ANNOTATION_HASH_ALGORITHM: str(snap.algorithm)}
        if uses:
            annotations[labels.ANNOTATION_WORKLOAD] = uses
        if group:
            annotations[labels.ANNOTATION_POD_GROUP] = group
        annotations.update(subdomains.member_annotations(cqs, index, layout, lay, member))
        parts = bodies.CliqueParts(
            template=bodies.gang_template(
                cqs,
                index,
                tmpl,
                scheduler_packs=sched.scheduler_packs,
                claims_via_group=setup.via_group(sched.pod_group(index), index),
                kueue_revision=snap.kueue.revision,
            ),
            labels={
                **scaling.member_labels(member),
                labels.LABEL_TEMPLATE_HASH: snap.hashes[role],
            },
            annotations=annotations,
            start_gate=setup.start_gates,
        )
        starts_after = (
            scaling.dependencies(lay, setup.deps, meta.name, index, role, member.instance)
            if lay.groups
            else [labels.clique_name(meta.name, index, d) for d in setup.deps[role]]
        )
        body = bodies.clique_body(
            cqs,
            index,
            tmpl,
            member=member_name,
            starts_after=starts_after,
            bucket=setup.bucket,
            parts=parts,
        )
        if restarts:  # a clique added to a restarted gang joins its count
            body["metadata"]["annotations"][labels.ANNOTATION_GANG_RESTARTS] = str(restarts)
        name = labels.clique_name(meta.name, index, member_name)
        creates.append(Create(CLIQUES, name, body, meta.uid))
    return creates


def _services(
    snap: CliqueSetSnapshot,
    setup: Setup,
    facts: list[cliqueset_rollout.GangFacts],
    room: int,
) -> _Writes:
    """The headless Services the gangs' DNS layout uses: made (at most `room`), their
    ports kept those of the templates, the unused deleted."""
    cqs = snap.cliqueset
    meta = cqs.metadata
    out = _Writes()
    have_svc = {s.metadata.name: s for s in snap.services}
    recorded = [(f.live, f.subdomains) for f in facts]
    want_svc = subdomains.wanted_services(cqs, recorded, lambda: setup.policy)
    for name, svc_gang in want_svc.items() if snap.expectations_satisfied else ():
        if len(out.creates) >= room:
            break
        if name not in have_svc:
            body = builders.service_body(cqs, svc_gang, setup.bucket)
            out.creates.append(Create(SERVICES, name, body, meta.uid))
    ports = builders.service_ports(cqs) if want_svc else []
    for name, svc in have_svc.items():
        gone = svc.metadata.deletion_timestamp is not None
        # Ports that differ: made by an older release, or the templates changed since.
        if name in want_svc and not gone and _ports_of(svc) != ports:
            patch = {"spec": {"ports": ports or None}}
            out.patches.append(Patch(SERVICES, name, patch, reason="ServicePorts"))
        if name not in want_svc and not gone:
            suffix = name.removeprefix(f"{meta.name}-")
            removed_gang = suffix.isdigit() and int(suffix) >= cqs.spec.replicas
            why = "ScaleDown" if removed_gang else "Unused"
            out.deletes.append(Delete(SERVICES, name, svc.metadata.uid, meta.uid, why))
    return out


def _status(
    step: Step,
    by_gang: dict[int, dict[str, Clique]],
    gangs: cliqueset_rollout.Gangs,
    rolls: restarts.Rolls,
) -> None:
    """The failure policy carried out (`failure_policy`), and the set's status with its
    conditions (None when it would not change); the GangScheduling Event when it changes.
    The counts are of gangs `0..replicas-1` as the user wrote them; the surge gangs this
    plan keeps are `surgeReplicas` (`surge`)."""
    snap, setup, out = step.snap, step.setup, step.out
    cqs = snap.cliqueset
    spec = cqs.spec
    replicas = step.user.spec.replicas
    facts = gangs.facts
    below = [g for g in gangs.outdated if g < replicas]
    rollable, held = cliqueset_rollout.partitioned(below, spec.update_strategy.partition)
    surge = sum(1 for g in by_gang if by_gang[g] and replicas <= g < spec.replicas)
    out.status = cliqueset_status.status(
        step.user,
        facts[:replicas],
        rollable,
        held=held,
        existing=sum(1 for g in by_gang if by_gang[g]) - surge,
        template_hash=setup.set_hash,
        algorithm=snap.algorithm,
        failure=snap.failure,
        now=snap.now,
        surge=surge,
    )
    restart_now = set(rolls.restart_now)
    moves = setup.sched.wanted
    out.status.gang_restarts = restarts.failure_policy(
        snap,
        rolls.failing,
        facts,
        rolls.touched,
        restart_now,
        out,
        moves,
        setup.sched.workload_to_move_to,
    )
    kinds = [f.update_kind for f in facts[:replicas]]
    out.status.updated_in_place = kinds.count("in-place")
    out.status.updated_by_replacement = kinds.count("replaced")
    old_conditions = cqs.status.conditions if cqs.status is not None else []
    setter = conditions.Setter(old_conditions, snap.now, cqs.metadata.generation)
    ordered = spec.startup_type != StartupType.ANY_ORDER
    gang_condition = gang_scheduling.condition(setup.sched.decision, setter, ordered)
    out.status.conditions.append(gang_condition)
    if spec.resource_claims:
        waiting = [(g, why) for g, f in enumerate(facts) for why in f.waiting_why]
        status, reason, message = claims.condition(cqs, waiting, step.missing)
        out.status.conditions.append(setter.set(claims.CONDITION_CLAIMS, status, reason, message))
    if setup.queue is not None:
        out.status.queue, verdict = _admission(snap, setup.queue, by_gang, setup.queue_problem)
        out.status.conditions.append(setter.set(kueue.CONDITION_ADMITTED, *verdict))
    if spec.failure_policy.restart_policy == GangRestartPolicy.RECREATE_GANG:
        out.status.conditions += gang_failures.conditions(
            setter, out.restarting, out.failed, out.deferred
        )
    moving = drain.condition(setter, old_conditions, step.stuck, rolls.moved, rolls.move_waiting)
    if moving is not None:
        out.status.conditions.append(moving)
    said = gang_scheduling.event(old_conditions, gang_condition)
    if said is not None:
        out.events.append(said)
    if snap.revisions.served:
        out.status.current_revision = revisions.current_name(cqs.metadata.name, snap.hashes)
    if out.status == cqs.status:
        out.status = None


def _scale_targets(
    snap: CliqueSetSnapshot,
    lay: scaling.Layout,
    counts: Mapping[int, Mapping[str, int]],
    facts: list[cliqueset_rollout.GangFacts],
    bucket: str,
    out: CliqueSetPlan,
    creates: list[Create],
    deletes: list[Delete],
) -> None:
    """The CliqueScalingGroups (`scaling.plan_objects`) and HPAs (`autoscaling.plan`) of
    the set's gangs, added to the plan: creates and deletes only while expectations hold,
    spec and status patches always."""
    cqs = snap.cliqueset
    uid = cqs.metadata.uid
    owner = builders.owner_reference(cqs)
    instances = {
        gang: {group: (made, ready, current) for group, made, ready, current in f.instances}
        for gang, f in enumerate(facts)
        if f.instances
    }
    objects = scaling.plan_objects(cqs, lay, snap.scaling.groups, counts, instances, bucket, owner)
    hpas = autoscaling.plan(cqs, lay, snap.scaling.hpas, bucket, owner)
    for name, body in objects.creates:
        creates.append(Create(SCALING_GROUPS, name, body, uid))
    for name, body in hpas.creates:
        creates.append(Create(HPAS, name, body, uid))
    for name, patch in objects.patches:
        out.patches.append(Patch(SCALING_GROUPS, name, patch, reason="ScalingGroupTemplate"))
    for name, patch in objects.statuses:
        out.patches.append(
            Patch(SCALING_GROUPS, name, patch, reason="ScalingGroupStatus", sub="status")
        )
    for name, ops in hpas.patches:
        out.patches.append(Patch(HPAS, name, ops, patch_type="json", reason="AutoscalingChanged"))
    for name, obj_uid in objects.deletes:
        deletes.append(Delete(SCALING_GROUPS, name, obj_uid, uid, "Unused"))
    for name, obj_uid in hpas.deletes:
        deletes.append(Delete(HPAS, name, obj_uid, uid, "Unused"))


def _admission(
    snap: CliqueSetSnapshot,
    queue: kueue.Queue,
    by_gang: Mapping[int, Mapping[str, Clique]],
    problem: str,
) -> tuple[QueueStatus, tuple[ConditionStatus, str, str]]:
    """What the set says of Kueue's admission of its gangs: a gang with a pod held by
    Kueue's gate (its Cliques' `queuedReplicas`), or not made yet, is Queued; Kueue's
    reasons come from the Workloads of the gangs' pod groups."""
    cqs = snap.cliqueset
    gangs = range(cqs.spec.replicas)
    queued_pods = {
        g: sum((c.status.queued_replicas if c.status else 0) for c in by_gang.get(g, {}).values())
        or (0 if by_gang.get(g) else 1)
        for g in gangs
    }
    workloads = {
        g: snap.kueue.workloads[name]
        for g in gangs
        for name in kueue.group_names(cqs.metadata.name, g, snap.kueue.revision)[::-1]
        if name in snap.kueue.workloads
    }
    states = kueue.gang_states(gangs, queued_pods, workloads)
    listed = [
        GangAdmission(
            gang=s.gang, state=AdmissionState(s.state), reason=s.reason, message=s.message[:4096]
        )
        for s in states
        if s.state != kueue.ADMITTED
    ][: kueue.MAX_LISTED]
    status = QueueStatus(
        name=queue.name,
        priority_class=queue.priority,
        admitted_gangs=sum(1 for s in states if s.state == kueue.ADMITTED),
        gangs=listed,
    )
    return status, kueue.verdict(queue, states, problem)


def _claim_objects(
    snap: CliqueSetSnapshot, bucket: str, creates: list[Create], patches: list[Patch]
) -> claims.ClaimPlan:
    """The claim objects of the set's Cliques (`claims.plan`): those every Clique names,
    including the Cliques this plan makes and the templates it rolls to."""
    cqs = snap.cliqueset
    if not cqs.spec.resource_claims and not any(snap.claims.objects.values()):
        return claims.ClaimPlan()
    refs: list[claims.Ref] = []
    for clique in snap.cliques:
        refs.extend(claims.references(clique.spec.template, clique.spec.gang_index))
    for create in creates:
        if create.resource == CLIQUES:
            spec = create.body["spec"]
            refs.extend(claims.references(spec["template"], spec["gangIndex"]))
        elif create.resource.kind == "PodGroup":  # the templates a group's claims are made from
            of = int(create.body["metadata"]["labels"].get(labels.LABEL_GANG_INDEX, "0"))
            for entry in create.body["spec"].get("resourceClaims") or []:
                name = entry.get(claims.TEMPLATE_KEY)
                if name:
                    refs.append(claims.Ref(RESOURCE_CLAIM_TEMPLATES, name, entry["name"], of))
    for group in snap.gangs.groups:
        if group.metadata.deletion_timestamp is None:
            for claim_name, template in group.claim_templates:
                refs.append(claims.Ref(RESOURCE_CLAIM_TEMPLATES, template, claim_name, 0))
    gangs = {c.metadata.name: c.spec.gang_index for c in snap.cliques}
    for patch in patches:
        gang = gangs.get(patch.name)
        if patch.resource == CLIQUES and patch.patch_type == "json" and gang is not None:
            for op in patch.patch:
                if op.get("path") == "/spec/template":
                    refs.extend(claims.references(op["value"], gang))
    owner = builders.owner_reference(cqs)
    return claims.plan(cqs, refs, snap.claims.objects, bucket, owner)
