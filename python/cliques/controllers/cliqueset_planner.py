"""The CliqueSet planner (pure): from a CliqueSet and its Cliques, the next step and status.

- Gangs: `replicas` gangs, each one Clique per clique template, named
  `<cliqueset>-<gang>-<clique>`; a headless Service per gang when `headlessService`.
  Scaling adds or removes the highest gang indices; a removed clique template deletes its
  Cliques.
- Non-template changes (a clique's replicas, minAvailable, startsAfter) are applied to every
  gang at once: they resize, they do not roll.
- Template changes roll gang by gang. A gang is outdated when one of its Cliques carries a
  template hash other than the desired one. With RollingUpdate, outdated gangs that are
  already unavailable are updated first (that costs nothing), then available ones while the
  number of unavailable gangs stays within `maxUnavailable`; with Recreate, all at once.
  Everything the decision needs is read from the API objects, so an operator restarted in
  the middle of a rollout continues it without exceeding the budget.
- A Clique labelled with a hash from another hash algorithm whose template, hashed with the
  current algorithm, is the desired hash is re-labelled (and its old hash recorded as a
  previous hash, so its pods are re-labelled too): an operator upgrade never rolls a gang.
- A startsAfter cycle is an InvalidSpec: no Clique is created or changed, the conditions
  say why and an Event is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cliques import _core
from cliques.api import labels
from cliques.api.clique import CONDITION_READY, Clique
from cliques.api.cliqueset import (
    CONDITION_AVAILABLE,
    CONDITION_DEGRADED,
    CONDITION_PROGRESSING,
    REASON_INVALID_SPEC,
    CliqueSet,
    CliqueSetStatus,
    CliqueTemplate,
)
from cliques.api.meta import CONDITION_REPLICA_FAILURE, Condition, find_condition
from cliques.api.service import Service
from cliques.controllers import (
    clique_planner,
    conditions,
    failures,
    podbuilder,
    startup,
)
from cliques.controllers.actions import Create, Delete, Event, Patch, Plan
from cliques.kube.resources import CLIQUES, SERVICES


@dataclass(frozen=True)
class CliqueSetSnapshot:
    cliqueset: CliqueSet
    cliques: list[Clique]
    services: list[Service] = field(default_factory=list)
    #: role name -> desired template hash (computed by the controller's Hasher)
    hashes: dict[str, str] = field(default_factory=dict)
    #: template -> hash with the current algorithm (for the upgrade check)
    rehash: Callable[[dict[str, Any]], str] | None = None
    algorithm: int = 1
    expectations_satisfied: bool = True
    now: str = "1970-01-01T00:00:00Z"
    #: the verdicts of this CliqueSet's previous plan (kept by the controller), or None
    memo: GangMemo | None = None
    #: the API server's refusal of this CliqueSet's last writes, until a write succeeds
    failure: failures.Failure | None = None


def plan(snap: CliqueSetSnapshot) -> Plan:
    cqs = snap.cliqueset
    spec = cqs.spec
    meta = cqs.metadata
    out = Plan()
    try:
        deps = startup.dependencies(spec)
    except startup.StartupCycle as exc:
        out.events.append(Event("Warning", REASON_INVALID_SPEC, str(exc)))
        out.status = invalid_status(snap, str(exc))
        if out.status == cqs.status:
            out.status = None
            out.events.clear()
        return out

    roles = {c.name: c for c in spec.template.cliques}
    bucket = str(_core.bucket_of(meta.namespace, meta.name))
    by_gang: dict[int, dict[str, Clique]] = {}
    removed: list[tuple[int, str, Clique]] = []
    for clique in snap.cliques:
        gang, role = clique.spec.gang_index, clique.spec.clique_name
        by_gang.setdefault(gang, {})[role] = clique
        if clique.metadata.deletion_timestamp is None and (
            gang >= spec.replicas or role not in roles
        ):
            removed.append((-gang, role, clique))

    deletes: list[Delete] = []
    creates: list[Create] = []
    for minus_gang, _, clique in sorted(removed, key=lambda r: r[:2]):
        why = "ScaleDown" if -minus_gang >= spec.replicas else "CliqueRemoved"
        deletes.append(Delete(CLIQUES, clique.metadata.name, clique.metadata.uid, meta.uid, why))

    # Creates are only planned (their bodies built) when they can be sent: while creates
    # are still unobserved, the cache may lack objects that exist.
    can_create = snap.expectations_satisfied
    first_role = spec.template.cliques[0].name
    for gang in range(spec.replicas) if can_create else ():
        have = by_gang.get(gang)
        if have is not None and roles.keys() <= have.keys():
            continue
        have = have or {}
        for role, tmpl in roles.items():
            if role not in have:
                creates.append(
                    Create(
                        CLIQUES,
                        labels.clique_name(meta.name, gang, role),
                        _clique_body(cqs, gang, tmpl, deps[role], snap, bucket, first_role),
                        meta.uid,
                    )
                )

    # Services: one headless Service per gang.
    have_svc = {s.metadata.name: s for s in snap.services}
    want_svc = (
        {n: g for g, n in enumerate(labels.gang_service_names(meta.name, spec.replicas))}
        if spec.headless_service
        else {}
    )
    for name, gang in want_svc.items() if can_create else ():
        if name not in have_svc:
            creates.append(Create(SERVICES, name, _service_body(cqs, gang, bucket), meta.uid))
    for name, svc in have_svc.items():
        if name not in want_svc and svc.metadata.deletion_timestamp is None:
            deletes.append(Delete(SERVICES, name, svc.metadata.uid, meta.uid, "ScaleDown"))

    # In-place changes and rollout decisions over existing gangs.
    facts, changes, outdated = _judge_gangs(snap, by_gang, _context(snap, roles, deps))
    unavailable = {g for g, f in enumerate(facts) if not f.available}
    to_update = (
        _pick_rollout(
            spec.update_strategy.type, spec.update_strategy.max_unavailable, outdated, unavailable
        )
        if snap.expectations_satisfied
        else []
    )
    updating = set(to_update)
    touched = updating | {gang for gang, _ in changes.values()}
    for gang in sorted(touched):
        for role, clique in sorted(by_gang.get(gang, {}).items()):
            if role not in roles or clique.metadata.deletion_timestamp is not None:
                continue
            found = changes.get(clique.metadata.name)
            change = found[1] if found is not None else None
            if gang in updating and _hash_of(clique) != snap.hashes[role]:
                out.patches.append(_template_patch(clique, roles[role], snap, change))
            elif change is not None:
                out.patches.append(_merge_patch(clique, change))
    if to_update:
        out.events.append(
            Event(
                "Normal",
                "RollingUpdate",
                f"updating gang(s) {', '.join(map(str, to_update))} to template "
                f"{_set_hash(snap)} ({len(outdated) - len(to_update)} more to go)",
            )
        )

    if snap.expectations_satisfied:
        out.deletes = deletes
        out.creates = creates
    if deletes and snap.expectations_satisfied:
        out.events.append(
            Event("Normal", "ScalingDown", f"deleting {len(deletes)} object(s) of removed gangs")
        )

    out.status = _status(snap, by_gang, facts, outdated)
    if out.status == cqs.status:
        out.status = None
    return out


def _hash_of(clique: Clique) -> str:
    return clique.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, "")


def _algorithm_of(clique: Clique) -> int:
    try:
        return int(clique.metadata.annotations.get(labels.ANNOTATION_HASH_ALGORITHM, "0"))
    except ValueError:
        return 0


@dataclass
class _Change:
    """What must change in place on one Clique (no roll)."""

    spec: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Context:
    """Everything of the CliqueSet a gang's verdict depends on (besides its Cliques)."""

    name: str
    #: role -> (desired hash, replicas, minAvailable)
    wanted: dict[str, tuple[str, int, int]]
    #: role -> the roles it starts after
    deps: dict[str, list[str]]
    #: the clique templates in order: (role, replicas, minAvailable)
    templates: tuple[tuple[str, int, int], ...]
    algorithm: int


