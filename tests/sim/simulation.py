"""The run loop: world events, the operator, the invariants, on the simulated clock.

At every instant (a whole second; the clock jumps to the next instant at which anything
is due: a scenario event, a pod turning Ready or vanishing, a readiness failure ending, a
reconcile requeued or retried):

1. the kubelets and the scheduler act (`Cluster.tick`), then the scenario's events of
   that second are applied (world events, user edits, operator restarts);
2. the operator reconciles until quiescent (`SimOperator.settle`, the scheduler running
   between rounds, so a pod created now is bound now);
3. the invariant checker's findings of the step are raised as an `InvariantViolation`
   (with the scenario, the gangs' states and the step history), or kept when not strict.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cliques.api import labels
from tests.sim.cluster import Cluster, History, condition, meta, pod_ready
from tests.sim.invariants import Checker, Finding, InvariantViolation
from tests.sim.operator import SimOperator
from tests.sim.scenarios import NODE_EVENTS, Event, Scenario, cliqueset_body

#: History entries shown with a violation.
HISTORY_SHOWN = 70


@dataclass
class Outcome:
    """What a run did."""

    scenario: Scenario
    seconds: int = 0
    events: Counter[str] = field(default_factory=Counter)
    restarts: int = 0
    rolls: int = 0
    findings: list[Finding] = field(default_factory=list)
    #: the CliqueSet reported GangFailed=True at some point
    gang_failed: bool = False
    #: the CliqueSet reports Available=True at the end
    available: bool = False
    reconciles: int = 0


class Simulation:
    def __init__(self, scenario: Scenario, *, strict: bool = True) -> None:
        self.scenario = scenario
        self.strict = strict
        self.rng = random.Random(scenario.seed)
        self._order = random.Random(scenario.seed + 1) if scenario.interleave else None
        self.history = History()
        self.cluster = Cluster(
            grace=scenario.grace,
            latency=lambda: scenario.latency.draw(self.rng),
            history=self.history,
            gang_api=scenario.gang_api,
        )
        self.checker = Checker(self.cluster)
        self.checker.drains = scenario.drains
        self.checker.gang_api = scenario.gang_api if scenario.gang_scheduling else ""
        self.cluster.observer = self.checker
        for i, capacity in enumerate(scenario.nodes):
            node = self.cluster.add_node(capacity)
            if i < len(scenario.used):
                self.cluster.nodes[node].foreign = min(capacity, scenario.used[i])
        self.operator: SimOperator | None = None
        self.outcome = Outcome(scenario)
        self._images = {role: 1 for role, _ in scenario.roles}
        self._pending = sorted(scenario.events, key=lambda e: e.at)
        self._started = False

    # -- running ------------------------------------------------------------------------------

    def run(self, until: int | None = None) -> Outcome:
        """Simulate up to second `until` (the scenario's end if None); may be called again
        to go on."""
        asyncio.run(self._run(self.scenario.end if until is None else until))
        return self.outcome

    async def _run(self, until: int) -> None:
        if not self._started:
            self._started = True
            self.cluster.create("user", "CliqueSet", cliqueset_body(self.scenario))
            self.operator = self._new_operator()
            await self._step()
        while True:
            nxt = self._next_instant()
            if nxt is None or nxt > until:
                break
            self.cluster.now = nxt
            await self._step()
        self._finish()

    def _new_operator(self) -> SimOperator:
        return SimOperator(
            self.cluster,
            gang_api=self.scenario.gang_api if self.scenario.gang_scheduling else "",
            shuffle=self._order,
            lag=self.scenario.lag,
            drains=self.scenario.drains,
        )

    def _next_instant(self) -> int | None:
        assert self.operator is not None
        now = self.cluster.now
        times = [e.at for e in self._pending if e.at > now]
        for t in (self.cluster.next_timer(), self.operator.next_due(), self.checker.next_check()):
            if t is not None and t > now:
                times.append(t)
        if not times:
            return None
        nxt = min(times)
        return nxt if nxt <= self.scenario.end else None

    async def _step(self) -> None:
        assert self.operator is not None
        now = self.cluster.now
        self.cluster.tick()
        self.checker.after_world()
        while self._pending and self._pending[0].at <= now:
            self._apply(self._pending.pop(0))
            self.checker.after_world()
        quiet = await self.operator.settle(self.cluster.tick)
        self.checker.refresh()
        self.checker.lost_node_left()
        if quiet and not self.operator.due:
            self.checker.quiet()
        elif quiet:
            self.checker.groups_settled()  # (requeues later on do not excuse a group)
        cqs = self.cluster.get("CliqueSet", "llama")
        failed = condition(cqs, "GangFailed") if cqs is not None else None
        if failed is not None and failed.get("status") == "True":
            self.outcome.gang_failed = True
        if self.checker.findings:
            found, self.checker.findings = self.checker.findings, []
            self.outcome.findings += found
            if self.strict:
                raise found[0].kind(self.report(found))

    def _finish(self) -> None:
        o = self.outcome
        o.seconds = self.cluster.now
        o.restarts = self.checker.restarts
        o.rolls = len(self.checker.rolls)
        o.reconciles += self.operator.reconciles if self.operator is not None else 0
        cqs = self.cluster.get("CliqueSet", "llama")
        available = condition(cqs, "Available") if cqs is not None else None
        o.available = available is not None and available.get("status") == "True"

    # -- world events and user edits ----------------------------------------------------------

    def _apply(self, ev: Event) -> None:
        c = self.cluster
        self.outcome.events[ev.kind] += 1
        if ev.kind in ("crash", "evict", "unready"):
            running = c.running_pods()
            if isinstance(ev.target, str):
                pods = [p for p in running if meta(p)["name"] == ev.target]
            else:
                pods = [running[ev.target % len(running)]] if running else []
            if not pods:
                self.history.add(c.now, "world", f"{ev.kind}: no running pod {ev.target}")
                return
            pod = pods[0]
            ready = "Ready " if pod_ready(pod) else ""
            self.history.add(c.now, "world", f"{ev.kind} {ready}pod {meta(pod)['name']}")
            if ev.kind == "crash":
                c.crash(pod)
            elif ev.kind == "evict":
                c.evict(pod)
            else:
                c.unready(pod, ev.value)
        elif ev.kind in NODE_EVENTS:
            names = sorted(c.nodes)
            if not names:
                self.history.add(c.now, "world", f"{ev.kind}: no node")
                return
            node = ev.target if isinstance(ev.target, str) else names[ev.target % len(names)]
            if node not in c.nodes:
                self.history.add(c.now, "world", f"{ev.kind}: no node {node}")
                return
            if ev.kind == "node-loss":
                self.history.add(c.now, "world", f"node {node} lost")
                c.lose_node(node)
            elif ev.kind == "node-down":
                c.node_down(node)
            elif ev.kind == "node-up":
                c.node_up(node)
            elif ev.kind == "out-of-service":
                c.taint_out_of_service(node)
            elif ev.kind in ("cordon", "drain"):
                c.cordon(node, drain=ev.kind == "drain")
            elif ev.kind == "fill":
                taken = min(ev.value, c.free(node))
                c.nodes[node].foreign += taken
                self.history.add(c.now, "world", f"node {node}: other pods take {taken} slot(s)")
            else:
                given = min(ev.value, c.nodes[node].foreign)
                c.nodes[node].foreign -= given
                self.history.add(c.now, "world", f"node {node}: {given} slot(s) freed")
        elif ev.kind == "node-add":
            name = c.add_node(ev.value)
            self.history.add(c.now, "world", f"node {name} added, capacity {ev.value}")
        elif ev.kind == "operator-restart":
            self.history.add(c.now, "world", "operator restarted")
            if self.operator is not None:
                self.outcome.reconciles += self.operator.reconciles
            self.operator = self._new_operator()
        else:
            self._edit(ev)

    def _edit(self, ev: Event) -> None:
        """A user edit of the CliqueSet's spec (a merge patch)."""
        c = self.cluster
        cqs = c.get("CliqueSet", "llama")
        assert cqs is not None
        spec = copy.deepcopy(cqs["spec"])
        patch: dict[str, Any]
        cliques = spec["template"]["cliques"]
        if ev.kind == "resize":
            for tmpl in cliques:
                if tmpl["name"] == ev.target:
                    tmpl["replicas"] = ev.value
            patch = {"spec": {"template": {"cliques": cliques}}}
        elif ev.kind == "image":
            for tmpl in cliques:
                if ev.target in ("*", tmpl["name"]):
                    self._images[tmpl["name"]] += 1
                    image = f"vllm:{self._images[tmpl['name']]}"
                    tmpl["template"]["spec"]["containers"][0]["image"] = image
            patch = {"spec": {"template": {"cliques": cliques}}}
        elif ev.kind == "gangs":
            patch = {"spec": {"replicas": ev.value}}
        elif ev.kind == "max-unavailable":
            patch = {"spec": {"updateStrategy": {"maxUnavailable": ev.value}}}
        elif ev.kind == "max-surge":
            patch = {"spec": {"updateStrategy": {"maxSurge": ev.value}}}
        elif ev.kind == "partition":
            patch = {"spec": {"updateStrategy": {"partition": ev.value}}}
        else:
            raise ValueError(f"unknown event {ev.kind}")
        self.history.add(c.now, "user", str(ev).split(" ", 1)[1])
        c.patch("user", "CliqueSet", "llama", patch)

    # -- reporting ----------------------------------------------------------------------------

    def report(self, found: list[Finding]) -> str:
        assert self.operator is not None
        return "\n".join(
            [
                f"{len(found)} invariant violation(s) at t={self.cluster.now}s:",
                *(f"  {f}" for f in found),
                "scenario:",
                *(f"  {line}" for line in self.scenario.describe().splitlines()),
                "gangs:",
                *(f"  {line}" for line in self.checker.describe().splitlines()),
                f"operator: {self.operator.describe()}",
                "history:",
                self.history.tail(HISTORY_SHOWN),
            ]
        )

    # -- queries for tests --------------------------------------------------------------------

    def pods(self, role: str | None = None) -> list[dict[str, Any]]:
        return [
            p
            for p in self.cluster.objects_of("Pod")
            if role is None or meta(p)["labels"].get(labels.LABEL_CLIQUE) == role
        ]

    def set_condition(self, type_: str) -> dict[str, Any] | None:
        cqs = self.cluster.get("CliqueSet", "llama")
        return condition(cqs, type_) if cqs is not None else None

    def restarts(self) -> int:
        """Gang restarts the operator made (its Cliques' restart counts raised)."""
        return self.checker.restarts


def run_scenario(scenario: Scenario, *, strict: bool = True) -> Outcome:
    """Run `scenario` to its end; raises InvariantViolation on the first violating step
    unless `strict` is False."""
    return Simulation(scenario, strict=strict).run()


__all__ = ["InvariantViolation", "Outcome", "Simulation", "run_scenario"]
