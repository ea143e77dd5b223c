"""The rollout of a CliqueSet (pure): a verdict on each gang, and which gangs roll now.

- A gang is outdated when one of its Cliques carries a template hash other than the desired
  one. Non-template changes (a clique's replicas, minAvailable, startsAfter, startGate) are
  in-place changes of every gang: they resize, they do not roll.
- A Clique labelled with a hash from another hash algorithm whose template, hashed with the
  current algorithm, is the desired hash is re-labelled (and its old hash recorded as a
  previous hash, so its pods are re-labelled too): an operator upgrade never rolls a gang.
  The hashes under the current algorithm come from the snapshot (`rehashes`), computed by
  the controller.
- `partitioned`: gangs below `updateStrategy.partition` are held on the template they run;
  only the outdated gangs at or above it are rolled.
- `pick`: with RollingUpdate, the budget is `maxUnavailable` minus the gangs already on the
  desired template that are not available (what the rollout took down and has not brought
  back, and new gangs still starting). Outdated gangs that are unavailable are picked
  first, then available ones, every pick spending one unit of the budget: a gang that only
  looks unavailable because a resize in the same edit is still adding its pods is not
  "already down" and rolled for free, so a template change and a resize together still
  roll `maxUnavailable` gangs at a time. With Recreate, all at once. Surge gangs
  (`surge`) add to the budget what they stand in for. Everything the
  decision needs is read from the API objects, so an operator restarted in the middle of a
  rollout continues it without exceeding the budget.

A gang's verdict is a pure function of its Cliques and the `Context`, so the verdicts of
one plan (a `Judgement`) are handed to the next plan of the same CliqueSet, which judges
again only the gangs whose Cliques are other objects: the informer cache replaces an
object on every change and never mutates one, so while a thousand Cliques report their
pods one by one, a plan re-judges only the few gangs that changed.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cliques.api import labels
from cliques.api.clique import CONDITION_READY, Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import CONDITION_REPLICA_FAILURE, Condition, find_condition
from cliques.api.policies import GangRestartPolicy, UpdateStrategyType
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique import status as clique_status
from cliques.controllers.features import gang_failures, gang_trees, inplace, scaling, subdomains

#: Ready=False reasons of a Clique that is not on its way up: it grew, or it broke.
_NOT_STARTING = frozenset({clique_status.REASON_BELOW_MIN, clique_status.REASON_RESIZING})


def hash_of(clique: Clique) -> str:
    """The template hash a Clique is labelled with."""
    return clique.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, "")


def algorithm_of(clique: Clique) -> int:
    """The hash algorithm of a Clique's template-hash label (0 if unknown)."""
    try:
        return int(clique.metadata.annotations.get(labels.ANNOTATION_HASH_ALGORITHM, "0"))
    except ValueError:
        return 0


def needs_rehash(clique: Clique, hashes: Mapping[str, str], algorithm: int) -> bool:
    """Whether the verdict on `clique` needs its template's hash under `algorithm`: it is
    labelled with another hash than the desired one, by another algorithm."""
    want = hashes.get(clique.spec.clique_name)
    return (
        want is not None
        and clique.metadata.deletion_timestamp is None
        and hash_of(clique) != want
        and algorithm_of(clique) != algorithm
    )


@dataclass
class Change:
    """What must change in place on one Clique (no roll)."""

    spec: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Context:
    """Everything of the CliqueSet a gang's verdict depends on (besides its Cliques)."""

    name: str
    #: role -> (desired hash, replicas, minAvailable)
    wanted: dict[str, tuple[str, int, int]]
    #: role -> the roles it starts after
    deps: dict[str, list[str]]
    #: the clique templates in order: (role, replicas, minAvailable)
    templates: tuple[tuple[str, int, int], ...]
    algorithm: int
    #: start order is kept by start gates after placement (`startGate` on Cliques with
    #: `startsAfter`)
    start_gates: bool = False
    #: the gangs' epochs are tracked (`failurePolicy: RecreateGang`: only a gang that was
    #: available whole can break); without it, no gang needs one
    epochs: bool = False
    #: the scaling groups, and the roles an HPA scales (`scaling`)
    layout: scaling.Layout = field(default_factory=scaling.Layout)


