"""The node phases of `cliques bench scale` (pure): which phases a run asks for, the gangs of
a workload by pod name, which nodes a phase disrupts, and what the per-second samples of
whole Ready gangs sum up to.

- `drain`: 10% of the nodes that hold the workload's pods (at least one) are drained at
  once with `kubectl drain`, as an administrator would, while the set serves;
- `node-loss`: the node holding pods of the most gangs stops its heartbeat, and is tainted
  `node.kubernetes.io/out-of-service` a fixed time later.

A gang is whole when every pod it should have exists, is not being deleted, and is Ready:
for cliques the pods of one gang index of a CliqueSet, for LeaderWorkerSet a group, its
leader and its workers. The phases run in `disruption_run`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from cliques_lab.bench.workload import Shape

DRAIN = "drain"
NODE_LOSS = "node-loss"
#: The node phases, in the order a run takes them.
PHASES = (DRAIN, NODE_LOSS)

#: The share of the workload's nodes a drain takes.
DRAIN_FRACTION = 0.1
#: The taint an administrator puts on a node known to be down (KEP-2268).
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
OUT_OF_SERVICE_TAINT = f"{OUT_OF_SERVICE}=nodeshutdown:NoExecute"


def parse_phases(text: str) -> tuple[str, ...]:
    """`--with-phases`: a comma list of node phases, returned in the order they run."""
    asked = {p.strip() for p in text.split(",") if p.strip()}
    unknown = sorted(asked - set(PHASES))
    if unknown:
        raise ValueError(
            f"unknown phase(s) {', '.join(unknown)}: the node phases are {', '.join(PHASES)}"
        )
    return tuple(p for p in PHASES if p in asked)


def gangs(kind: str, shape: Shape) -> list[frozenset[str]]:
    """The pod names of every gang of the workload, by the names the operator gives them:
    `kind` "CliqueSet" (`<set>-<gang>-<clique>-<index>`) or "LeaderWorkerSet" (the
    leader `<set>-<group>`, its workers `<set>-<group>-<index>`, index 1 to size-1)."""
    out: list[frozenset[str]] = []
    for name in shape.names():
        for g in range(shape.gangs):
            if kind == "LeaderWorkerSet":
                pods = {f"{name}-{g}"} | {f"{name}-{g}-{i}" for i in range(1, shape.pods)}
            else:
                pods = {f"{name}-{g}-{role}-{i}" for role, n in shape.roles() for i in range(n)}
            out.append(frozenset(pods))
    return out


def whole(gang_pods: Iterable[frozenset[str]], ready: AbstractSet[str]) -> int:
    """How many gangs have every pod in `ready` (the names of live, Ready pods)."""
    return sum(1 for g in gang_pods if g <= ready)


def gangs_by_node(
    gang_pods: Iterable[frozenset[str]], node_of: Mapping[str, str]
) -> dict[str, int]:
    """Per node, how many gangs have a pod there (`node_of`: pod name -> node name, for
    scheduled pods)."""
    counts: dict[str, int] = {}
    for g in gang_pods:
        for node in {node_of[p] for p in g if node_of.get(p)}:
            counts[node] = counts.get(node, 0) + 1
    return counts


def drain_nodes(pods_by_node: Mapping[str, int], fraction: float = DRAIN_FRACTION) -> list[str]:
    """The nodes a drain takes: `fraction` of those holding the workload's pods (rounded
    down, at least one), those with the most pods first, ties by name."""
    held = [n for n, k in pods_by_node.items() if k > 0]
    if not held:
        return []
    n = max(1, int(len(held) * fraction))
    return sorted(held, key=lambda node: (-pods_by_node[node], node))[:n]


def lost_node(gangs_on: Mapping[str, int]) -> str | None:
    """The node a node loss takes: the one with pods of the most gangs, ties by name."""
    held = [n for n, k in gangs_on.items() if k > 0]
    return min(held, key=lambda node: (-gangs_on[node], node)) if held else None


@dataclass(frozen=True)
class Summary:
    """What the samples of one phase say. Times are seconds from the phase's start."""

    gangs: int
    min_whole: int
    #: seconds the whole gangs spent below `gangs` (samples below full times the period)
    seconds_below_full: float
    #: the first sample below full, None if there was none
    first_below: float | None
    #: the first sample at full after the last one below it; None if the phase ended below
    #: full, 0 if it never went below
    whole_again: float | None

    def as_extra(self) -> dict[str, float]:
        """The figures as a phase's `extra` (absent ones left out)."""
        out = {
            "gangs": float(self.gangs),
            "min_whole_gangs": float(self.min_whole),
            "seconds_below_full": self.seconds_below_full,
        }
        if self.first_below is not None:
            out["first_below_full_s"] = self.first_below
        if self.whole_again is not None:
            out["whole_again_s"] = self.whole_again
        return out


def summarize(samples: list[tuple[float, int]], gangs: int, period: float = 1.0) -> Summary:
    """Summary of (seconds since the phase's start, whole gangs) samples taken every
    `period` seconds."""
    below = [t for t, n in samples if n < gangs]
    if not samples:
        return Summary(gangs, gangs, 0.0, None, None)
    whole_again: float | None = 0.0
    if below:
        last = below[-1]
        whole_again = next((t for t, n in samples if t > last and n >= gangs), None)
    return Summary(
        gangs=gangs,
        min_whole=min(n for _, n in samples),
        seconds_below_full=len(below) * period,
        first_below=below[0] if below else None,
        whole_again=whole_again,
    )