@dataclass(slots=True)
class _Gang:
    """The verdict on one gang: its facts, whether it is outdated, in-place changes."""

    facts: _GangFacts
    outdated: bool
    #: (Clique name, change) of the Cliques to change in place (resize, re-label)
    changes: list[tuple[str, _Change]]


class GangMemo:
    """The verdicts of the last plan of one CliqueSet, per gang, reused by the next plan
    for every gang whose Cliques are the very same objects under the same context.

    The informer cache replaces an object on every change and never mutates one, so an
    unchanged gang is recognised by the identity of its Cliques: while a thousand Cliques
    report their pods one by one, a plan re-judges only the few gangs that changed. (The
    memo holds the Cliques it judged, so no other object can take their identity; a gang
    of other but equal objects is reused too, as its verdict would be the same.)
    """

    def __init__(self) -> None:
        self.context: _Context | None = None
        self.gangs: dict[int, tuple[tuple[Clique, ...], _Gang]] = {}

    def begin(self, context: _Context) -> None:
        """Start a plan: verdicts reached under another context are dropped."""
        if context != self.context:
            self.context = context
            self.gangs.clear()

    def get(self, gang: int, members: tuple[Clique, ...]) -> _Gang | None:
        entry = self.gangs.get(gang)
        # Identical objects compare equal without reading a field; equal ones would get
        # the same verdict anyway.
        if entry is None or entry[0] != members:
            return None
        return entry[1]

    def put(self, gang: int, members: tuple[Clique, ...], verdict: _Gang) -> None:
        self.gangs[gang] = (members, verdict)

    def forget_beyond(self, replicas: int) -> None:
        for gang in [g for g in self.gangs if g >= replicas]:
            del self.gangs[gang]


