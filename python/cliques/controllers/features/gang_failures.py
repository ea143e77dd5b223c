"""`failurePolicy: RecreateGang`, decided (pure): when a broken gang is recreated whole.

A gang is breached while one of its Cliques reports, for its current epoch, Ready=False
with reason BelowMinAvailable: it was Ready and lost ready pods (a crash, an eviction, a
node gone). A gang that is starting (created, rolled or restarted and not Ready yet) or
that grew (a resize whose new pods are on their way or wait for room) is not breached
(`clique_planner`). Everything the decision needs lives on the gang's Cliques, as
annotations, so a restarted operator decides the same:

    cliques.dev/breach-since       when the breach was first seen (cleared when it ends)
    cliques.dev/gang-restarts      how many times the gang was recreated (ever)
    cliques.dev/last-restart       when it last was
    cliques.dev/forgiven-restarts  restarts that no longer count (see below)

A breach that lasts `minAvailableBreachedSeconds`, plus the backoff
`min(initialSeconds * 2**restarts, maxSeconds)`, makes the gang due for a restart: its
Cliques get `gang-restarts` + 1, which their pods carry too (`clique.bodies.pod_body`), and the
Clique planner deletes every pod of another restart count (`clique_planner`), so all the
gang's pods go and come back at the same indices while the Cliques stay. The restart
clears the breach mark: the recreated gang is starting, and its breach clock only starts
again once it has been available and broke again. The CliqueSet planner restarts a due
gang only within the rollout budget (`maxUnavailable`), since a restart is a disruption
the operator causes.

Restarts that count towards `maxGangRestarts` (and the backoff) are the recent ones: once
a gang has stayed available for `reset_after(policy)` seconds, its restarts so far are
forgiven (`forgiven-restarts`), as a kubelet forgets a container's crash backoff. After
`maxGangRestarts` counted restarts a breached gang is `failed` and left as it is. Other
gangs are never touched.

A restart is one patch per Clique; when some are refused (a 409 on a resourceVersion), the
Cliques disagree on the count. The others are then brought to the highest count and its
marks (the restart finishes, every pod of the gang goes) before anything else is decided:
an older breach mark left on them never starts a second restart.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from cliques import _core
from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.meta import Condition, ObjectMeta, parse_time
from cliques.api.policies import FailurePolicy, GangRestartPolicy
from cliques.controllers.base import conditions as conds

CONDITION_RESTARTING: Final = "GangRestarting"
CONDITION_FAILED: Final = "GangFailed"
ANNOTATION_BREACH_SINCE: Final = labels.ANNOTATION_BREACH_SINCE
ANNOTATION_RESTARTS: Final = labels.ANNOTATION_GANG_RESTARTS
ANNOTATION_LAST_RESTART: Final = labels.ANNOTATION_LAST_RESTART
ANNOTATION_FORGIVEN: Final = labels.ANNOTATION_FORGIVEN_RESTARTS
ANNOTATION_AVAILABLE: Final = labels.ANNOTATION_AVAILABLE_EPOCH
#: A gang's restarts are forgiven after it stayed available this long, at the least.
RESET_AFTER_MIN_SECONDS: Final = 600.0


def expect_token(name: str, restarts: str) -> str:
    """The expectation a patch giving Clique `name` the restart count `restarts` sets:
    the owner's next plan waits until the watch shows it (`observed_token`), so a plan
    from a cache without it never writes the old count back (a rolling update's template
    patch rewrites the annotations it has cached)."""
    return f"{name}@restarts={restarts}"


def observed_token(meta: ObjectMeta) -> str | None:
    """The restart expectation a watched Clique settles, if it records a count."""
    restarts = meta.annotations.get(ANNOTATION_RESTARTS)
    return expect_token(meta.name, restarts) if restarts else None


def _count(clique: Clique, key: str = ANNOTATION_RESTARTS) -> int:
    """The restart count one Clique records under `key` (0 when none or unreadable)."""
    try:
        return max(0, int(clique.metadata.annotations.get(key, "0")))
    except ValueError:
        return 0


def epoch_of(members: Mapping[str, Clique], lead: str) -> str:
    """The gang's epoch: its restart count and its Cliques' template hashes, by role (a
    roll, a restart or a clique added or removed starts a new one). `lead` is the role
    whose Clique records when the gang was available in it (`ANNOTATION_AVAILABLE`)."""
    parts = [str(restarts_of(members)), lead]
    parts += [
        f"{r}={c.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, '')}"
        for r, c in sorted(members.items())
    ]
    return _core.safe_encode(_core.fnv1a_64(";".join(parts).encode()))


def was_available(lead: Clique, epoch: str) -> bool:
    """The gang was available whole in its epoch `epoch`: its lead Clique says so."""
    return lead.metadata.annotations.get(ANNOTATION_AVAILABLE) == epoch


def reset_after(policy: FailurePolicy) -> float:
    """Seconds a gang must stay available for its restarts so far to be forgiven: ten
    minutes, or twice a breach window plus the longest backoff if that is longer."""
    return max(
        RESET_AFTER_MIN_SECONDS,
        2.0 * (policy.min_available_breached_seconds + policy.restart_backoff.max_seconds),
    )


def counted_restarts(members: Mapping[str, Clique]) -> int:
    """The gang's restarts that count towards `maxGangRestarts` and the backoff: all of
    them, less those forgiven."""
    forgiven = max((_count(c, ANNOTATION_FORGIVEN) for c in members.values()), default=0)
    return max(0, restarts_of(members) - forgiven)


def unmarked(members: Mapping[str, Clique]) -> bool:
    """No Clique of the gang records a restart or a breach: for a gang that is not
    breached, `decide` has nothing to do and `restarts_of` is 0 (the common case, checked
    first so that a plan of thousands of healthy gangs stays cheap)."""
    for c in members.values():
        ann = c.metadata.annotations
        if ANNOTATION_RESTARTS in ann or ANNOTATION_BREACH_SINCE in ann:
            return False
    return True


def restarts_of(members: Mapping[str, Clique]) -> int:
    """The gang's restart count: the highest its Cliques record."""
    return max((_count(c) for c in members.values()), default=0)