def context(
    cqs: CliqueSet,
    hashes: Mapping[str, str],
    deps: dict[str, list[str]],
    algorithm: int,
    *,
    start_gates: bool = False,
) -> Context:
    cliques = cqs.spec.template.cliques
    return Context(
        name=cqs.metadata.name,
        wanted={t.name: (hashes[t.name], t.replicas, t.effective_min_available) for t in cliques},
        deps=deps,
        templates=tuple((t.name, t.replicas, t.effective_min_available) for t in cliques),
        algorithm=algorithm,
        start_gates=start_gates,
        epochs=cqs.spec.failure_policy.restart_policy == GangRestartPolicy.RECREATE_GANG,
        layout=scaling.layout(cqs.spec),
    )


@dataclass(slots=True)
class GangFacts:
    """What the rollout and the status need to know about one gang, read in one pass."""

    #: every clique template has its Clique, Ready for its current template
    available: bool = False
    #: every clique has minAvailable ready pods (whatever their template)
    ready: bool = False
    #: every clique reports all its pods on its current template
    updated: bool = False
    #: `gang/clique` of the Cliques below minAvailable: Ready before in their epoch, and
    #: lost ready pods since (`clique_planner` reason BelowMinAvailable), in a gang that is
    #: not starting (one that is has not been available since it began: no breach)
    degraded: list[str] = field(default_factory=list)
    #: not available and on its way up: a Clique missing, with no status for its epoch
    #: yet, or not Ready because it starts or rolls (not because it grew or broke)
    starting: bool = False
    #: `gang/clique` of the Cliques with pods waiting for a node (PodsUnschedulable)
    unschedulable: list[str] = field(default_factory=list)
    #: the messages of those Cliques' PodsUnschedulable conditions (the scheduler's why)
    waiting_why: list[str] = field(default_factory=list)
    #: `gang/clique (reason)` of the Cliques whose containers wait (ContainersWaiting:
    #: ImagePullBackOff, CrashLoopBackOff, ...)
    containers_waiting: list[str] = field(default_factory=list)
    #: when the gang became available (its Cliques' latest Ready transition), if it is
    available_since: str = ""
    #: the gang's epoch (its restart count and its Cliques' template hashes), and whether
    #: it was available whole in it (`gang_failures.was_available`): only then can it break
    epoch: str = ""
    was_available: bool = False
    #: (Clique name, its ReplicaFailure condition) of the Cliques whose writes are refused
    failing: list[tuple[str, Condition]] = field(default_factory=list)
    #: a Clique of the gang records a restart or a breach (`gang_failures.unmarked`), so
    #: the failure policy must look at it even while it is not degraded
    marked: bool = False
    #: a Clique of the gang is not being deleted
    live: bool = False
    #: the subdomains its live Cliques record (`subdomains.wanted_services`)
    subdomains: tuple[str, ...] = ()
    #: per scaling group: (group, instances made, Ready, on the current templates), for
    #: its CliqueScalingGroup's status (`scaling.plan_objects`)
    instances: tuple[tuple[str, int, int, int], ...] = ()
    #: the gang is on the current templates, last rolled in place (`inplace.IN_PLACE`) or
    #: by replacing its pods (`inplace.REPLACE`): "in-place", "replaced", or ""
    update_kind: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The verdict on one gang: its facts, whether it is outdated, in-place changes."""

    facts: GangFacts
    outdated: bool
    #: (Clique name, change) of the Cliques to change in place (resize, re-label)
    changes: tuple[tuple[str, Change], ...]


@dataclass(frozen=True)
class Judgement:
    """The verdicts of one plan under one context, per gang with the Cliques judged.

    It holds the Cliques it judged, so no other object can take their identity; a gang of
    other but equal objects is reused too, as its verdict would be the same.
    """

    context: Context
    gangs: Mapping[int, tuple[tuple[Clique, ...], Verdict]]
    #: gang -> its instance counts (`scaling.instance_counts`) when judged, for the gangs
    #: of a set with scaling groups
    counts: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    #: the gang trees planned with these verdicts (`gang_trees.Memo`), reused the same way
    trees: gang_trees.Memo | None = None
    #: the planner's sort of the Cliques by gang (`planner._members_by_gang`), kept for
    #: the next plan of the set
    members: object = None
    #: what `judge_gangs` was given by gang and what it gathered (`Gangs`' replicas,
    #: facts, changes and outdated), for the next plan (`_judged_again`)
    by_gang: Mapping[int, Mapping[str, Clique]] | None = None
    gathered: tuple[int, list[GangFacts], dict[str, tuple[int, Change]], list[int]] | None = None

    def verdict(
        self,
        ctx: Context,
        gang: int,
        members: tuple[Clique, ...],
        counts: Mapping[str, int] | None = None,
    ) -> Verdict | None:
        """The verdict reached on these very `members` (and instance `counts`) under `ctx`,
        if any."""
        if ctx != self.context:
            return None
        entry = self.gangs.get(gang)
        # Identical objects compare equal without reading a field.
        if entry is None or entry[0] != members:
            return None
        if (counts or {}) != self.counts.get(gang, {}):
            return None
        return entry[1]


@dataclass(frozen=True)
class Gangs:
    """The verdicts on gangs `0..replicas-1`, gathered."""

    facts: list[GangFacts]
    #: Clique name -> (its gang, its in-place change)
    changes: dict[str, tuple[int, Change]]
    outdated: list[int]
    judgement: Judgement


def judge_gangs(
    by_gang: dict[int, dict[str, Clique]],
    replicas: int,
    ctx: Context,
    rehashes: Mapping[str, str],
    previous: Judgement | None,
    counts: Mapping[int, Mapping[str, int]] | None = None,
) -> Gangs:
    """The verdicts on gangs `0..replicas-1` (`by_gang`: gang -> member name -> Clique;
    `counts`: gang -> its instance count of each scaling group); those `previous` reached
    on the same Cliques and counts under the same context are reused."""
    counts = counts or {}
    if previous is not None and not counts and not previous.counts:
        again = _judged_again(by_gang, replicas, ctx, rehashes, previous)
        if again is not None:
            return again
    facts: list[GangFacts] = []
    changes: dict[str, tuple[int, Change]] = {}
    outdated: list[int] = []
    judged: dict[int, tuple[tuple[Clique, ...], Verdict]] = {}
    # The context is compared once per plan, not once per gang (`Judgement.verdict`): a
    # plan of a set of thousands of gangs mostly reuses verdicts.
    known = previous.gangs if previous is not None and previous.context == ctx else {}
    known_counts = previous.counts if previous is not None else {}
    empty: Mapping[str, int] = {}
    for gang in range(replicas):
        members = by_gang.get(gang)
        if not members:
            facts.append(GangFacts(starting=True))  # to be created: on its way up
            continue
        key = tuple(members.values())
        have = counts.get(gang, empty)
        entry = known.get(gang)
        # Identical objects compare equal without reading a field.
        if entry is not None and entry[0] == key and have == known_counts.get(gang, empty):
            verdict = entry[1]
        else:
            verdict = judge(gang, members, ctx, rehashes, have)
        judged[gang] = (key, verdict)
        facts.append(verdict.facts)
        if verdict.outdated:
            outdated.append(gang)
        for name, change in verdict.changes:
            changes[name] = (gang, change)
    kept = {g: counts[g] for g in judged if g in counts}
    gathered = (replicas, facts, changes, outdated)
    judgement = Judgement(ctx, judged, kept, by_gang=by_gang, gathered=gathered)
    return Gangs(list(facts), dict(changes), list(outdated), judgement)


def _judged_again(
    by_gang: dict[int, dict[str, Clique]],
    replicas: int,
    ctx: Context,
    rehashes: Mapping[str, str],
    previous: Judgement,
) -> Gangs | None:
    """`judge_gangs` from what `previous` gathered, reading only the gangs whose member
    dicts are not the very ones it was given (a set without scaling groups, under the
    same context and replicas, its gangs the same in the same order: the planner's
    `_members_again` hands unchanged gangs on as they were); None where it cannot tell,
    or where a gang judged again changes whether it is outdated or has in-place changes
    (their lists keep the order of the gangs: those are gathered again in full)."""
    last, gathered = previous.by_gang, previous.gathered
    if last is None or gathered is None or gathered[0] != replicas or previous.context != ctx:
        return None
    if list(by_gang) != list(last):
        return None
    _, facts, changes, outdated = gathered
    judged = dict(previous.gangs)
    facts = list(facts)
    empty: Mapping[str, int] = {}
    gangs = list(by_gang)
    for gang in itertools.compress(gangs, map(operator.is_not, by_gang.values(), last.values())):
        if gang >= replicas:
            continue
        members = by_gang[gang]
        entry = judged.get(gang)
        if not members or entry is None:
            return None
        key = tuple(members.values())
        # (as `judge_gangs`: identical objects compare equal without reading a field)
        verdict = entry[1] if entry[0] == key else judge(gang, members, ctx, rehashes, empty)
        if verdict.outdated != entry[1].outdated or verdict.changes or entry[1].changes:
            return None
        judged[gang] = (key, verdict)
        facts[gang] = verdict.facts
    gathered = (replicas, facts, changes, outdated)
    judgement = Judgement(ctx, judged, {}, by_gang=by_gang, gathered=gathered)
    return Gangs(list(facts), dict(changes), list(outdated), judgement)


def judge(
    gang: int,
    members: dict[str, Clique],
    ctx: Context,
    rehashes: Mapping[str, str],
    counts: Mapping[str, int] | None = None,
) -> Verdict:
    """One gang's verdict (a pure function of its Cliques, its instance counts and the
    context)."""
    outdated, changes = _classify(gang, members, ctx, rehashes)
    facts = _gang_facts(gang, members, ctx, counts or {})
    facts.update_kind = _update_kind(members, ctx)
    return Verdict(facts=facts, outdated=outdated, changes=changes)


def _classify(
    gang: int, members: dict[str, Clique], ctx: Context, rehashes: Mapping[str, str]
) -> tuple[bool, tuple[tuple[str, Change], ...]]:
    """Whether the gang is outdated, and the in-place changes of its Cliques (resize,
    re-label). The common case (a Clique that needs nothing) is a few comparisons."""
    hash_label = labels.LABEL_TEMPLATE_HASH
    changes: list[tuple[str, Change]] = []
    stale = False
    for clique in members.values():
        role = clique.spec.clique_name
        want_role = ctx.wanted.get(role)
        if want_role is None or clique.metadata.deletion_timestamp is not None:
            continue
        want, replicas, min_available = want_role
        change: Change | None = None
        if clique.metadata.labels.get(hash_label, "") != want:
            if algorithm_of(clique) != ctx.algorithm and rehashes.get(clique.metadata.name) == want:
                change = Change()
                _relabel(change, clique, want, ctx.algorithm)
            else:
                stale = True
        cspec = clique.spec
        # (an HPA sets the replicas of an autoscaled clique: the template's are its start)
        if cspec.replicas != replicas and role not in ctx.layout.autoscaled:
            change = change or Change()
            change.spec["replicas"] = replicas
        if cspec.min_available != min_available:
            change = change or Change()
            change.spec["minAvailable"] = min_available
        deps = ctx.deps[role]
        starts_after: list[str] = []
        if cspec.starts_after or deps:
            instance = scaling.instance_of(clique)
            starts_after = scaling.dependencies(
                ctx.layout, ctx.deps, ctx.name, gang, role, instance
            )
            if sorted(cspec.starts_after) != sorted(starts_after):
                change = change or Change()
                change.spec["startsAfter"] = starts_after
        # (a clique whose dependencies are only instances of a group that the gang does not
        # need waits for no Clique: no gate, as `bodies.clique_body` makes it)
        start_gate = ctx.start_gates and bool(starts_after)
        if cspec.start_gate != start_gate:
            change = change or Change()
            change.spec["startGate"] = start_gate
        if change is not None:
            changes.append((clique.metadata.name, change))
    return stale, tuple(changes)


def _gang_facts(
    gang: int, members: dict[str, Clique], ctx: Context, counts: Mapping[str, int]
) -> GangFacts:
    """A gang's facts, each Clique's conditions looked up once. Only a status that speaks
    for its Clique's epoch (`clique_planner.status_current`: generation, template, restart
    count) says anything about the gang as it is; any other is a Clique on its way.
    `members`: member name -> Clique; `counts`: the gang's instances of each scaling group
    (a gang is available with `minAvailable` instances of each available)."""
    facts = GangFacts(marked=not gang_failures.unmarked(members))
    facts.live, facts.subdomains = subdomains.recorded_subdomains(members.values())
    ready_true: set[str] = set()
    #: degraded members of a scaling group: a breach only if their group falls short
    grouped_degraded: dict[str, list[str]] = {}
    since = ""
    lay = ctx.layout
    for name, clique in members.items():
        status = clique.status
        if status is None:
            continue
        refused = find_condition(status.conditions, CONDITION_REPLICA_FAILURE)
        if refused is not None and refused.status == "True":
            facts.failing.append((clique.metadata.name, refused))
        if not clique_planner.status_current(clique):
            continue
        cond = find_condition(status.conditions, CONDITION_READY)
        if cond is None:
            continue
        stuck = find_condition(status.conditions, clique_status.CONDITION_CONTAINERS_WAITING)
        if stuck is not None:
            facts.containers_waiting.append(f"{gang}/{name} ({stuck.reason})")
        waiting = find_condition(status.conditions, clique_status.CONDITION_UNSCHEDULABLE)
        if waiting is not None:
            facts.unschedulable.append(f"{gang}/{name}")
            facts.waiting_why.append(waiting.message)
        if cond.status == "True":
            ready_true.add(name)
            since = max(since, cond.last_transition_time or "")
        elif cond.status == "False" and cond.reason == clique_status.REASON_BELOW_MIN:
            in_group = lay.group_of.get(clique.spec.clique_name)
            if in_group is None:
                facts.degraded.append(f"{gang}/{name}")
            else:
                grouped_degraded.setdefault(in_group, []).append(f"{gang}/{name}")
    if ctx.epochs and ctx.templates:
        lead_name = scaling.lead_member(lay)
        facts.epoch = gang_failures.epoch_of(members, lead_name)
        lead = members.get(lead_name)
        facts.was_available = lead is not None and gang_failures.was_available(lead, facts.epoch)
    else:
        # Untracked epochs: a Clique says BelowMinAvailable only once it lost ready pods
        # after being Ready in its own epoch, so a degraded gang broke by the world's hand
        # (a lost node, say), not the operator's, and is not paid from the budget.
        facts.was_available = True
    facts.unschedulable.sort()
    groups = _group_facts(members, ctx, counts, ready_true)
    facts.instances = tuple((g.name, f.made, f.available, f.current) for g, f in groups)
    available = ready = updated = True
    starting = False
    for name, replicas, min_available in ctx.templates:
        if name in lay.group_of:
            continue
        member = members.get(name)
        status = member.status if member is not None else None
        if member is None or status is None:
            facts.starting = True
            facts.degraded.clear()  # a gang on its way up has not been available: no breach
            return facts
        if status.ready_replicas < min_available:
            ready = False
        # (an autoscaled clique's replicas are the HPA's, in its spec)
        want = member.spec.replicas if name in lay.autoscaled else replicas
        if status.updated_replicas != want:
            updated = False
        if name not in ready_true:
            available = False
            starting = starting or _starting(member)
    for group, found in groups:
        updated = updated and found.pods_updated
        if found.ready < group.min_available:
            ready = False
        if found.available < group.min_available:
            available = False
            starting = starting or found.starting
            facts.degraded.extend(grouped_degraded.get(group.name, ()))
    facts.degraded.sort()
    facts.available, facts.ready, facts.updated = available, ready, updated
    facts.starting = starting and not available
    if facts.starting:
        # A gang is breached only if it was available (every Clique Ready in its epoch)
        # and broke since: a Clique that starts, rolls or was restarted says it was not.
        facts.degraded.clear()
    facts.available_since = since if available else ""
    return facts


@dataclass(slots=True)
class _GroupFacts:
    """One scaling group of one gang, read from its instances' Cliques."""

    #: instances with every Clique made; Ready (every Clique Ready for its epoch); on the
    #: current templates with every pod updated; with minAvailable pods ready
    made: int = 0
    available: int = 0
    current: int = 0
    ready: int = 0
    #: an instance is on its way up (a Clique missing, starting or rolling)
    starting: bool = False
    #: every Clique of every instance reports all its pods on its own template
    pods_updated: bool = True


