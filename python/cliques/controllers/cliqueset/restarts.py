"""Restarts and rolls of the CliqueSet planner (pure): the failure policy's decisions over
the gangs (`gang_failures`), the gangs it restarts now within the rollout budget, the
outdated gangs rolled in what budget is left (`rollout.pick`; surge gangs add to it,
`surge`), each as JSON patches of its
Cliques' templates or merge patches of what changes in place, and the failure policy
carried out (annotations, Events, requeues)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.api.policies import GangRestartPolicy, InPlacePolicy
from cliques.controllers.base.actions import Event, Patch, pointer_key
from cliques.controllers.cliqueset import bodies
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset.rollout import Change
from cliques.controllers.cliqueset.snapshot import CliqueSetPlan, CliqueSetSnapshot, Setup
from cliques.controllers.features import drain, gang_failures, gang_scheduling, inplace, scaling
from cliques.kube.resources import CLIQUES


@dataclass
class Rolls:
    """What the restart and rollout phase decided."""

    failing: dict[int, tuple[dict[str, Clique], gang_failures.GangDecision]]
    restart_now: list[int] = field(default_factory=list)
    deferred: list[int] = field(default_factory=list)
    #: gangs moved off drained nodes now, and those that wait for the budget (`drain`)
    moved: list[int] = field(default_factory=list)
    move_waiting: list[int] = field(default_factory=list)
    #: gangs a patch of this plan touches (rolled or changed in place)
    touched: set[int] = field(default_factory=set)
    patches: list[Patch] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def restarts_and_rolls(
    snap: CliqueSetSnapshot,
    setup: Setup,
    by_gang: dict[int, dict[str, Clique]],
    gangs: cliqueset_rollout.Gangs,
    stuck: drain.Stuck | None = None,
) -> Rolls:
    """The gangs the failure policy restarts now (`restart_now`, or `deferred` beyond the
    budget), then the gangs moved off drained nodes (`drain.pick`, within what the budget
    leaves against every gang down), then the outdated gangs to roll
    (`cliqueset_rollout.pick`) in what budget is left, with the in-place changes: their
    patches and the RollingUpdate Event."""
    strategy = snap.cliqueset.spec.update_strategy
    out = Rolls(failing=_failure_decisions(snap, by_gang, gangs.facts))
    # Gangs below the partition keep their template: restarted as they are, never rolled.
    rollable, _ = cliqueset_rollout.partitioned(gangs.outdated, strategy.partition)
    outdated = set(rollable)
    # A surge gang the world broke after it was available stands in for no gang any more:
    # it no longer adds to what may be down (one that is starting is down, and pays for
    # itself).
    broken_surge = sum(
        1
        for f in gangs.facts[setup.surge.replicas :]
        if not f.available and not f.starting and not (f.degraded and not f.was_available)
    )
    allowed = setup.surge.allowance(strategy.max_unavailable) - broken_surge
    budget = cliqueset_rollout.restart_budget(
        strategy.max_unavailable, gangs.facts, allowed=allowed
    )
    changed = {gang for gang, _ in gangs.changes.values()}
    for index, (_, decision) in sorted(out.failing.items()):
        # An outdated gang rolls instead; one changed in place now is restarted next pass.
        if decision.restart and index not in outdated and index not in changed:
            if len(out.restart_now) < budget and snap.expectations_satisfied:
                out.restart_now.append(index)
            else:
                out.deferred.append(index)
    down = cliqueset_rollout.down(gangs.facts)
    paid = 0
    if stuck is not None and stuck.gangs:
        # A gang short of pods that was never available whole is the operator's; without
        # `RecreateGang` no epoch is tracked and a broken gang counts as the world's
        # (`GangFacts.was_available`), else the gangs a lost node broke would block each
        # other's moves.
        ours = {
            g
            for g, f in enumerate(gangs.facts)
            if not f.available and (f.starting or (f.degraded and not f.was_available))
        }
        out.moved, out.move_waiting = drain.pick(
            stuck.gangs,
            allowed,
            down=down,
            ours=ours,
            spent=out.restart_now,
            exclude=set(out.restart_now) | changed,
        )
        if not snap.expectations_satisfied:
            out.move_waiting = sorted(out.moved + out.move_waiting)
            out.moved = []
        paid = sum(1 for g in out.moved if g not in down)
        unheld = {g for g in out.moved if drain.only_lost(stuck.gangs.get(g, ()), stuck.why)}
        out.patches += _move_patches(snap, by_gang, out.moved, setup, unheld)
        out.events += [
            drain.move_event(g, stuck.gangs[g], stuck.why, stuck.requested.get(g, ()))
            for g in out.moved
        ]
    moving = set(out.moved) | set(out.move_waiting)
    to_update = (
        cliqueset_rollout.pick(
            strategy.type,
            strategy.max_unavailable,
            [g for g in rollable if g not in moving],
            down,
            spent=len(out.restart_now) + paid,
            allowed=allowed,
        )
        if snap.expectations_satisfied
        else []
    )
    updating = set(to_update)
    out.touched = updating | changed | set(out.moved)
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
            f"{setup.set_hash} ({len(rollable) - len(to_update)} more to go{how})"
        )
        out.events.append(Event("Normal", "RollingUpdate", message))
    return out


def _move_patches(
    snap: CliqueSetSnapshot,
    by_gang: dict[int, dict[str, Clique]],
    moved: list[int],
    setup: Setup,
    unheld: Collection[int] = (),
) -> list[Patch]:
    """The annotation patches that move each gang of `moved` (`drain.move_annotations`;
    those of `unheld`, off lost nodes only, make their pods again at once),
    resourceVersion-guarded, each expected back through the watch (as a gang restart's),
    and a gang whose pods are all made again moves to the PodGroup the set asks for (on 1.35
    to its current Workload, `workload_move`)."""
    out: list[Patch] = []
    for gang in moved:
        members = {
            role: c
            for role, c in by_gang.get(gang, {}).items()
            if c.metadata.deletion_timestamp is None
        }
        marks = drain.move_annotations(
            members, snap.now, setup.sched.wanted.get(gang, ""), held=gang not in unheld
        )
        for name, (annotate, count) in marks.items():
            clique = next(c for c in members.values() if c.metadata.name == name)
            # (its pods are all made again, in a move or in the levelling that finishes one)
            annotate.update(workload_move(clique, setup.sched.workload_to_move_to))
            body = {
                "metadata": {
                    "resourceVersion": clique.metadata.resource_version,
                    "annotations": annotate,
                }
            }
            expect = gang_failures.expect_token(name, count)
            out.append(Patch(CLIQUES, name, body, reason="GangMove", expect=expect))
    return out


def _gang_patches(
    snap: CliqueSetSnapshot,
    setup: Setup,
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
        patch = _template_patch(
            clique, tmpl, snap, change, packs, moved, via_group(group, gang), update
        )
        for key, value in workload_move(clique, sched.workload_to_move_to if whole else "").items():
            patch.patch.append(
                {"op": "add", "path": _ANNOTATIONS + pointer_key(key), "value": value}
            )
        patches.append(patch)
    return patches, kind


_ANNOTATIONS = "/metadata/annotations/"


def workload_move(clique: Clique, workload: str) -> dict[str, str]:
    """The annotation that moves a Clique of a gang whose pods are all made again to
    Workload `workload` (`GangPlan.workload_to_move_to`, 1.35), none when it records no
    Workload or that one already."""
    have = clique.metadata.annotations.get(labels.ANNOTATION_WORKLOAD)
    return {labels.ANNOTATION_WORKLOAD: workload} if workload and have and have != workload else {}


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


def failure_policy(
    snap: CliqueSetSnapshot,
    failing: dict[int, tuple[dict[str, Clique], gang_failures.GangDecision]],
    facts: list[cliqueset_rollout.GangFacts],
    touched: set[int],
    restart_now: set[int],
    out: CliqueSetPlan,
    move_to: Mapping[int, str] | None = None,
    workload: str = "",
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
            if decision.restart:
                annotate.update(workload_move(clique, workload))
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
    new = bodies.gang_template(
        snap.cliqueset,
        gang,
        tmpl,
        scheduler_packs=packs,
        claims_via_group=via_group(group, gang),
        kueue_revision=snap.kueue.revision,
    )
    try:
        return inplace.can_update_in_place(clique.spec.template, new, snap.inplace.resize_served)
    except ValueError:
        return False


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
            "value": bodies.gang_template(
                snap.cliqueset,
                clique.spec.gang_index,
                tmpl,
                scheduler_packs=scheduler_packs,
                claims_via_group=claims_via_group,
                kueue_revision=snap.kueue.revision,
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
