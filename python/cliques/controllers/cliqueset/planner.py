"""The CliqueSet planner (pure): from a CliqueSet and its Cliques, the plan of actions.

- Gangs: `replicas` gangs, each one Clique per clique template, named
  `<cliqueset>-<gang>-<clique>`; with `headlessService`, the headless Services the gangs'
  DNS layout needs (`subdomains`: one per CliqueSet, or one per gang), their ports kept
  those of the pod templates (a merge patch when they differ).
  Scaling adds or removes the highest gang indices; a removed clique template deletes its
  Cliques. The bodies come from `builders`.
- Existing gangs are judged and the gangs to roll picked by `cliqueset_rollout`: in-place
  changes become merge patches, a roll a JSON patch of the Clique's template.
- The status comes from `cliqueset_status`.
- Pod template keys reserved for the operator (`bounds`, refused by the CRD since; a set
  stored before may carry them) are left out of Cliques and pods, said by a Warning Event
  once per generation.
- An invalid spec, a pod template the canonical form refuses (`snap.invalid`, found while
  hashing), a startsAfter cycle or a placement whose pods could never be scheduled
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
- While creates or deletes are unobserved (`expectations_satisfied` false), nothing is
  created, deleted or rolled: the cache may lack objects that exist.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cliques import _core
from cliques.api import labels
from cliques.api.backends import GangBackend
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet, StartupType
from cliques.api.cliqueset_status import (
    REASON_INVALID_SPEC,
    AdmissionState,
    GangAdmission,
    QueueStatus,
)
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.kueue import KueueWorkload
from cliques.api.meta import ConditionStatus, ObjectMeta
from cliques.api.podgroup import PodGroup
from cliques.api.policies import GangRestartPolicy, InPlacePolicy
from cliques.api.scalinggroup import CliqueScalingGroup
from cliques.api.service import Service
from cliques.api.workload import Workload
from cliques.controllers.base import bounds, builders, conditions, failures, startup
from cliques.controllers.base.actions import (
    CREATE_BURST,
    Create,
    Delete,
    Event,
    Patch,
    Plan,
    pointer_key,
)
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset import status as cliqueset_status
from cliques.controllers.cliqueset.rollout import Change, Judgement
from cliques.controllers.features import (
    autoscaling,
    claims,
    gang_failures,
    gang_scheduling,
    inplace,
    kueue,
    placement,
    scaling,
    subdomains,
)
from cliques.kube.resources import (
    CLIQUES,
    HPAS,
    RESOURCE_CLAIM_TEMPLATES,
    SCALING_GROUPS,
    SERVICES,
    Resource,
)


def _ports_of(svc: Service) -> list[dict[str, Any]]:
    """A Service's ports in the form `builders.service_ports` gives them."""
    return [
        {"name": p.name, "port": p.port, "protocol": p.protocol, "targetPort": p.target_port}
        for p in svc.spec.ports
    ]


@dataclass(frozen=True)
class CliqueSetSnapshot:
    """What the planner sees of one CliqueSet (plain data, never changed by the plan)."""

    cliqueset: CliqueSet
    cliques: list[Clique]
    services: list[Service] = field(default_factory=list)
    #: role name -> desired template hash (computed by the controller's Hasher)
    hashes: Mapping[str, str] = field(default_factory=dict)
    #: Clique name -> the hash of its template under the current algorithm, for the
    #: Cliques labelled by another algorithm (`cliqueset_rollout.needs_rehash`)
    rehashes: Mapping[str, str] = field(default_factory=dict)
    algorithm: int = 1
    expectations_satisfied: bool = True
    now: str = "1970-01-01T00:00:00Z"
    #: the verdicts of this CliqueSet's previous plan (kept by the controller), or None
    previous: Judgement | None = None
    #: the API server's refusal of this CliqueSet's last writes, until a write succeeds
    failure: failures.Failure | None = None
    #: why the spec cannot be planned though the API server accepted it ("" if it can)
    invalid: str = ""
    #: whether the cluster serves the Workload API, and what it serves (`gangapi`)
    workload_api: bool = False
    gang_api_detail: str = ""
    #: the Workloads this CliqueSet owns
    workloads: list[Workload] = field(default_factory=list)
    #: the scheduling.k8s.io version served for gangs (`gangapi.GangAPI.version`), and the
    #: PodGroups this CliqueSet owns (from 1.36 on), and with them its CompositePodGroups
    #: (`api.podgroup.CompositePodGroup`, a subclass; 1.37 alpha, `gang_trees`)
    gang_version: str = "v1alpha1"
    pod_groups: list[PodGroup] = field(default_factory=list)
    #: the PodGroup fields behind feature gates that the server keeps (`gangapi.FEATURES`)
    gang_features: frozenset[str] = frozenset()
    #: whether the operator watches DRA claim objects (resource.k8s.io/v1 is served), and
    #: the ResourceClaims and ResourceClaimTemplates this CliqueSet owns, by resource
    claims_served: bool = True
    #: The API server serves `pods/resize`: an in-place update may change CPU and memory.
    resize_served: bool = False
    #: For a set Kueue queues (`kueue.queue_of`): the gangs' revision (`kueue.revision`);
    #: whether the server serves Kueue's API, the LocalQueues of the set's namespace, and
    #: the Workloads of its gangs' pod groups, by name.
    kueue_revision: str = ""
    kueue_served: bool = False
    local_queues: frozenset[str] = frozenset()
    kueue_workloads: Mapping[str, KueueWorkload] = field(default_factory=dict)
    claim_objects: Mapping[Resource, list[ObjectMeta]] = field(default_factory=dict)
    #: the CliqueScalingGroups and the HorizontalPodAutoscalers this CliqueSet owns
    scaling_groups: list[CliqueScalingGroup] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)


