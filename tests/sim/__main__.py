"""Long randomized runs of the gang simulator: `python -m tests.sim --examples N --seed S`.

Runs N random scenarios (`scenarios.scenarios()`, failurePolicy RecreateGang) through the
real controllers, every invariant checked after every step, with a progress bar; prints a
summary (examples, simulated hours, events by kind, restarts, rolls, violations). On a
violation hypothesis shrinks the scenario: the minimal failing one is printed with its
report (and its repr, to replay it) and the exit status is 1.

`--keep-going` runs every example to its end without stopping or shrinking and prints,
per kind of finding, how many runs had it and the shortest scenario that did: an overview
of every defect at once.

`--show NAME` runs one of the regression scenarios (`SHOWN`: the cases found by hand and
those the simulator found) and prints its whole history.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, seed, settings
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tests.sim import scenarios as sc
from tests.sim.invariants import InvariantViolation
from tests.sim.operator import OperatorError, SimulatorError
from tests.sim.simulation import Outcome, Simulation

SHOWN: dict[str, Callable[[], sc.Scenario]] = {
    "resize_with_nodes_full": sc.resize_with_nodes_full,
    "one_crash_slow_start": sc.one_crash_slow_start,
    "start_order_after_restart": sc.start_order_after_restart,
    "start_order_with_gates": lambda: sc.start_order_after_restart(gang_scheduling=True),
    "reserved_keys_in_template": sc.reserved_keys_in_template,
    "crash_while_starting": sc.crash_while_starting,
    "roll_waiting_for_terminating_pods": sc.roll_waiting_for_terminating_pods,
    "roll_after_restart_on_full_nodes": sc.roll_after_restart_on_full_nodes,
    "new_image_during_a_roll_and_a_resize": sc.new_image_during_a_roll_and_a_resize,
}
FAILURES = (InvariantViolation, OperatorError, SimulatorError)


@dataclass
class Totals:
    examples: int = 0
    seconds: int = 0
    events: Counter[str] = field(default_factory=Counter)
    restarts: int = 0
    rolls: int = 0
    gang_failed: int = 0
    ended_available: int = 0
    reconciles: int = 0
    failures: int = 0

    def add(self, o: Outcome) -> None:
        self.examples += 1
        self.seconds += o.seconds
        self.events.update(o.events)
        self.restarts += o.restarts
        self.rolls += o.rolls
        self.gang_failed += o.gang_failed
        self.ended_available += o.available
        self.reconciles += o.reconciles


def show(name: str, console: Console) -> int:
    scenario = SHOWN[name]()
    sim = Simulation(scenario, strict=False)
    outcome = sim.run()
    console.print(scenario.describe(), markup=False)
    console.print(
        sim.history.tail(len(sim.history.entries)), markup=False, highlight=False, soft_wrap=True
    )
    for finding in outcome.findings:
        console.print(f"[red]{finding}[/red]")
    console.print(
        f"restarts {outcome.restarts}, rolls {outcome.rolls}, GangFailed seen "
        f"{outcome.gang_failed}, Available at the end {outcome.available}"
    )
    return 1 if outcome.findings else 0


def explore(examples: int, seed_: int, max_events: int, console: Console) -> int:
    totals = Totals()
    failing: list[sc.Scenario] = []
    started = time.monotonic()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[detail]}"),
        console=console,
    )
    task = progress.add_task("exploring", total=examples, detail="")

    @seed(seed_)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(scenario=sc.scenarios(max_events=max_events))
    def run(scenario: sc.Scenario) -> None:
        try:
            outcome = Simulation(scenario).run()
        except FAILURES:
            if not failing:
                totals.examples += 1
                totals.failures += 1
                progress.update(task, description="shrinking", detail="a violation found")
            failing.append(scenario)
            raise
        if failing:
            return  # shrinking: these runs are not part of the exploration
        totals.add(outcome)
        progress.update(
            task,
            advance=1,
            detail=f"{totals.seconds / 3600:.1f} sim h, {totals.restarts} restarts, "
            f"{totals.rolls} rolls",
        )

    error: BaseException | None = None
    with progress:
        try:
            run()
        except FAILURES as exc:
            error = exc
    summary(totals, time.monotonic() - started, console)
    if error is None:
        return 0
    console.rule("[red]minimal failing scenario")
    if failing:
        console.print(failing[-1].describe(), markup=False, highlight=False, soft_wrap=True)
        console.print(repr(failing[-1]), markup=False, highlight=False, soft_wrap=True)
    console.print(str(error), markup=False, highlight=False, soft_wrap=True)
    return 1


def survey(examples: int, seed_: int, max_events: int, console: Console) -> int:
    """Every example to its end (findings kept, not raised); the findings by kind."""
    totals = Totals()
    kinds: Counter[str] = Counter()
    shortest: dict[str, tuple[sc.Scenario, str]] = {}
    started = time.monotonic()
    progress = Progress(
        TextColumn("[bold]surveying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[detail]}"),
        console=console,
    )
    task = progress.add_task("surveying", total=examples, detail="")

    @seed(seed_)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(scenario=sc.scenarios(max_events=max_events))
    def run(scenario: sc.Scenario) -> None:
        outcome = Simulation(scenario, strict=False).run()
        totals.add(outcome)
        seen: set[str] = set()
        for finding in outcome.findings:
            key = f"{finding.kind.invariant}: {_shape(finding.message)}"
            if key in seen:
                continue
            seen.add(key)
            kinds[key] += 1
            best = shortest.get(key)
            if best is None or len(scenario.events) < len(best[0].events):
                shortest[key] = (scenario, str(finding))
        totals.failures += bool(outcome.findings)
        progress.update(task, advance=1, detail=f"{totals.failures} with findings")

    with progress:
        run()
    summary(totals, time.monotonic() - started, console)
    for key, n in kinds.most_common():
        console.rule(f"{n} run(s): {key}", style="red")
        scenario, finding = shortest[key]
        console.print(finding, markup=False, highlight=False, soft_wrap=True)
        console.print(repr(scenario), markup=False, highlight=False, soft_wrap=True)
    return 1 if kinds else 0


def _shape(message: str) -> str:
    """A finding's message with its numbers and names blurred: its kind."""
    return re.sub(r"\d+", "N", message.split(";", maxsplit=1)[0])[:140]