def _context(
    snap: CliqueSetSnapshot, roles: dict[str, CliqueTemplate], deps: dict[str, list[str]]
) -> _Context:
    return _Context(
        name=snap.cliqueset.metadata.name,
        wanted={
            r: (snap.hashes[r], t.replicas, t.effective_min_available) for r, t in roles.items()
        },
        deps=deps,
        templates=tuple(
            (r.name, r.replicas, r.effective_min_available)
            for r in snap.cliqueset.spec.template.cliques
        ),
        algorithm=snap.algorithm,
    )


def _judge_gangs(
    snap: CliqueSetSnapshot,
    by_gang: dict[int, dict[str, Clique]],
    ctx: _Context,
) -> tuple[list[_GangFacts], dict[str, tuple[int, _Change]], list[int]]:
    """Facts of gangs `0..replicas-1`, in-place changes per Clique name with its gang, and
    the outdated gangs; unchanged gangs are taken from `snap.memo`."""
    memo = snap.memo
    if memo is not None:
        memo.begin(ctx)
    facts: list[_GangFacts] = []
    changes: dict[str, tuple[int, _Change]] = {}
    outdated: list[int] = []
    for gang in range(snap.cliqueset.spec.replicas):
        members = by_gang.get(gang)
        if not members:
            facts.append(_GangFacts())
            continue
        key = tuple(members.values())
        verdict = memo.get(gang, key) if memo is not None else None
        if verdict is None:
            verdict = _judge(snap, gang, members, ctx)
            if memo is not None:
                memo.put(gang, key, verdict)
        facts.append(verdict.facts)
        if verdict.outdated:
            outdated.append(gang)
        for name, change in verdict.changes:
            changes[name] = (gang, change)
    if memo is not None:
        memo.forget_beyond(snap.cliqueset.spec.replicas)
    return facts, changes, outdated


def _judge(snap: CliqueSetSnapshot, gang: int, members: dict[str, Clique], ctx: _Context) -> _Gang:
    """One gang's verdict (a pure function of its Cliques and the context)."""
    outdated, changes = _classify(snap, gang, members, ctx)
    return _Gang(facts=_gang_facts(gang, members, ctx), outdated=outdated, changes=changes)


def _classify(
    snap: CliqueSetSnapshot, gang: int, members: dict[str, Clique], ctx: _Context
) -> tuple[bool, list[tuple[str, _Change]]]:
    """Whether the gang is outdated, and the in-place changes of its Cliques (resize,
    re-label). The common case (a Clique that needs nothing) is a few comparisons."""
    hash_label = labels.LABEL_TEMPLATE_HASH
    changes: list[tuple[str, _Change]] = []
    stale = False
    for role, clique in members.items():
        want_role = ctx.wanted.get(role)
        if want_role is None or clique.metadata.deletion_timestamp is not None:
            continue
        want, replicas, min_available = want_role
        change: _Change | None = None
        if clique.metadata.labels.get(hash_label, "") != want:
            if (
                _algorithm_of(clique) != ctx.algorithm
                and snap.rehash is not None
                and snap.rehash(clique.spec.template) == want
            ):
                change = _Change()
                _relabel(change, clique, want, ctx.algorithm)
            else:
                stale = True
        cspec = clique.spec
        if cspec.replicas != replicas:
            change = change or _Change()
            change.spec["replicas"] = replicas
        if cspec.min_available != min_available:
            change = change or _Change()
            change.spec["minAvailable"] = min_available
        deps = ctx.deps[role]
        if cspec.starts_after or deps:
            starts_after = [labels.clique_name(ctx.name, gang, d) for d in deps]
            if sorted(cspec.starts_after) != sorted(starts_after):
                change = change or _Change()
                change.spec["startsAfter"] = starts_after
        if change is not None:
            changes.append((clique.metadata.name, change))
    return stale, changes