def _group_facts(
    members: Mapping[str, Clique],
    ctx: Context,
    counts: Mapping[str, int],
    ready_true: set[str],
) -> list[tuple[scaling.Group, _GroupFacts]]:
    """The `_GroupFacts` of each scaling group of a gang (`members`: by member name)."""
    wanted = ctx.wanted
    out: list[tuple[scaling.Group, _GroupFacts]] = []
    for group in ctx.layout.groups:
        facts = _GroupFacts()
        for inst in range(counts.get(group.name, group.replicas)):
            made = available = ready = current = True
            for role in group.roles:
                name = labels.member_name(role, inst)
                member = members.get(name)
                status = member.status if member is not None else None
                want_hash, replicas, min_available = wanted.get(role, ("", 0, 0))
                if member is None or status is None or member.metadata.deletion_timestamp:
                    made = made and member is not None and not member.metadata.deletion_timestamp
                    available = ready = current = False
                    facts.pods_updated = False
                    facts.starting = True
                    continue
                if status.ready_replicas < min_available:
                    ready = False
                if status.updated_replicas != replicas:
                    facts.pods_updated = current = False
                elif hash_of(member) != want_hash:
                    current = False
                if name not in ready_true:
                    available = False
                    facts.starting = facts.starting or _starting(member)
            facts.made += made
            facts.available += available
            facts.current += current
            facts.ready += ready
        out.append((group, facts))
    return out