@dataclass
class CliqueSetPlan(Plan):
    """A plan, and the verdicts it reached (for the next plan of the same CliqueSet)."""

    judgement: Judgement | None = None
    #: gangs breached and to be recreated, and gangs that used up their restarts
    restarting: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    #: gangs due for a restart that wait for the rollout budget
    deferred: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Setup:
    """What the phases of a valid set's plan read besides the snapshot."""

    deps: dict[str, list[str]]
    bucket: str
    sched: gang_scheduling.GangPlan
    #: a gang's PodGroup is made before its pods (its Gang-scope claims go through it)
    group_first: bool
    #: start order is kept by start gates (`gang_scheduling.start_gates`)
    start_gates: bool
    queue: kueue.Queue | None
    queue_problem: str
    via_group: Callable[[str, int], bool]
    #: the PodGroups in the cache (read only where `group_first`)
    observed_groups: frozenset[str]
    roles: Mapping[str, CliqueTemplate]
    lay: scaling.Layout
    counts: Mapping[int, Mapping[str, int]]
    wanted_of: Callable[[int], Mapping[str, scaling.Member]]
    policy: str
    set_hash: str


@dataclass
class _Members:
    """The set's Cliques by gang and member, and the deletes of those no gang keeps
    (highest gang and instance first)."""

    by_gang: dict[int, dict[str, Clique]]
    removed: list[Delete]


@dataclass
class _Writes:
    creates: list[Create] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)


@dataclass
class _Rolls:
    """What the restart and rollout phase decided."""

    failing: dict[int, tuple[dict[str, Clique], gang_failures.GangDecision]]
    restart_now: list[int] = field(default_factory=list)
    deferred: list[int] = field(default_factory=list)
    #: gangs a patch of this plan touches (rolled or changed in place)
    touched: set[int] = field(default_factory=set)
    patches: list[Patch] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def plan(snap: CliqueSetSnapshot) -> CliqueSetPlan:
    """The plan of one CliqueSet, in phases (the module docstring says what each keeps)."""
    setup = _setup(snap)
    if isinstance(setup, str):
        return _invalid(snap, setup)
    cqs = snap.cliqueset
    out = CliqueSetPlan(events=_reserved_keys_events(cqs))
    # 1. The Cliques by gang, and those of removed gangs, cliques and instances.
    members = _members_by_gang(snap, setup)
    # 2. The verdicts on the gangs (kept between plans with the gang trees, for the gangs
    # whose Cliques are the same).
    ctx = cliqueset_rollout.context(
        cqs, snap.hashes, setup.deps, snap.algorithm, start_gates=setup.start_gates
    )
    gangs = cliqueset_rollout.judge_gangs(
        members.by_gang, cqs.spec.replicas, ctx, snap.rehashes, snap.previous, setup.counts
    )
    out.judgement = dataclasses.replace(gangs.judgement, trees=setup.sched.tree_memo)
    # 3. Gang scheduling's writes, the Cliques of new gangs and members, the Services
    # (creates are only planned, their bodies built, when they can be sent).
    creates = list(setup.sched.creates) if snap.expectations_satisfied else []
    deletes = [*setup.sched.deletes, *members.removed]
    out.patches += setup.sched.patches
    if snap.expectations_satisfied:
        creates += _new_cliques(snap, setup, members.by_gang, CREATE_BURST - len(creates))
    services = _services(snap, setup, gangs.facts, CREATE_BURST - len(creates))
    creates += services.creates
    out.patches += services.patches
    deletes += services.deletes
    # 4. The scale targets: CliqueScalingGroups and HPAs.
    lay = setup.lay
    if lay.groups or snap.scaling_groups or snap.hpas or lay.autoscaled:
        _scale_targets(snap, lay, setup.counts, gangs.facts, setup.bucket, out, creates, deletes)
    # 5. Gang restarts first (a broken gang is down already), then rollouts, within one
    # budget; in-place changes.
    rolls = _restarts_and_rolls(snap, setup, members.by_gang, gangs)
    out.patches += rolls.patches
    out.events += rolls.events
    out.deferred = rolls.deferred
    # 6. The claim objects the Cliques name.
    made = _claim_objects(snap, setup.bucket, creates, out.patches)
    creates[:0] = made.creates
    deletes += made.deletes
    # 7. Creates and deletes go only while the cache has seen the last ones.
    if snap.expectations_satisfied:
        out.creates, out.deletes = creates, deletes
        if deletes:
            message = f"deleting {len(deletes)} object(s) of removed gangs"
            out.events.append(Event("Normal", "ScalingDown", message))
    # 8. The failure policy's marks, the status and its conditions.
    _status(snap, setup, members.by_gang, gangs, rolls, made.missing, out)
    return out