def _gang_facts(gang: int, members: dict[str, Clique], ctx: _Context) -> _GangFacts:
    """A gang's facts, each Clique's Ready condition looked up once."""
    facts = _GangFacts()
    ready_true: set[str] = set()
    for role, clique in members.items():
        status = clique.status
        if status is None:
            continue
        cond = find_condition(status.conditions, CONDITION_READY)
        if cond is None:
            continue
        refused = find_condition(status.conditions, CONDITION_REPLICA_FAILURE)
        if refused is not None and refused.status == "True":
            facts.failing.append((clique.metadata.name, refused))
        if cond.status == "True":
            ready_true.add(role)
        elif cond.status == "False" and cond.reason == clique_planner.REASON_BELOW_MIN:
            facts.degraded.append(f"{gang}/{role}")
    facts.degraded.sort()
    available = ready = updated = True
    for name, replicas, min_available in ctx.templates:
        member = members.get(name)
        status = member.status if member is not None else None
        if member is None or status is None:
            return facts
        if status.ready_replicas < min_available:
            ready = False
        if status.updated_replicas != replicas:
            updated = False
        # clique_planner.clique_ready, with the condition already found
        if (
            name not in ready_true
            or status.observed_generation != member.metadata.generation
            or status.template_hash != member.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, "")
        ):
            available = False
    facts.available, facts.ready, facts.updated = available, ready, updated
    return facts


def _pick_rollout(
    strategy: str, max_unavailable: int, outdated: list[int], unavailable: set[int]
) -> list[int]:
    if strategy == "Recreate":
        return list(outdated)
    picked = [g for g in outdated if g in unavailable]  # already down: free to update
    budget = max(1, max_unavailable) - len(unavailable)
    for gang in outdated:
        if budget <= 0:
            break
        if gang not in unavailable:
            picked.append(gang)
            budget -= 1
    return sorted(picked)


@dataclass(slots=True)
class _GangFacts:
    """What the rollout and the status need to know about one gang, read in one pass."""

    #: every clique template has its Clique, Ready for its current template
    available: bool = False
    #: every clique has minAvailable ready pods (whatever their template)
    ready: bool = False
    #: every clique reports all its pods on its current template
    updated: bool = False
    #: `gang/clique` of the Cliques below minAvailable
    degraded: list[str] = field(default_factory=list)
    #: (Clique name, its ReplicaFailure condition) of the Cliques whose writes are refused
    failing: list[tuple[str, Condition]] = field(default_factory=list)


def _relabel(change: _Change, clique: Clique, new_hash: str, algorithm: int) -> None:
    """Same template under another hash algorithm: re-label, remember the old hash."""
    ann = clique.metadata.annotations
    previous = [h for h in ann.get(podbuilder.ANNOTATION_PREVIOUS_HASHES, "").split(",") if h]
    old = _hash_of(clique)
    if old and old not in previous:
        previous.append(old)
    change.labels[labels.LABEL_TEMPLATE_HASH] = new_hash
    change.annotations[labels.ANNOTATION_HASH_ALGORITHM] = str(algorithm)
    change.annotations[podbuilder.ANNOTATION_PREVIOUS_HASHES] = ",".join(previous[-4:])


def _merge_patch(clique: Clique, change: _Change) -> Patch:
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