def _level(members: Mapping[str, Clique], restarts: int) -> dict[str, str]:
    """The restart marks of a Clique that records the gang's count `restarts`, for the
    Cliques a restart did not reach (its patches are one per Clique, and one may have
    been refused): they finish that restart, they never start another."""
    lead = next(c for c in members.values() if _count(c) == restarts)
    marks = {ANNOTATION_RESTARTS: str(restarts)}
    for key in (ANNOTATION_LAST_RESTART, ANNOTATION_BREACH_SINCE, ANNOTATION_FORGIVEN):
        value = lead.metadata.annotations.get(key)
        if value:
            marks[key] = value
    return marks


def backoff(policy: FailurePolicy, restarts: int) -> float:
    """Seconds between the end of the breach window and restart number `restarts` + 1."""
    b = policy.restart_backoff
    return float(min(b.initial_seconds * 2 ** min(restarts, 30), b.max_seconds))


@dataclass
class GangDecision:
    """What to do about one gang now."""

    #: annotations to merge into every Clique of the gang (a value None removes one)
    annotate: dict[str, str | None] = field(default_factory=dict)
    #: the gang is due to be recreated now (the annotations carry the new restart count);
    #: the CliqueSet planner does it only within the rollout budget
    restart: bool = False
    #: the gang is breached and has used up its restarts
    failed: bool = False
    #: breached, a restart is coming
    restarting: bool = False
    #: seconds until this gang needs another look (0: none needed)
    requeue_after: float = 0.0
    #: (the lead Clique, the epoch) to record that the gang is available whole in it
    mark: tuple[Clique, str] | None = None


def _seconds_between(earlier: str, later: str) -> float | None:
    """Seconds from `earlier` to `later` (RFC 3339), None if either is unreadable."""
    a, b = parse_time(earlier), parse_time(later)
    return None if a is None or b is None else (b - a).total_seconds()