def _setup(snap: CliqueSetSnapshot) -> _Setup | str:
    """What the phases read, or why the spec cannot be planned (an InvalidSpec)."""
    cqs = snap.cliqueset
    spec, meta = cqs.spec, cqs.metadata
    if snap.invalid:
        return snap.invalid
    try:
        deps = startup.dependencies(spec)
    except startup.StartupCycle as exc:
        return str(exc)
    bucket = str(_core.bucket_of(meta.namespace, meta.name))
    # Where a gang's DRA claims go through its PodGroup, its pods are made only once the
    # group exists (a pod made before its group gets no share of the group's claim on
    # 1.36): the group of a gang that will move is made ahead of the roll.
    group_first = (
        "workload-claims" in snap.gang_features
        and GangBackend(spec.gang_scheduling.backend) != GangBackend.NONE
        and bool(claims.group_claims(cqs))
    )
    lay = scaling.layout(spec)
    counts, wanted_of = _members(snap, lay)
    sched = gang_scheduling.plan(
        cqs,
        snap.cliques,
        snap.workloads,
        workload_api=snap.workload_api,
        detail=snap.gang_api_detail,
        bucket=bucket,
        version=snap.gang_version,
        groups=snap.pod_groups,
        features=snap.gang_features,
        moving=_moving(snap) if group_first else (),
        tree_memo=snap.previous.trees if snap.previous is not None else None,
        counts=counts,
    )
    if not sched.decision.satisfiable:
        return sched.decision.message
    queue = kueue.queue_of(cqs)
    problem = _unplannable(snap, sched, queue)
    if problem:
        return problem
    return _Setup(
        deps=deps,
        bucket=bucket,
        sched=sched,
        group_first=group_first and sched.decision.backend == GangBackend.WORKLOAD,
        start_gates=gang_scheduling.start_gates(sched.decision),
        queue=queue,
        queue_problem=(
            kueue.problem(queue, snap.kueue_served, snap.local_queues, meta.namespace)
            if queue is not None
            else ""
        ),
        via_group=_claims_via_group(snap, sched.wanted),
        observed_groups=(
            frozenset(g.metadata.name for g in snap.pod_groups) if group_first else frozenset()
        ),
        roles={c.name: c for c in spec.template.cliques},
        lay=lay,
        counts=counts,
        wanted_of=wanted_of,
        policy=subdomains.policy(cqs, snap.cliques),
        set_hash=cliqueset_status.set_hash(spec, snap.hashes),
    )


def _unplannable(
    snap: CliqueSetSnapshot, sched: gang_scheduling.GangPlan, queue: kueue.Queue | None
) -> str:
    """Why a spec the API server took cannot be planned here ("" if it can): pods that
    could never be scheduled, claims the cluster cannot serve, a queued set that scales."""
    cqs = snap.cliqueset
    spec, meta = cqs.spec, cqs.metadata
    stuck = (
        []
        if sched.scheduler_packs
        else placement.unplaceable_cliques(
            [(c.name, c.template) for c in spec.template.cliques],
            spec.placement,
            meta.name,
            meta.namespace,
        )
    )
    if stuck:
        return (
            f"placement: the pods of clique(s) {', '.join(stuck)} could never be scheduled: "
            "their required pod affinity, ANDed with the pack term, selects no pod of the "
            "gang (docs/gangs.md)"
        )
    if spec.resource_claims and not snap.claims_served:
        return (
            "spec.resourceClaims: the cluster serves no resource.k8s.io/v1 ResourceClaims "
            "(dynamic resource allocation, Kubernetes 1.34 and later)"
        )
    if queue is not None and (spec.template.scaling_groups or _autoscaled(cqs)):
        return (
            "spec.template: scalingGroups and autoscaling are not supported for a set Kueue "
            f"queues ({kueue.QUEUE_LABEL}): Kueue admits each gang as a pod group of a "
            "fixed size (docs/scaling.md)"
        )
    return ""


def _reserved_keys_events(cqs: CliqueSet) -> list[Event]:
    """Once per generation, a Warning that keys of the operator's in the templates are left
    out (`bounds`)."""
    if cqs.status is not None and cqs.status.observed_generation == cqs.metadata.generation:
        return []
    reserved = bounds.reserved_keys_message(cqs)
    return [Event("Warning", bounds.REASON_RESERVED_KEYS, reserved)] if reserved else []


