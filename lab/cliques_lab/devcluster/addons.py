"""The dev cluster's optional add-ons (`cliques dev-cluster up --with NAME`): which there are,
what each runs, and how a cluster's add-ons are recorded and compared. Pure but for reading
and writing the record file.

- `kueue`: Kueue's controller manager, a host process cliques starts against the cluster's
  kubeconfig (`kueue` renders its configuration and webhooks, `addons_up` runs it). It can
  be added to an existing cluster.
- `metrics-server`: metrics-server, which kwokctl starts with the other components and
  feeds from KWOK's simulated usage (`metrics_server`). kwokctl only starts components it
  was created with, so it cannot be added to an existing cluster.
- `prometheus`: Prometheus, a host process cliques starts (`prometheus` renders its
  configuration, `addons_up` runs it) that scrapes the operator's /metrics on the host and
  evaluates the chart's alerts. It can be added to an existing cluster.

A cluster's add-ons are recorded in `<cache>/run/<name>/addons.json`, beside the kwokctl
configuration it was made from, when it is created and when one is added; `status` lists
them and `down` stops their processes with the rest. `plan()` tells what `up` asked for
against what a cluster has.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cliques_lab.devcluster import gomodules
from cliques_lab.devcluster.gomodules import GoModule


@dataclass(frozen=True)
class Addon:
    """One add-on: the Go module it is built from and the processes it runs.

    `by_kwokctl`: kwokctl starts (and restarts) its processes as components of the cluster,
    so it must be chosen when the cluster is created; otherwise cliques starts them and
    they can be added later.
    """

    name: str
    summary: str
    module: GoModule
    components: tuple[str, ...]
    by_kwokctl: bool


KUEUE: Final = Addon(
    name="kueue",
    summary="Kueue's manager: queues, quotas, admission of pods and pod groups",
    module=gomodules.KUEUE,
    components=("kueue",),
    by_kwokctl=False,
)
METRICS_SERVER: Final = Addon(
    name="metrics-server",
    summary="metrics-server, serving pod usage KWOK simulates from pod annotations",
    module=gomodules.METRICS_SERVER,
    components=("metrics-server",),
    by_kwokctl=True,
)
PROMETHEUS: Final = Addon(
    name="prometheus",
    summary="Prometheus, scraping the operator's /metrics and evaluating the chart's alerts",
    module=gomodules.PROMETHEUS,
    components=("prometheus",),
    by_kwokctl=False,
)
#: Every add-on, by name, in the order they are listed and started.
ADDONS: Final[Mapping[str, Addon]] = {a.name: a for a in (METRICS_SERVER, KUEUE, PROMETHEUS)}

RECORD_FILE: Final = "addons.json"


def parse(names: Iterable[str]) -> tuple[str, ...]:
    """Add-on names as typed (repeated or comma-separated) -> known names, each once, in
    `ADDONS` order; ValueError naming the known ones."""
    wanted: set[str] = set()
    for item in names:
        for name in (part.strip() for part in item.split(",")):
            if not name:
                continue
            if name not in ADDONS:
                known = ", ".join(ADDONS)
                raise ValueError(f"unknown add-on {name!r}: the add-ons are {known}")
            wanted.add(name)
    return tuple(name for name in ADDONS if name in wanted)


def components(names: Iterable[str], *, by_kwokctl: bool | None = None) -> tuple[str, ...]:
    """The processes of add-ons `names` (only those kwokctl starts, or only those it does
    not, when `by_kwokctl` is given)."""
    chosen = set(names)
    return tuple(
        component
        for addon in ADDONS.values()
        if addon.name in chosen and (by_kwokctl is None or addon.by_kwokctl == by_kwokctl)
        for component in addon.components
    )


def record_text(names: Iterable[str]) -> str:
    return json.dumps({"addons": list(parse(names))}) + "\n"


def read_record(path: Path) -> tuple[str, ...]:
    """The add-ons recorded in `path` (none if it is missing; unknown names are dropped,
    so that a newer cliques' record does not break an older one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    listed = data.get("addons") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(name for name in ADDONS if name in listed)


@dataclass(frozen=True)
class Plan:
    """What `up` does with the add-ons of an existing cluster."""

    add: tuple[str, ...]  # asked for, missing, and can be added: `up` starts them
    refused: tuple[str, ...]  # asked for, missing, and only a new cluster can have them
    kept: tuple[str, ...]  # the cluster has them and `up` did not ask: they keep running

    def refusal(self, cluster: str) -> str:
        """The error for `refused`: what differs and how to get a cluster with them."""
        names = " and ".join(self.refused)
        return (
            f"dev cluster '{cluster}' was created without {names}, which kwokctl starts "
            "only in a new cluster: remove it with "
            f"`cliques dev-cluster down --name {cluster}` (which deletes everything in it) "
            "and run `up` again with the same --with, or choose another --name"
        )

    def notes(self) -> list[str]:
        out = [f"adding {name} to the existing cluster" for name in self.add]
        if self.kept:
            out.append(
                f"the existing cluster also runs {', '.join(self.kept)} (kept; `down` it "
                "first to drop it)"
            )
        return out


def plan(have: Iterable[str], want: Iterable[str] | None) -> Plan:
    """Add-ons asked for (`want`; None: not asked, the cluster keeps its own) against those
    an existing cluster has (`have`)."""
    present = set(have)
    asked = set(parse(want)) if want is not None else present
    missing = [n for n in ADDONS if n in asked and n not in present]
    return Plan(
        add=tuple(n for n in missing if not ADDONS[n].by_kwokctl),
        refused=tuple(n for n in missing if ADDONS[n].by_kwokctl),
        kept=tuple(n for n in ADDONS if n in present and n not in asked),
    )