def _template_patch(
    clique: Clique, tmpl: CliqueTemplate, snap: CliqueSetSnapshot, change: _Change | None
) -> Patch:
    """Roll one Clique to the desired template (JSON patch). The `test` of its UID makes
    sure it is the Clique we decided about; its resourceVersion is deliberately not a
    precondition: the Clique controller writes its status all the time, the new template
    does not depend on it, and the rollout budget is guarded by expectations instead."""
    annotations = {
        k: v
        for k, v in clique.metadata.annotations.items()
        if k != podbuilder.ANNOTATION_PREVIOUS_HASHES
    }
    annotations[labels.ANNOTATION_HASH_ALGORITHM] = str(snap.algorithm)
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/uid", "value": clique.metadata.uid},
        {"op": "replace", "path": "/spec/template", "value": tmpl.template},
        {
            "op": "add",
            "path": "/metadata/labels/" + _escape(labels.LABEL_TEMPLATE_HASH),
            "value": snap.hashes[tmpl.name],
        },
        {"op": "add", "path": "/metadata/annotations", "value": annotations},
    ]
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


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _owner_ref(cqs: CliqueSet) -> dict[str, Any]:
    return {
        "apiVersion": cqs.api_version,
        "kind": cqs.kind,
        "name": cqs.metadata.name,
        "uid": cqs.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _gang_labels(cqs: CliqueSet, gang: int, bucket: str) -> dict[str, str]:
    return {
        labels.LABEL_CLIQUESET: cqs.metadata.name,
        labels.LABEL_GANG_INDEX: str(gang),
        labels.LABEL_BUCKET: bucket,
    }


def _clique_body(
    cqs: CliqueSet,
    gang: int,
    tmpl: CliqueTemplate,
    deps: list[str],
    snap: CliqueSetSnapshot,
    bucket: str,
    first_role: str,
) -> dict[str, Any]:
    name = cqs.metadata.name
    ns = cqs.metadata.namespace
    annotations = {labels.ANNOTATION_HASH_ALGORITHM: str(snap.algorithm)}
    if cqs.spec.headless_service:
        annotations[podbuilder.ANNOTATION_SUBDOMAIN] = labels.gang_service_name(name, gang)
        annotations[podbuilder.ANNOTATION_LEADER_ADDRESS] = labels.pod_address(
            first_role, 0, name, gang, ns
        )
    return {
        "apiVersion": labels.API_VERSION,
        "kind": labels.KIND_CLIQUE,
        "metadata": {
            "name": labels.clique_name(name, gang, tmpl.name),
            "namespace": ns,
            "labels": {
                **_gang_labels(cqs, gang, bucket),
                labels.LABEL_CLIQUE: tmpl.name,
                labels.LABEL_TEMPLATE_HASH: snap.hashes[tmpl.name],
            },
            "annotations": annotations,
            "ownerReferences": [_owner_ref(cqs)],
        },
        "spec": {
            "cliqueName": tmpl.name,
            "gangIndex": gang,
            "replicas": tmpl.replicas,
            "minAvailable": tmpl.effective_min_available,
            "startsAfter": [labels.clique_name(name, gang, d) for d in deps],
            "template": tmpl.template,
        },
    }


def _service_body(cqs: CliqueSet, gang: int, bucket: str) -> dict[str, Any]:
    name = cqs.metadata.name
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": labels.gang_service_name(name, gang),
            "namespace": cqs.metadata.namespace,
            "labels": _gang_labels(cqs, gang, bucket),
            "ownerReferences": [_owner_ref(cqs)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {
                labels.LABEL_CLIQUESET: name,
                labels.LABEL_GANG_INDEX: str(gang),
            },
        },
    }


def _set_hash(snap: CliqueSetSnapshot) -> str:
    """One hash for the whole gang template: the clique hashes, by name (or in list order
    for InOrder, where order is meaning)."""
    spec = snap.cliqueset.spec
    names = [c.name for c in spec.template.cliques]
    if spec.startup_type != "InOrder":
        names.sort()
    joined = ";".join(f"{n}={snap.hashes.get(n, '')}" for n in names).encode()
    return _core.safe_encode(_core.fnv1a_64(joined))