def _members_by_gang(snap: CliqueSetSnapshot, setup: _Setup) -> _Members:
    """The set's Cliques by gang and member; those of a gang above `replicas`, of a removed
    clique, of an instance beyond its gang's count or of a clique that moved into or out of
    a scaling group are deleted (the gang's wanted member takes the place of the last)."""
    cqs = snap.cliqueset
    by_gang: dict[int, dict[str, Clique]] = {}
    removed: list[tuple[int, int, str, Clique, str]] = []
    for clique in snap.cliques:
        gang, role = clique.spec.gang_index, clique.spec.clique_name
        key = scaling.member_of(clique)
        why = ""
        if gang >= cqs.spec.replicas:
            why = "ScaleDown"
        elif role not in setup.roles:
            why = "CliqueRemoved"
        elif key not in setup.wanted_of(gang):
            why = "InstanceRemoved" if role in setup.lay.group_of else "CliqueRegrouped"
        if why in ("InstanceRemoved", "CliqueRegrouped"):
            if clique.metadata.deletion_timestamp is None:
                inst = scaling.instance_of(clique)
                removed.append((-gang, -(inst or 0), key, clique, why))
            continue
        by_gang.setdefault(gang, {})[key] = clique
        if clique.metadata.deletion_timestamp is None and why:
            removed.append((-gang, 0, key, clique, why))
    uid = cqs.metadata.uid
    deletes = [
        Delete(CLIQUES, clique.metadata.name, clique.metadata.uid, uid, why)
        for _, _, _, clique, why in sorted(removed, key=lambda r: r[:3])
    ]
    return _Members(by_gang, deletes)


def _new_cliques(
    snap: CliqueSetSnapshot, setup: _Setup, by_gang: Mapping[int, Mapping[str, Clique]], room: int
) -> list[Create]:
    """The Cliques of gangs and members that have none, gang by gang, at most `room` (the
    next pass, started by these creates' watch events, goes on)."""
    cqs = snap.cliqueset
    sched = setup.sched
    creates: list[Create] = []
    for index in range(cqs.spec.replicas):
        if len(creates) >= room:
            break
        have = by_gang.get(index)
        want = setup.wanted_of(index)
        if have is not None and want.keys() <= have.keys():
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
    snap: CliqueSetSnapshot, setup: _Setup, index: int, have: Mapping[str, Clique], uses: str
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
        body = builders.clique_body(
            cqs,
            index,
            setup.roles[role],
            starts_after=setup.deps[role],
            member=member_name,
            member_labels=scaling.member_labels(member),
            dependency_names=(
                scaling.dependencies(lay, setup.deps, meta.name, index, role, member.instance)
                if lay.groups
                else None
            ),
            template_hash=snap.hashes[role],
            algorithm=snap.algorithm,
            bucket=setup.bucket,
            workload=uses,
            pod_group=sched.member_pod_group(index, member.group, member.instance),
            scheduler_packs=sched.scheduler_packs,
            layout=subdomains.member_annotations(cqs, index, layout, lay, member),
            start_gates=setup.start_gates,
            claims_via_group=setup.via_group(sched.pod_group(index), index),
            kueue_revision=snap.kueue_revision,
        )
        if restarts:  # a clique added to a restarted gang joins its count
            body["metadata"]["annotations"][labels.ANNOTATION_GANG_RESTARTS] = str(restarts)
        name = labels.clique_name(meta.name, index, member_name)
        creates.append(Create(CLIQUES, name, body, meta.uid))
    return creates


