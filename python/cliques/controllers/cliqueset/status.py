"""The status of a CliqueSet (pure): gang counts and conditions, from the gangs' verdicts.

- Counts: `replicas` (gangs with at least one Clique, not counting the surge gangs of a
  roll, which are `surgeReplicas`), `readyReplicas` (every clique has
  minAvailable ready pods), `availableReplicas` (every clique Ready for its current
  template), `updatedReplicas` (up to date and every pod on its template).
- `Available`: every gang available (the message names the Cliques whose pods wait for a
  node). `Progressing`: a rollout (RollingUpdate, with the number of gangs to go) or a
  scale (Scaling) is under way, else Complete (Partitioned while gangs below
  `updateStrategy.partition` keep an older template). `Degraded`: a clique broke (below
  minAvailable after it was Ready; one that starts or grew is not). `ReplicaFailure`:
  the API server refuses the CliqueSet's writes, or a Clique's (the first by name, and
  how many more).
- `templateHash`: one hash for the whole gang template (`set_hash`); `currentRevision`, the
  ControllerRevision of the current templates, is the planner's (`revisions`).
- An invalid spec (`invalid`) keeps the counts and says why in all three conditions.
"""

from __future__ import annotations

from collections.abc import Mapping

from cliques import _core
from cliques.api import labels
from cliques.api.cliqueset import CliqueSet, CliqueSetSpec, StartupType
from cliques.api.cliqueset_status import (
    CONDITION_AVAILABLE,
    CONDITION_DEGRADED,
    CONDITION_PROGRESSING,
    REASON_INVALID_SPEC,
    CliqueSetStatus,
)
from cliques.api.meta import find_condition
from cliques.controllers.base import conditions, failures
from cliques.controllers.clique import status as clique_status
from cliques.controllers.cliqueset.rollout import GangFacts


def set_hash(spec: CliqueSetSpec, hashes: Mapping[str, str]) -> str:
    """One hash for the whole gang template: the clique hashes, by name (or in list order
    for InOrder, where order is meaning)."""
    names = [c.name for c in spec.template.cliques]
    if spec.startup_type != StartupType.IN_ORDER:
        names.sort()
    joined = ";".join(f"{n}={hashes.get(n, '')}" for n in names).encode()
    return _core.safe_encode(_core.fnv1a_64(joined))


def status(
    cqs: CliqueSet,
    facts: list[GangFacts],
    outdated: list[int],
    *,
    held: list[int] | None = None,
    existing: int,
    template_hash: str,
    algorithm: int,
    failure: failures.Failure | None,
    now: str,
    surge: int = 0,
) -> CliqueSetStatus:
    """The status of `cqs` from the facts of gangs `0..replicas-1`, the outdated ones a roll
    takes, the outdated ones the partition `held`, the number of gangs that have
    Cliques (besides the `surge` gangs a roll keeps above `replicas`), and the
    CliqueSet's own refused write, if any."""
    spec = cqs.spec
    gen = cqs.metadata.generation
    old = cqs.status or CliqueSetStatus()
    conds = conditions.Setter(old.conditions, now, gen)
    ready = sum(f.ready for f in facts)
    available = sum(f.available for f in facts)
    stale = set(outdated) | set(held or ())
    updated = sum(1 for g, f in enumerate(facts) if f.updated and g not in stale)
    degraded = [d for f in facts for d in f.degraded]
    waiting = [w for f in facts for w in f.unschedulable]
    gangs_available = f"{available}/{spec.replicas} gangs available"
    if waiting:
        more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
        gangs_available += f"; pods wait for a node in {', '.join(waiting[:5])}{more}"
    stuck = [w for f in facts for w in f.containers_waiting]
    if stuck:
        more = f" and {len(stuck) - 5} more" if len(stuck) > 5 else ""
        gangs_available += f"; containers wait in {', '.join(stuck[:5])}{more}"
    if available == spec.replicas:
        avail_c = conds.set(CONDITION_AVAILABLE, "True", "AllGangsAvailable", gangs_available)
    else:
        avail_c = conds.set(CONDITION_AVAILABLE, "False", "GangsUnavailable", gangs_available)
    if outdated:
        to_update = f"{len(outdated)} gang(s) to update to {template_hash}"
        prog_c = conds.set(CONDITION_PROGRESSING, "True", "RollingUpdate", to_update)
    elif surge:
        standing = (
            f"{surge} surge gang(s) stand in until every gang is available; {gangs_available}"
        )
        prog_c = conds.set(CONDITION_PROGRESSING, "True", "RollingUpdate", standing)
    elif available != spec.replicas or existing != spec.replicas:
        prog_c = conds.set(CONDITION_PROGRESSING, "True", "Scaling", gangs_available)
    elif held:
        kept = (
            f"every gang from the partition ({spec.update_strategy.partition}) on is up to "
            f"date; {len(held)} gang(s) below it keep the template they run"
        )
        prog_c = conds.set(CONDITION_PROGRESSING, "False", "Partitioned", kept)
    else:
        done = "every gang is available and up to date"
        prog_c = conds.set(CONDITION_PROGRESSING, "False", "Complete", done)
    if degraded:
        below = "below minAvailable: " + ", ".join(degraded[:10])
        deg_c = conds.set(CONDITION_DEGRADED, "True", clique_status.REASON_BELOW_MIN, below)
    else:
        none_below = "no gang is below minAvailable"
        deg_c = conds.set(CONDITION_DEGRADED, "False", "AsExpected", none_below)
    return CliqueSetStatus(
        observed_generation=gen,
        replicas=existing,
        surge_replicas=surge,
        ready_replicas=ready,
        available_replicas=available,
        updated_replicas=updated,
        template_hash=template_hash,
        hash_algorithm=algorithm,
        selector=_selector(cqs),
        conditions=[
            avail_c,
            prog_c,
            deg_c,
            *failures.condition(conds, failure or _clique_failure(facts)),
        ],
    )