def _update_kind(members: Mapping[str, Clique], ctx: Context) -> str:
    """How the gang reached the current templates, if it has: "in-place" when a Clique of
    it was last rolled in place, "replaced" when one was rolled by replacing its pods."""
    live = [c for c in members.values() if c.metadata.deletion_timestamp is None]
    wanted = ctx.wanted
    if not live or any(hash_of(c) != wanted.get(c.spec.clique_name, ("",))[0] for c in live):
        return ""
    updates = [c.metadata.annotations.get(labels.ANNOTATION_UPDATE, "") for c in live]
    if any(u == inplace.REPLACE for u in updates):
        return "replaced"
    if any(u.startswith(inplace.IN_PLACE) for u in updates):
        return "in-place"
    return ""


def _starting(member: Clique) -> bool:
    """Whether a Clique that is not Ready is on its way up (not grown, not broken)."""
    status = member.status
    cond = find_condition(status.conditions, CONDITION_READY) if status is not None else None
    return (
        not clique_planner.status_current(member)
        or cond is None
        or cond.reason not in _NOT_STARTING
    )


def _relabel(change: Change, clique: Clique, new_hash: str, algorithm: int) -> None:
    """Same template under another hash algorithm: re-label, remember the old hash."""
    ann = clique.metadata.annotations
    previous = [h for h in ann.get(labels.ANNOTATION_PREVIOUS_HASHES, "").split(",") if h]
    old = hash_of(clique)
    if old and old not in previous:
        previous.append(old)
    change.labels[labels.LABEL_TEMPLATE_HASH] = new_hash
    change.annotations[labels.ANNOTATION_HASH_ALGORITHM] = str(algorithm)
    change.annotations[labels.ANNOTATION_PREVIOUS_HASHES] = ",".join(previous[-4:])