def summary(t: Totals, wall: float, console: Console) -> None:
    table = Table(title="gang simulator", show_header=False)
    table.add_row("examples tried", str(t.examples))
    table.add_row("simulated hours", f"{t.seconds / 3600:.1f}")
    table.add_row("wall time", f"{wall:.1f} s")
    table.add_row("reconciles", str(t.reconciles))
    table.add_row(
        "events by kind", ", ".join(f"{k} {n}" for k, n in sorted(t.events.items())) or "none"
    )
    table.add_row("gang restarts", str(t.restarts))
    table.add_row("gang rolls", str(t.rolls))
    table.add_row("runs that saw GangFailed", str(t.gang_failed))
    table.add_row("runs that ended Available", str(t.ended_available))
    table.add_row("runs with violations", str(t.failures))
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.sim", description=__doc__)
    parser.add_argument("--examples", type=int, default=1000, help="random scenarios to run")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed")
    parser.add_argument("--max-events", type=int, default=8, help="events per scenario")
    parser.add_argument(
        "--keep-going", action="store_true", help="survey: no stop, no shrinking, findings by kind"
    )
    parser.add_argument("--show", choices=sorted(SHOWN), help="print one regression scenario")
    args = parser.parse_args(argv)
    console = Console()
    if args.show:
        return show(args.show, console)
    if args.keep_going:
        return survey(args.examples, args.seed, args.max_events, console)
    return explore(args.examples, args.seed, args.max_events, console)


if __name__ == "__main__":
    sys.exit(main())