def _clique_failure(facts: list[GangFacts]) -> failures.Failure | None:
    """The CliqueSet's ReplicaFailure for refused writes of its Cliques: the first one by
    name, with its reason and message, and how many more there are."""
    failing = sorted((pair for f in facts for pair in f.failing), key=lambda pair: pair[0])
    if not failing:
        return None
    name, cond = failing[0]
    more = f" (and {len(failing) - 1} more Cliques)" if len(failing) > 1 else ""
    return failures.Failure(cond.reason, f"{name}: {cond.message}{more}")


def invalid(cqs: CliqueSet, message: str, *, now: str) -> CliqueSetStatus:
    """The status of a CliqueSet whose spec cannot be planned: its counts as they were,
    not Available, not Progressing, Degraded, each with reason InvalidSpec and `message`."""
    old = cqs.status or CliqueSetStatus()
    conds = conditions.Setter(old.conditions, now, cqs.metadata.generation)
    return CliqueSetStatus(
        observed_generation=cqs.metadata.generation,
        replicas=old.replicas,
        ready_replicas=old.ready_replicas,
        available_replicas=old.available_replicas,
        updated_replicas=old.updated_replicas,
        gang_restarts=old.gang_restarts,
        template_hash=old.template_hash,
        hash_algorithm=old.hash_algorithm,
        current_revision=old.current_revision,
        selector=_selector(cqs),
        conditions=[
            conds.set(CONDITION_AVAILABLE, "False", REASON_INVALID_SPEC, message),
            conds.set(CONDITION_PROGRESSING, "False", REASON_INVALID_SPEC, message),
            conds.set(CONDITION_DEGRADED, "True", REASON_INVALID_SPEC, message),
        ],
    )


def _selector(cqs: CliqueSet) -> str:
    return f"{labels.LABEL_CLIQUESET}={cqs.metadata.name}"


#: The conditions whose messages may change in a progress-only status (they count gangs).
_COUNTING = frozenset({CONDITION_AVAILABLE, CONDITION_PROGRESSING})


def progress_only(old: CliqueSetStatus | None, new: CliqueSetStatus) -> bool:
    """Whether `new` only reports progress of a scale that `old` does not show yet: gangs
    created, turning ready or available, while the set is still `Progressing` for the same
    reason (`Scaling`) and not Available.

    Anything else is news: a first status, a new generation or template hash, any
    condition that changes its status or reason (or its message, but for the gang counts
    of Available and Progressing), a count that goes down, a gang restart, a rollout.
    """
    if old is None or new.observed_generation != old.observed_generation:
        return False
    progressing = find_condition(new.conditions, CONDITION_PROGRESSING)
    if progressing is None or progressing.status != "True" or progressing.reason != "Scaling":
        return False
    if (
        new.template_hash != old.template_hash
        or new.hash_algorithm != old.hash_algorithm
        or new.current_revision != old.current_revision
        or new.gang_restarts != old.gang_restarts
        or new.selector != old.selector
        or new.replicas < old.replicas
        or new.ready_replicas < old.ready_replicas
        or new.available_replicas < old.available_replicas
        or new.updated_replicas < old.updated_replicas
        or len(new.conditions) != len(old.conditions)
    ):
        return False
    for cond in new.conditions:
        was = find_condition(old.conditions, cond.type)
        if was is None or (was.status, was.reason) != (cond.status, cond.reason):
            return False
        if cond.type not in _COUNTING and was.message != cond.message:
            return False
    available = find_condition(new.conditions, CONDITION_AVAILABLE)
    return available is not None and available.status == "False"