def down(facts: list[GangFacts]) -> set[int]:
    """The gangs that are down: on their way up (`starting`: new, rolled, restarted) or
    broken (`degraded`). A gang that is only growing (its Cliques `Resizing`) still serves
    with the pods it had, and is not down."""
    return {g for g, f in enumerate(facts) if not f.available and (f.starting or f.degraded)}


def partitioned(outdated: list[int], partition: int) -> tuple[list[int], list[int]]:
    """The outdated gangs split at `updateStrategy.partition`: those a roll may take (index
    at or above it) and those it holds on the template they run (below it)."""
    return [g for g in outdated if g >= partition], [g for g in outdated if g < partition]


def pick(
    strategy: str,
    max_unavailable: int,
    outdated: list[int],
    down: set[int],
    *,
    spent: int = 0,
    allowed: int | None = None,
) -> list[int]:
    """The outdated gangs to update now, in order; `down` as `down()` gives it.

    Invariant (tests/unit/test_rollout_budget.py and the simulator, tests/sim, drive random
    edits through the planner): the gangs that were serving when the rollout took them and
    are not available again never number more than `max_unavailable`. Picking the outdated
    gangs that are down first keeps that true: a serving gang (available, or only growing)
    is only taken once every outdated gang that is down has been (a gang still down from
    an earlier roll or a restart when the template changes again is rolled again, never
    left down beside a new one), and each pick is paid for. `spent`: the budget the same
    plan already used (gang restarts, `restart_budget`). `allowed`: the gangs that may be
    down at once, where surge gangs stand in for some (`surge.Surge.allowance`; by default
    `max_unavailable`, at least 1).
    """
    if strategy == UpdateStrategyType.RECREATE:
        return list(outdated)
    stale = set(outdated)
    most = max(1, max_unavailable) if allowed is None else allowed
    budget = most - spent - sum(1 for g in down if g not in stale)
    if budget <= 0:
        return []
    order = sorted(outdated, key=lambda g: (g not in down, g))
    return sorted(order[:budget])


def restart_budget(
    max_unavailable: int, facts: list[GangFacts], *, allowed: int | None = None
) -> int:
    """How many gangs a plan may restart (`gang_failures`): a restart is a disruption the
    operator causes, so it is paid from `maxUnavailable` (at least 1), like a roll. Spent
    already: the gangs the operator took down that are not available again: on their way
    up (`GangFacts.starting`: restarted, rolled or new), or short of pods without having
    been available whole since (a restarted gang whose leader was lost before its workers
    came up is still the operator's). Gangs that broke after being available are down by
    the world's hand, not the operator's, and do not count; nor do gangs that only grow.
    `allowed`: as in `pick`."""
    down = sum(
        1 for f in facts if not f.available and (f.starting or (f.degraded and not f.was_available))
    )
    most = max(1, max_unavailable) if allowed is None else allowed
    return max(0, most - down)
