"""What the CliqueSet planner reads and returns (plain data): the snapshot of one set and
of what it owns, the plan with the verdicts it reached, and what its phases share once the
spec is found plannable (`Setup`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.api.service import Service
from cliques.controllers.base import failures
from cliques.controllers.base.actions import Plan
from cliques.controllers.cliqueset import surge as surge_gangs
from cliques.controllers.cliqueset.rollout import Judgement
from cliques.controllers.features import (
    claims,
    drain,
    eviction_requests,
    gang_scheduling,
    inplace,
    kueue,
    revisions,
    scaling,
)


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
    #: what each gang feature reads, its own typed view (the controller fills them from
    #: the informers the features declare)
    gangs: gang_scheduling.View = field(default_factory=gang_scheduling.View)
    claims: claims.View = field(default_factory=claims.View)
    kueue: kueue.View = field(default_factory=kueue.View)
    scaling: scaling.View = field(default_factory=scaling.View)
    inplace: inplace.View = field(default_factory=inplace.View)
    revisions: revisions.View = field(default_factory=revisions.View)
    drain: drain.View = field(default_factory=drain.View)
    evictions: eviction_requests.View = field(default_factory=eviction_requests.View)


@dataclass
class CliqueSetPlan(Plan):
    """A plan, and the verdicts it reached (for the next plan of the same CliqueSet)."""

    judgement: Judgement | None = None
    #: gangs breached and to be recreated, and gangs that used up their restarts
    restarting: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    #: gangs due for a restart that wait for the rollout budget
    deferred: list[int] = field(default_factory=list)
    #: gangs with pods on drained nodes, moved now or waiting for the budget (`drain`)
    moving: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Setup:
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
    #: the subdomain policy of new gangs (`subdomains.policy`), found when first asked:
    #: only a plan with a gang to make reads it, and finding it may read every Clique
    policy_of: Callable[[], str]
    set_hash: str
    #: maxSurge resolved and the surge gangs this plan keeps (`surge`)
    surge: surge_gangs.Surge = field(default_factory=surge_gangs.Surge)

    @cached_property
    def policy(self) -> str:
        """The subdomain policy of the set's new gangs (`policy_of`, asked once)."""
        return self.policy_of()
