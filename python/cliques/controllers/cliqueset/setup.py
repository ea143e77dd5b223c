"""What every phase of a CliqueSet's plan reads (pure), or why the set cannot be planned.

`read` gives the plan's `Setup` (the start order, the bucket, the gang scheduling plan, the
Kueue queue, the scaling layout and each gang's instance counts, the subdomain policy, the
set's hash and surge) or the message of an InvalidSpec: a spec the canonical form refused,
counts beyond `bounds`, a startsAfter cycle, a gang scheduling request the cluster cannot
serve, pods that could never be scheduled, claims the cluster does not serve, a queued set
that scales. `invalid` is the plan of an InvalidSpec; `reserved_keys_events` the Warning
that keys of the operator's are left out of the templates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from cliques import _core
from cliques.api.backends import GangBackend
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.cliqueset_status import REASON_INVALID_SPEC
from cliques.api.scalinggroup import CliqueScalingGroup
from cliques.controllers.base import bounds, startup
from cliques.controllers.base.actions import Event
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset import status as cliqueset_status
from cliques.controllers.cliqueset import surge as surge_gangs
from cliques.controllers.cliqueset.snapshot import CliqueSetPlan, CliqueSetSnapshot, Setup
from cliques.controllers.features import (
    claims,
    gang_scheduling,
    kueue,
    placement,
    scaling,
    subdomains,
)


def read(snap: CliqueSetSnapshot, surge: surge_gangs.Surge | None = None) -> Setup | str:
    """What the phases read, or why the spec cannot be planned (an InvalidSpec); `surge`:
    the surge gangs kept (planned in `snap.cliqueset`'s replicas), if any."""
    cqs = snap.cliqueset
    spec, meta = cqs.spec, cqs.metadata
    if snap.invalid:
        return snap.invalid
    # Before anything is counted out gang by gang: a set stored before the CRD counted
    # scaling groups may ask for a million Cliques (`bounds`).
    too_many = bounds.counts_invalid(cqs)
    if too_many:
        return too_many
    try:
        deps = startup.dependencies(spec)
    except startup.StartupCycle as exc:
        return str(exc)
    bucket = str(_core.bucket_of(meta.namespace, meta.name))
    # Where a gang's DRA claims go through its PodGroup, its pods are made only once the
    # group exists (a pod made before its group gets no share of the group's claim on
    # 1.36): the group of a gang that will move is made ahead of the roll.
    group_first = (
        snap.gangs.api.keeps("workload-claims")
        and GangBackend(spec.gang_scheduling.backend) != GangBackend.NONE
        and bool(claims.group_claims(cqs))
    )
    lay = scaling.layout(spec)
    counts, wanted_of = _members(snap, lay)
    # A group scaled by hand (`kubectl scale cqsg`) counts as its object says, once the
    # template's replicas this plan applies to it is in.
    scaled = bounds.scaled_invalid(cqs, _counts_patched(snap, lay, counts))
    if scaled:
        return scaled
    sched = gang_scheduling.plan(
        cqs,
        snap.cliques,
        snap.gangs.workloads,
        api=snap.gangs.api,
        bucket=bucket,
        groups=snap.gangs.groups,
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
    return Setup(
        deps=deps,
        bucket=bucket,
        sched=sched,
        group_first=group_first and sched.decision.backend == GangBackend.WORKLOAD,
        start_gates=gang_scheduling.start_gates(sched.decision),
        queue=queue,
        queue_problem=(
            kueue.problem(queue, snap.kueue.served, snap.kueue.local_queues, meta.namespace)
            if queue is not None
            else ""
        ),
        via_group=_claims_via_group(snap, sched.wanted),
        observed_groups=(
            frozenset(g.metadata.name for g in snap.gangs.groups) if group_first else frozenset()
        ),
        roles={c.name: c for c in spec.template.cliques},
        lay=lay,
        counts=counts,
        wanted_of=wanted_of,
        policy_of=functools.partial(subdomains.policy, cqs, snap.cliques),
        set_hash=cliqueset_status.set_hash(spec, snap.hashes),
        surge=surge if surge is not None else surge_gangs.of(cqs),
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
    if spec.resource_claims and not snap.claims.served:
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


def reserved_keys_events(cqs: CliqueSet) -> list[Event]:
    """Once per generation, a Warning that keys of the operator's in the templates are left
    out (`bounds`)."""
    if cqs.status is not None and cqs.status.observed_generation == cqs.metadata.generation:
        return []
    reserved = bounds.reserved_keys_message(cqs)
    return [Event("Warning", bounds.REASON_RESERVED_KEYS, reserved)] if reserved else []


def _autoscaled(cqs: CliqueSet) -> bool:
    """Whether a clique or a scaling group of the set has `autoscaling`."""
    template = cqs.spec.template
    return any(c.autoscaling is not None for c in template.cliques) or any(
        g.autoscaling is not None for g in template.scaling_groups
    )


def _counts_patched(
    snap: CliqueSetSnapshot, lay: scaling.Layout, counts: Mapping[int, Mapping[str, int]]
) -> dict[int, dict[str, int]]:
    """Each gang's instance counts (`_members`) with the template's `replicas` in where this
    plan applies it to the gang's CliqueScalingGroup (`scaling.spec_patch`)."""
    out = {gang: dict(have) for gang, have in counts.items()}
    for obj in snap.scaling.groups:
        group = lay.group(obj.spec.group_name)
        have = out.get(obj.spec.gang_index)
        if group is None or have is None or obj.metadata.deletion_timestamp is not None:
            continue
        patch = scaling.spec_patch(obj, group)
        if patch is not None and "replicas" in patch.get("spec", {}):
            have[group.name] = patch["spec"]["replicas"]
    return out


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
    for obj in snap.scaling.groups:
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


def invalid(snap: CliqueSetSnapshot, message: str) -> CliqueSetPlan:
    """An InvalidSpec: no writes; the status says why, and a Warning Event while the
    status changes. The verdicts of the last valid plan are kept for the next."""
    cqs = snap.cliqueset
    out = CliqueSetPlan(judgement=snap.previous)
    status = cliqueset_status.invalid(cqs, message, now=snap.now)
    if status != cqs.status:
        out.status = status
        out.events.append(Event("Warning", REASON_INVALID_SPEC, message))
    return out


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
    if not snap.gangs.api.keeps("workload-claims") or not cqs.spec.resource_claims:
        return lambda group, gang: False
    groups = {g.metadata.name: g for g in snap.gangs.groups}
    listed = claims.group_claims(cqs)

    def via(group: str, gang: int) -> bool:
        if not group:
            return False
        found = groups.get(group)
        if found is None:  # made with the set's claims, if it is the one the set asks for
            return group == wanted.get(gang)
        return found.claim_templates == listed

    return via
