"""Surge gangs of a rolling update (pure): `updateStrategy.maxSurge`, make before break.

A surge gang is a gang like any other, at an index at or above `spec.replicas`: while a
roll is under way the planner plans the set as if it had `replicas + kept` gangs
(`widened`), so the surge gangs get their Cliques on the new template, their PodGroups,
Services and Kueue workloads from the same code as every gang; only the status counts
the user's `replicas` (and the surge gangs apart, `status.surgeReplicas`).

- `resolve`: maxSurge as a number of gangs: an int as it is, a percent of `replicas`
  rounded up (as a Deployment rounds its maxSurge), anything else 0. Under Recreate, 0.
- `kept`: how many surge gangs (at indices `replicas`, `replicas + 1`, ...) a plan keeps.
  While outdated gangs from the partition on remain: maxSurge, or fewer when fewer gangs
  are left to roll and to come back. Never fewer than those standing in for a gang below
  `replicas` that is not available (as many as such gangs, at most those made, and as
  far up as the available ones that stand in for them: after a scale-down or a loss the
  first gangs above `replicas` may be broken while a whole one sits higher): so the
  last surge gangs go (highest index first: the planner deletes every gang at or above
  the width it plans) once every gang below `replicas` is available again, and a maxSurge
  lowered mid-roll takes effect as they go. The same holds for the gangs a scale-down
  removes while maxSurge is above 0: they are the indices right above `replicas`.
  Indices are dense again at the end because surge gangs only ever take the indices
  right above `replicas`.
- `Surge.allowance`: the gangs the operator may have down at once: `maxUnavailable` (at
  least 1 without surge, so that a roll moves) plus the surge gangs kept. A surge gang not
  yet available is down, so it pays for itself; once available, it lets one more outdated
  gang roll. So the available gangs, surge gangs included, never fall below
  `replicas - maxUnavailable` by the operator's hand, and with `maxUnavailable: 0` never
  below `replicas`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.policies import UpdateStrategyType
from cliques.controllers.cliqueset.rollout import GangFacts, Gangs, judge

_PERCENT = re.compile(r"^([0-9]{1,10})%$")


def resolve(value: int | str, replicas: int) -> int:
    """`maxSurge` as a number of gangs: an int as it is (0 if negative), a percent of
    `replicas` rounded up; anything else (refused by the CRD) 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, value)
    found = _PERCENT.match(value.strip())
    if found is None:
        return 0
    return -(-int(found.group(1)) * max(0, replicas) // 100)


@dataclass(frozen=True, slots=True)
class Surge:
    """The surge of one plan: the user's `replicas`, maxSurge resolved against them, and
    the surge gangs the plan keeps."""

    replicas: int = 0
    most: int = 0
    kept: int = 0

    def allowance(self, max_unavailable: int) -> int:
        """Gangs the operator may have down at once (module docstring)."""
        base = max(0, max_unavailable) if self.most > 0 else max(1, max_unavailable)
        return base + self.kept

    def keeping(self, kept: int) -> Surge:
        return dataclasses.replace(self, kept=kept)


def of(cqs: CliqueSet) -> Surge:
    """The surge a set allows, none kept yet."""
    spec = cqs.spec
    strategy = spec.update_strategy
    rolling = strategy.type == UpdateStrategyType.ROLLING_UPDATE
    most = resolve(strategy.max_surge, spec.replicas) if rolling else 0
    return Surge(replicas=spec.replicas, most=most)


def kept(
    surge: Surge,
    facts: Sequence[GangFacts],
    rollable: Sequence[int],
    made: int,
    available_above: Sequence[int] = (),
) -> int:
    """How many surge gangs a plan keeps (module docstring). `facts`: those of gangs
    `0..replicas-1`; `rollable`: the outdated ones a roll takes; `made`: the surge gangs
    that exist (with a live Clique); `available_above`: the available ones among them, as
    offsets above `replicas` in ascending order (`missing_below` says when they count)."""
    if surge.most <= 0:
        return 0
    missing = missing_below(surge, facts)
    # (never fewer than stand in now: a maxSurge lowered mid-roll takes effect as they go)
    standing = min(made, missing)
    if missing and available_above:
        # Reach the available gangs that stand in, not the first gangs above `replicas`:
        # after a scale-down or a loss those may be broken while a whole one sits higher.
        reach = available_above[min(missing, len(available_above)) - 1] + 1
        standing = max(standing, reach)
    if rollable:
        return max(standing, min(surge.most, len(rollable) + missing))
    return standing


def missing_below(surge: Surge, facts: Sequence[GangFacts]) -> int:
    """The gangs below `replicas` that are not available (surge gangs stand in for them)."""
    return sum(1 for f in facts[: surge.replicas] if not f.available)


def available_above(
    surge: Surge,
    gangs: Gangs,
    by_gang: Mapping[int, dict[str, Clique]],
    rehashes: Mapping[str, str],
    counts: Mapping[int, Mapping[str, int]],
) -> list[int]:
    """The available gangs at or above `replicas` (with a live Clique), as offsets above
    it, for `kept`: judged only while a gang below `replicas` is missing (`gangs`: the
    verdicts on those below)."""
    if surge.most <= 0 or not missing_below(surge, gangs.facts):
        return []
    out = []
    for g in sorted(g for g in by_gang if g >= surge.replicas):
        found = by_gang[g]
        if not live(found):
            continue
        verdict = judge(g, found, gangs.judgement.context, rehashes, counts.get(g))
        if verdict.facts.available:
            out.append(g - surge.replicas)
    return out


def live(members: Mapping[str, Clique]) -> bool:
    """Whether a gang has a Clique that is not being deleted."""
    return any(c.metadata.deletion_timestamp is None for c in members.values())


def made(gangs: Sequence[int], replicas: int) -> int:
    """The surge gangs that exist: gang indices (with a live Clique) at or above
    `replicas`."""
    return len({g for g in gangs if g >= replicas})


def widened(cqs: CliqueSet, surge: Surge) -> CliqueSet:
    """The set as the phases plan it: `replicas + kept` gangs."""
    if not surge.kept:
        return cqs
    spec = msgspec.structs.replace(cqs.spec, replicas=surge.replicas + surge.kept)
    return msgspec.structs.replace(cqs, spec=spec)