def _status(
    snap: CliqueSetSnapshot,
    by_gang: dict[int, dict[str, Clique]],
    facts: list[_GangFacts],
    outdated: list[int],
) -> CliqueSetStatus:
    cqs = snap.cliqueset
    spec = cqs.spec
    meta = cqs.metadata
    old = cqs.status or CliqueSetStatus()
    gen = meta.generation
    ready = sum(f.ready for f in facts)
    available = sum(f.available for f in facts)
    stale = set(outdated)
    updated = sum(1 for g, f in enumerate(facts) if f.updated and g not in stale)
    degraded = [d for f in facts for d in f.degraded]
    existing = sum(1 for g in by_gang if by_gang[g])
    now = snap.now
    conds = old.conditions
    if available == spec.replicas:
        avail_c = conditions.merge(
            conds,
            CONDITION_AVAILABLE,
            "True",
            "AllGangsAvailable",
            f"{available}/{spec.replicas} gangs available",
            now=now,
            generation=gen,
        )
    else:
        avail_c = conditions.merge(
            conds,
            CONDITION_AVAILABLE,
            "False",
            "GangsUnavailable",
            f"{available}/{spec.replicas} gangs available",
            now=now,
            generation=gen,
        )
    if outdated:
        prog_c = conditions.merge(
            conds,
            CONDITION_PROGRESSING,
            "True",
            "RollingUpdate",
            f"{len(outdated)} gang(s) to update to {_set_hash(snap)}",
            now=now,
            generation=gen,
        )
    elif available != spec.replicas or existing != spec.replicas:
        prog_c = conditions.merge(
            conds,
            CONDITION_PROGRESSING,
            "True",
            "Scaling",
            f"{available}/{spec.replicas} gangs available",
            now=now,
            generation=gen,
        )
    else:
        prog_c = conditions.merge(
            conds,
            CONDITION_PROGRESSING,
            "False",
            "Complete",
            "every gang is available and up to date",
            now=now,
            generation=gen,
        )
    if degraded:
        deg_c = conditions.merge(
            conds,
            CONDITION_DEGRADED,
            "True",
            clique_planner.REASON_BELOW_MIN,
            "below minAvailable: " + ", ".join(degraded[:10]),
            now=now,
            generation=gen,
        )
    else:
        deg_c = conditions.merge(
            conds,
            CONDITION_DEGRADED,
            "False",
            "AsExpected",
            "no gang is below minAvailable",
            now=now,
            generation=gen,
        )
    return CliqueSetStatus(
        observed_generation=gen,
        replicas=existing,
        ready_replicas=ready,
        available_replicas=available,
        updated_replicas=updated,
        template_hash=_set_hash(snap),
        hash_algorithm=snap.algorithm,
        selector=f"{labels.LABEL_CLIQUESET}={meta.name}",
        conditions=[
            avail_c,
            prog_c,
            deg_c,
            *failures.condition(
                conds, snap.failure or _clique_failure(facts), now=now, generation=gen
            ),
        ],
    )


def _clique_failure(facts: list[_GangFacts]) -> failures.Failure | None:
    """The CliqueSet's ReplicaFailure for refused writes of its Cliques: the first one by
    name, with its reason and message, and how many more there are."""
    failing = sorted((pair for f in facts for pair in f.failing), key=lambda pair: pair[0])
    if not failing:
        return None
    name, cond = failing[0]
    more = f" (and {len(failing) - 1} more Cliques)" if len(failing) > 1 else ""
    return failures.Failure(cond.reason, f"{name}: {cond.message}{more}")


def invalid_status(snap: CliqueSetSnapshot, message: str) -> CliqueSetStatus:
    cqs = snap.cliqueset
    old = cqs.status or CliqueSetStatus()
    gen = cqs.metadata.generation
    now = snap.now
    conds = old.conditions
    return CliqueSetStatus(
        observed_generation=gen,
        replicas=old.replicas,
        ready_replicas=old.ready_replicas,
        available_replicas=old.available_replicas,
        updated_replicas=old.updated_replicas,
        template_hash=old.template_hash,
        hash_algorithm=old.hash_algorithm,
        selector=f"{labels.LABEL_CLIQUESET}={cqs.metadata.name}",
        conditions=[
            conditions.merge(
                conds,
                CONDITION_AVAILABLE,
                "False",
                REASON_INVALID_SPEC,
                message,
                now=now,
                generation=gen,
            ),
            conditions.merge(
                conds,
                CONDITION_PROGRESSING,
                "False",
                REASON_INVALID_SPEC,
                message,
                now=now,
                generation=gen,
            ),
            conditions.merge(
                conds,
                CONDITION_DEGRADED,
                "True",
                REASON_INVALID_SPEC,
                message,
                now=now,
                generation=gen,
            ),
        ],
    )