def _services(
    snap: CliqueSetSnapshot,
    setup: _Setup,
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
    want_svc = subdomains.wanted_services(cqs, recorded, setup.policy)
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


def _restarts_and_rolls(
    snap: CliqueSetSnapshot,
    setup: _Setup,
    by_gang: dict[int, dict[str, Clique]],
    gangs: cliqueset_rollout.Gangs,
) -> _Rolls:
    """The gangs the failure policy restarts now (`restart_now`, or `deferred` beyond the
    budget), then the outdated gangs to roll (`cliqueset_rollout.pick`) in what budget is
    left, with the in-place changes: their patches and the RollingUpdate Event."""
    strategy = snap.cliqueset.spec.update_strategy
    out = _Rolls(failing=_failure_decisions(snap, by_gang, gangs.facts))
    outdated = set(gangs.outdated)
    budget = cliqueset_rollout.restart_budget(strategy.max_unavailable, gangs.facts)
    changed = {gang for gang, _ in gangs.changes.values()}
    for index, (_, decision) in sorted(out.failing.items()):
        # An outdated gang rolls instead; one changed in place now is restarted next pass.
        if decision.restart and index not in outdated and index not in changed:
            if len(out.restart_now) < budget and snap.expectations_satisfied:
                out.restart_now.append(index)
            else:
                out.deferred.append(index)
    to_update = (
        cliqueset_rollout.pick(
            strategy.type,
            strategy.max_unavailable,
            gangs.outdated,
            cliqueset_rollout.down(gangs.facts),
            spent=len(out.restart_now),
        )
        if snap.expectations_satisfied
        else []
    )
    updating = set(to_update)
    out.touched = updating | changed
    in_place_gangs: list[int] = []
    replaced_gangs: list[int] = []
    for gang in sorted(out.touched):
        patches, in_place = _gang_patches(snap, setup, gang, by_gang.get(gang, {}), updating, gangs)
        out.patches += patches
        if in_place is not None:
            (in_place_gangs if in_place else replaced_gangs).append(gang)
    if to_update:
        how = ""
        if strategy.in_place == InPlacePolicy.IF_POSSIBLE:
            how = f"; {len(in_place_gangs)} in place, {len(replaced_gangs)} replacing pods"
        message = (
            f"updating gang(s) {', '.join(map(str, to_update))} to template "
            f"{setup.set_hash} ({len(gangs.outdated) - len(to_update)} more to go{how})"
        )
        out.events.append(Event("Normal", "RollingUpdate", message))
    return out


def _gang_patches(
    snap: CliqueSetSnapshot,
    setup: _Setup,
    gang: int,
    cliques: Mapping[str, Clique],
    updating: set[int],
    gangs: cliqueset_rollout.Gangs,
) -> tuple[list[Patch], bool | None]:
    """The patches of one gang a plan touches: the roll of its outdated Cliques (if it is
    `updating`) and its in-place changes; and whether it rolls in place (None when nothing
    of it rolls)."""
    roles, sched, via_group = setup.roles, setup.sched, setup.via_group
    strategy = snap.cliqueset.spec.update_strategy
    members = {
        name: clique
        for name, clique in sorted(cliques.items())
        if clique.spec.clique_name in roles and clique.metadata.deletion_timestamp is None
    }
    rolled = {
        name
        for name, clique in members.items()
        if gang in updating
        and cliqueset_rollout.hash_of(clique) != snap.hashes[clique.spec.clique_name]
    }
    # With inPlace IfPossible, a gang whose rolled Cliques change only images (and CPU and
    # memory, where pods resize) keeps its pods (and its PodGroup); else a gang all of
    # whose pods are made again moves to the PodGroup the set asks for.
    in_place = (
        strategy.in_place == InPlacePolicy.IF_POSSIBLE
        and bool(rolled)
        and all(
            _in_place(members[m], roles[members[m].spec.clique_name], snap, sched, via_group)
            for m in rolled
        )
    )
    whole = rolled and rolled == set(members) and not in_place
    move_to = sched.wanted.get(gang, "") if whole else ""
    kind = in_place if rolled else None
    if setup.group_first and move_to and move_to not in setup.observed_groups:
        return [], kind  # its new PodGroup first (made by this plan; the roll comes next)
    patches: list[Patch] = []
    for name, clique in members.items():
        found = gangs.changes.get(clique.metadata.name)
        change = found[1] if found is not None else None
        if name not in rolled:
            if change is not None:
                patches.append(_merge_patch(clique, change))
            continue
        # a Clique whose pods name their PodGroup leaves packing to the scheduler
        annotations = clique.metadata.annotations
        packs = sched.scheduler_packs and labels.ANNOTATION_POD_GROUP in annotations
        # its own part of the gang's new tree, where gangs are composite trees
        moved = sched.move_to(gang, clique) if whole else ""
        group = moved or annotations.get(labels.ANNOTATION_POD_GROUP, "")
        update = inplace.annotation(clique, cliqueset_rollout.hash_of(clique), in_place)
        tmpl = roles[clique.spec.clique_name]
        patches.append(
            _template_patch(
                clique, tmpl, snap, change, packs, moved, via_group(group, gang), update
            )
        )
    return patches, kind


def _status(
    snap: CliqueSetSnapshot,
    setup: _Setup,
    by_gang: dict[int, dict[str, Clique]],
    gangs: cliqueset_rollout.Gangs,
    rolls: _Rolls,
    missing: list[str],
    out: CliqueSetPlan,
) -> None:
    """The failure policy carried out (`_failure_policy`), and the set's status with its
    conditions (None when it would not change); the GangScheduling Event when it changes."""
    cqs = snap.cliqueset
    spec = cqs.spec
    facts = gangs.facts
    out.status = cliqueset_status.status(
        cqs,
        facts,
        gangs.outdated,
        existing=sum(1 for g in by_gang if by_gang[g]),
        template_hash=setup.set_hash,
        algorithm=snap.algorithm,
        failure=snap.failure,
        now=snap.now,
    )
    restart_now = set(rolls.restart_now)
    moves = setup.sched.wanted
    out.status.gang_restarts = _failure_policy(
        snap, rolls.failing, facts, rolls.touched, restart_now, out, moves
    )
    out.status.updated_in_place = sum(1 for f in facts if f.update_kind == "in-place")
    out.status.updated_by_replacement = sum(1 for f in facts if f.update_kind == "replaced")
    old_conditions = cqs.status.conditions if cqs.status is not None else []
    setter = conditions.Setter(old_conditions, snap.now, cqs.metadata.generation)
    ordered = spec.startup_type != StartupType.ANY_ORDER
    gang_condition = gang_scheduling.condition(setup.sched.decision, setter, ordered)
    out.status.conditions.append(gang_condition)
    if spec.resource_claims:
        waiting = [(g, why) for g, f in enumerate(facts) for why in f.waiting_why]
        status, reason, message = claims.condition(cqs, waiting, missing)
        out.status.conditions.append(setter.set(claims.CONDITION_CLAIMS, status, reason, message))
    if setup.queue is not None:
        out.status.queue, verdict = _admission(snap, setup.queue, by_gang, setup.queue_problem)
        out.status.conditions.append(setter.set(kueue.CONDITION_ADMITTED, *verdict))
    if spec.failure_policy.restart_policy == GangRestartPolicy.RECREATE_GANG:
        out.status.conditions += gang_failures.conditions(
            setter, out.restarting, out.failed, out.deferred
        )
    said = gang_scheduling.event(old_conditions, gang_condition)
    if said is not None:
        out.events.append(said)
    if out.status == cqs.status:
        out.status = None


def _autoscaled(cqs: CliqueSet) -> bool:
    """Whether a clique or a scaling group of the set has `autoscaling`."""
    template = cqs.spec.template
    return any(c.autoscaling is not None for c in template.cliques) or any(
        g.autoscaling is not None for g in template.scaling_groups
    )


def _members(
    snap: CliqueSetSnapshot, lay: scaling.Layout
) -> tuple[dict[int, dict[str, int]], Callable[[int], Mapping[str, scaling.Member]]]:
    """Each gang's instance counts (`scaling.instance_counts`; none without scaling groups)
    and a function from a gang to the members it should have (`scaling.wanted_members`),
    computed once per distinct count."""
    plain = scaling.wanted_members(lay, {})
    if not lay.groups:
        return {}, lambda gang: plain
    objects: dict[int, dict[str, CliqueScalingGroup]] = {}
    for obj in snap.scaling_groups:
        objects.setdefault(obj.spec.gang_index, {})[obj.spec.group_name] = obj
    cliques: dict[int, list[Clique]] = {}
    for clique in snap.cliques:
        cliques.setdefault(clique.spec.gang_index, []).append(clique)
    counts = {
        gang: scaling.instance_counts(lay, objects.get(gang, {}), cliques.get(gang, ()))
        for gang in range(snap.cliqueset.spec.replicas)
    }
    seen: dict[tuple[int, ...], Mapping[str, scaling.Member]] = {}

    def wanted_of(gang: int) -> Mapping[str, scaling.Member]:
        have = counts.get(gang)
        key = tuple(have.values()) if have is not None else ()
        found = seen.get(key)
        if found is None:
            found = seen[key] = scaling.wanted_members(lay, have or {})
        return found

    return counts, wanted_of


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
    objects = scaling.plan_objects(cqs, lay, snap.scaling_groups, counts, instances, bucket, owner)
    hpas = autoscaling.plan(cqs, lay, snap.hpas, bucket, owner)
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
        g: snap.kueue_workloads[name]
        for g in gangs
        if (name := kueue.group_name(cqs.metadata.name, g, snap.kueue_revision))
        in snap.kueue_workloads
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


#: Seconds before a plan looks again at a gang whose restart waits for the budget (the
#: gangs it waits for also wake the CliqueSet when they turn available).
DEFERRED_RESTART_REQUEUE = 5.0


def _failure_decisions(
    snap: CliqueSetSnapshot,
    by_gang: dict[int, dict[str, Clique]],
    facts: list[cliqueset_rollout.GangFacts],
) -> dict[int, tuple[dict[str, Clique], gang_failures.GangDecision]]:
    """`failurePolicy` over every gang that needs a look (`gang_failures.decide`): gang
    index -> (its live Cliques, the decision)."""
    policy = snap.cliqueset.spec.failure_policy
    out: dict[int, tuple[dict[str, Clique], gang_failures.GangDecision]] = {}
    tracked = policy.restart_policy == GangRestartPolicy.RECREATE_GANG
    lead = scaling.lead_member(scaling.layout(snap.cliqueset.spec))
    for index, gang_facts in enumerate(facts):
        # Only a gang that was available whole in its epoch can break. (Without the policy
        # a marked gang is still looked at: its restarts count in the status.)
        breached = tracked and bool(gang_facts.degraded) and gang_facts.was_available
        seen = tracked and gang_facts.available and not gang_facts.was_available
        if not breached and not gang_facts.marked and not seen:
            continue  # healthy and unmarked (read once per gang, kept with its verdict)
        gang = by_gang.get(index, {})
        members = {role: c for role, c in gang.items() if c.metadata.deletion_timestamp is None}
        decision = gang_failures.decide(
            policy,
            members,
            breached,
            snap.now,
            available_since=gang_facts.available_since,
        )
        if seen and lead in members:
            # The gang is available whole: its lead Clique records the epoch (one write per
            # gang and epoch), so that a later loss counts as a breach.
            decision.mark = (members[lead], gang_facts.epoch)
        out[index] = (members, decision)
    return out


def _failure_policy(
    snap: CliqueSetSnapshot,
    failing: dict[int, tuple[dict[str, Clique], gang_failures.GangDecision]],
    facts: list[cliqueset_rollout.GangFacts],
    touched: set[int],
    restart_now: set[int],
    out: CliqueSetPlan,
    move_to: Mapping[int, str] | None = None,
) -> int:
    """The decisions of `_failure_decisions` carried out: annotation patches of the gangs'
    Cliques (not of a gang another patch of this plan touches; a restart only for the
    gangs in `restart_now`, which the budget allows), Events, the gangs restarting and
    failed, the requeue; returns the restarts of all gangs."""
    policy = snap.cliqueset.spec.failure_policy
    total = 0
    for index, (members, decision) in sorted(failing.items()):
        total += gang_failures.restarts_of(members)
        if decision.failed:
            out.failed.append(index)
        if decision.restarting:
            out.restarting.append(index)
        requeue = decision.requeue_after
        if decision.restart and index not in restart_now:
            requeue = DEFERRED_RESTART_REQUEUE
        if requeue:
            out.requeue_after = min(out.requeue_after or requeue, requeue)
        if index in touched or not snap.expectations_satisfied:
            continue
        if decision.mark is not None:
            lead, epoch = decision.mark
            body = {
                "metadata": {
                    "resourceVersion": lead.metadata.resource_version,
                    "annotations": {gang_failures.ANNOTATION_AVAILABLE: epoch},
                }
            }
            out.patches.append(Patch(CLIQUES, lead.metadata.name, body, reason="GangAvailable"))
        if not decision.annotate:
            continue
        if decision.restart and index not in restart_now:
            continue
        # A restarted gang's pods are all made again: it moves to the wanted PodGroup.
        moved = (move_to or {}).get(index, "") if decision.restart else ""
        for _, clique in sorted(members.items()):
            annotate = dict(decision.annotate)
            if moved and clique.metadata.annotations.get(labels.ANNOTATION_POD_GROUP) != moved:
                annotate[labels.ANNOTATION_POD_GROUP] = moved
            body = {
                "metadata": {
                    "resourceVersion": clique.metadata.resource_version,
                    "annotations": annotate,
                }
            }
            reason = (
                "GangRestart"
                if decision.restart
                else "ForgiveRestarts"
                if set(decision.annotate) == {gang_failures.ANNOTATION_FORGIVEN}
                else "GangBreach"
            )
            count = decision.annotate.get(gang_failures.ANNOTATION_RESTARTS)
            expect = gang_failures.expect_token(clique.metadata.name, count) if count else ""
            out.patches.append(
                Patch(CLIQUES, clique.metadata.name, body, reason=reason, expect=expect)
            )
        if decision.restart:
            n = gang_failures.counted_restarts(members) + 1
            out.events.append(
                Event(
                    "Warning",
                    "GangRestart",
                    f"gang {index} below minAvailable ({', '.join(facts[index].degraded)}): "
                    f"recreating all its pods (restart {n} of {policy.max_gang_restarts})",
                )
            )
    return total


def _invalid(snap: CliqueSetSnapshot, message: str) -> CliqueSetPlan:
    """An InvalidSpec: no writes; the status says why, and a Warning Event while the
    status changes. The verdicts of the last valid plan are kept for the next."""
    cqs = snap.cliqueset
    out = CliqueSetPlan(judgement=snap.previous)
    status = cliqueset_status.invalid(cqs, message, now=snap.now)
    if status != cqs.status:
        out.status = status
        out.events.append(Event("Warning", REASON_INVALID_SPEC, message))
    return out


def _merge_patch(clique: Clique, change: Change) -> Patch:
    """A resourceVersion-guarded merge patch (a stale view gets a 409, not a lost update)."""
    meta: dict[str, Any] = {"resourceVersion": clique.metadata.resource_version}
    if change.labels:
        meta["labels"] = change.labels
    if change.annotations:
        meta["annotations"] = change.annotations
    body: dict[str, Any] = {"metadata": meta}
    if change.spec:
        body["spec"] = change.spec
    reason = "Relabel" if change.labels else "Resize"
    return Patch(CLIQUES, clique.metadata.name, body, reason=reason)


def _in_place(
    clique: Clique,
    tmpl: CliqueTemplate,
    snap: CliqueSetSnapshot,
    sched: gang_scheduling.GangPlan,
    via_group: Callable[[str, int], bool],
) -> bool:
    """Whether `clique`'s pods can take its new template in place (`inplace`): the
    template it gets if it keeps its PodGroup differs from its own only in images (and CPU
    and memory, where the server resizes pods)."""
    gang = clique.spec.gang_index
    group = clique.metadata.annotations.get(labels.ANNOTATION_POD_GROUP, "")
    packs = sched.scheduler_packs and bool(group)
    new = builders.gang_template(
        snap.cliqueset,
        gang,
        tmpl,
        scheduler_packs=packs,
        claims_via_group=via_group(group, gang),
        kueue_revision=snap.kueue_revision,
    )
    try:
        return inplace.can_update_in_place(clique.spec.template, new, snap.resize_served)
    except ValueError:
        return False


def _moving(snap: CliqueSetSnapshot) -> list[int]:
    """Gangs every live Clique of which is outdated: a roll makes them whole again, and so
    moves them to the PodGroup the set asks for now."""
    hashes = snap.hashes
    out: dict[int, bool] = {}
    for c in snap.cliques:
        if c.metadata.deletion_timestamp is not None:
            continue
        outdated = cliqueset_rollout.hash_of(c) != hashes.get(c.spec.clique_name)
        out[c.spec.gang_index] = out.get(c.spec.gang_index, True) and outdated
    return sorted(g for g, moving in out.items() if moving)


def _claims_via_group(
    snap: CliqueSetSnapshot, wanted: Mapping[int, str]
) -> Callable[[str, int], bool]:
    """Whether the pods of a gang in PodGroup `group` get its Gang-scope claims through the
    group (`claims.via_group`)."""
    cqs = snap.cliqueset
    if "workload-claims" not in snap.gang_features or not cqs.spec.resource_claims:
        return lambda group, gang: False
    groups = {g.metadata.name: g for g in snap.pod_groups}
    listed = claims.group_claims(cqs)

    def via(group: str, gang: int) -> bool:
        if not group:
            return False
        found = groups.get(group)
        if found is None:  # made with the set's claims, if it is the one the set asks for
            return group == wanted.get(gang)
        return found.claim_templates == listed

    return via


def _claim_objects(
    snap: CliqueSetSnapshot, bucket: str, creates: list[Create], patches: list[Patch]
) -> claims.ClaimPlan:
    """The claim objects of the set's Cliques (`claims.plan`): those every Clique names,
    including the Cliques this plan makes and the templates it rolls to."""
    cqs = snap.cliqueset
    if not cqs.spec.resource_claims and not any(snap.claim_objects.values()):
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
    for group in snap.pod_groups:
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
    return claims.plan(cqs, refs, snap.claim_objects, bucket, owner)


def _template_patch(
    clique: Clique,
    tmpl: CliqueTemplate,
    snap: CliqueSetSnapshot,
    change: Change | None,
    scheduler_packs: bool = False,
    pod_group: str = "",
    claims_via_group: bool = False,
    update: str = "",
) -> Patch:
    """Roll one Clique to the desired template (JSON patch). The `test` of its UID makes
    sure it is the Clique we decided about; its resourceVersion is deliberately not a
    precondition: the Clique controller writes its status all the time, the new template
    does not depend on it, and the rollout budget is guarded by expectations instead. For
    the same reason annotations are set one by one: an annotation the Clique controller
    wrote meanwhile (the finished pods it counts, when a gang's breach began) is kept."""
    annotation = "/metadata/annotations/"
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/uid", "value": clique.metadata.uid},
        {
            "op": "replace",
            "path": "/spec/template",
            "value": builders.gang_template(
                snap.cliqueset,
                clique.spec.gang_index,
                tmpl,
                scheduler_packs=scheduler_packs,
                claims_via_group=claims_via_group,
                kueue_revision=snap.kueue_revision,
            ),
        },
        {
            "op": "add",
            "path": "/metadata/labels/" + pointer_key(labels.LABEL_TEMPLATE_HASH),
            "value": snap.hashes[tmpl.name],
        },
        {
            "op": "add",
            "path": annotation + pointer_key(labels.ANNOTATION_HASH_ALGORITHM),
            "value": str(snap.algorithm),
        },
    ]
    if update:
        path = annotation + pointer_key(labels.ANNOTATION_UPDATE)
        ops.append({"op": "add", "path": path, "value": update})
    if pod_group and clique.metadata.annotations.get(labels.ANNOTATION_POD_GROUP) != pod_group:
        path = annotation + pointer_key(labels.ANNOTATION_POD_GROUP)
        ops.append({"op": "add", "path": path, "value": pod_group})
    if labels.ANNOTATION_PREVIOUS_HASHES in clique.metadata.annotations:
        # (a 422 if it went meanwhile: the reconcile is retried from a fresh view)
        path = annotation + pointer_key(labels.ANNOTATION_PREVIOUS_HASHES)
        ops.append({"op": "remove", "path": path})
    for key, value in (change.spec if change is not None else {}).items():
        ops.append({"op": "add", "path": f"/spec/{key}", "value": value})
    return Patch(
        CLIQUES,
        clique.metadata.name,
        ops,
        patch_type="json",
        reason="RollingUpdate",
        expect=f"{clique.metadata.name}@{snap.hashes[tmpl.name]}",
    )