def decide(
    policy: FailurePolicy,
    members: Mapping[str, Clique],
    breached: bool,
    now: str,
    *,
    available_since: str = "",
) -> GangDecision:
    """The decision for one gang whose Cliques are `members`, breached or not, at `now`;
    `available_since` is when the gang became available, "" if it is not."""
    out = GangDecision()
    marks = [c.metadata.annotations.get(ANNOTATION_BREACH_SINCE, "") for c in members.values()]
    since_raw = min((m for m in marks if m), default="")
    if policy.restart_policy != GangRestartPolicy.RECREATE_GANG or not members:
        return out
    restarts = restarts_of(members)
    counted = counted_restarts(members)
    if any(_count(c) != restarts for c in members.values()):
        # a restart that reached only some Cliques: bring the others to it first
        out.annotate = dict(_level(members, restarts))
        out.failed = breached and counted >= policy.max_gang_restarts
        out.restarting = breached and not out.failed
        out.requeue_after = 1.0 if out.restarting else 0.0
        return out
    if not breached:
        if any(ANNOTATION_BREACH_SINCE in c.metadata.annotations for c in members.values()):
            out.annotate[ANNOTATION_BREACH_SINCE] = None
        if counted and available_since:
            stayed = _seconds_between(available_since, now)
            window = reset_after(policy)
            if stayed is not None and stayed >= window:
                out.annotate[ANNOTATION_FORGIVEN] = str(restarts)
            elif stayed is not None:
                out.requeue_after = max(1.0, window - stayed)
        return out
    if counted >= policy.max_gang_restarts:
        out.failed = True
        return out
    out.restarting = True
    now_t = parse_time(now)
    since = parse_time(since_raw) if since_raw else None
    if since is None or now_t is None:
        if any(
            c.metadata.annotations.get(ANNOTATION_BREACH_SINCE) != now for c in members.values()
        ):
            out.annotate[ANNOTATION_BREACH_SINCE] = now
        out.requeue_after = policy.min_available_breached_seconds + backoff(policy, counted)
        return out
    due = since + datetime.timedelta(
        seconds=policy.min_available_breached_seconds + backoff(policy, counted)
    )
    if now_t < due:
        out.requeue_after = max(1.0, (due - now_t).total_seconds())
        if any(
            c.metadata.annotations.get(ANNOTATION_BREACH_SINCE) != since_raw
            for c in members.values()
        ):
            out.annotate[ANNOTATION_BREACH_SINCE] = since_raw  # the whole gang says the same
        return out
    out.restart = True
    out.annotate = {
        ANNOTATION_RESTARTS: str(restarts + 1),
        ANNOTATION_LAST_RESTART: now,
        # the recreated gang is starting: its clock starts when it breaks again
        ANNOTATION_BREACH_SINCE: None,
    }
    return out


def conditions(
    setter: conds.Setter,
    restarting: list[int],
    failed: list[int],
    deferred: list[int] | None = None,
) -> list[Condition]:
    """`GangRestarting` and `GangFailed`, naming the gangs; `deferred` are the restarting
    gangs whose restart is due but waits for the rollout budget."""
    if restarting:
        names = ", ".join(map(str, restarting))
        message = f"gang(s) {names} below minAvailable, to be recreated"
        if deferred:
            message += (
                f"; gang(s) {', '.join(map(str, deferred))} wait for other gangs to be "
                "available again (maxUnavailable)"
            )
        going = setter.set(CONDITION_RESTARTING, "True", "BelowMinAvailable", message)
    else:
        going = setter.set(CONDITION_RESTARTING, "False", "AsExpected", "no gang is restarting")
    if failed:
        names = ", ".join(map(str, failed))
        gone = setter.set(
            CONDITION_FAILED,
            "True",
            "MaxGangRestartsReached",
            f"gang(s) {names} below minAvailable after maxGangRestarts restarts; left as they are",
        )
    else:
        gone = setter.set(CONDITION_FAILED, "False", "AsExpected", "no gang has failed")
    return [going, gone]
