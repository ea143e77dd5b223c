"""The per-CliqueSet gang metrics: what each set's gangs are doing, labelled by namespace and
CliqueSet name only (never a gang or pod index), gone when the set is.

prometheus-client cannot remove a labelled series in multiprocess mode, so these are not
prometheus-client metrics: each CliqueSet controller keeps a `SetTable` (written after each
plan, `observe`; dropped by key in `forget`, whole in `close`), and a collector turns the
tables into metric families when /metrics is read.

- One process (`cliques operator --workers 1`, the in-process operator of the tests): the
  collector reads the tables of this process (`collector()`).
- Under a supervisor: a worker writes its tables as JSON to `sets-<pid>.json` in the
  PROMETHEUS_MULTIPROC_DIR (at most every `FLUSH_SECONDS`, atomically), and the supervisor's
  collector (`collector(directory)`) merges the files of its live workers; it removes a dead
  worker's file as it does its `.db` files (`remove_files`).

The families (`FAMILIES`): gauges `cliques_cliqueset_gangs_{desired,whole,available,updated,
restarting,moving,failed,queued}`, counters `cliques_cliqueset_gang_restarts_total` (from the growth
of `status.gangRestarts` that the controller sees) and `cliques_cliqueset_gang_rolls_total`
(gangs that went from an outdated template to the current one), and the histogram
`cliques_cliqueset_gang_whole_seconds` (from the first plan that saw a gang not whole to the
first that saw it whole). Counters start at 0 in each process that owns the set, as any
counter does after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

LABELS: Final = ("namespace", "cliqueset")
#: gauge name suffix -> help text
GAUGES: Final[Mapping[str, str]] = {
    "desired": "Gangs the CliqueSet asks for (spec.replicas).",
    "whole": "Gangs whose every clique has at least minAvailable ready pods.",
    "available": "Gangs whose every clique is Ready on its current template.",
    "updated": "Gangs on the current template, every pod on it.",
    "restarting": "Gangs broken and being recreated whole (failurePolicy RecreateGang).",
    "moving": "Gangs with pods on drained nodes, moved whole now or waiting for the budget.",
    "failed": "Gangs that used up maxGangRestarts and are left as they are.",
    "queued": "Gangs Kueue has not admitted (sets with a queue).",
}
GAUGE_PREFIX: Final = "cliques_cliqueset_gangs_"
RESTARTS: Final = "cliques_cliqueset_gang_restarts"
ROLLS: Final = "cliques_cliqueset_gang_rolls"
WHOLE_SECONDS: Final = "cliques_cliqueset_gang_whole_seconds"
#: upper bounds of the time-until-whole histogram, seconds
BUCKETS: Final = (1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
#: every family these tables expose, by its name in the exposition (counters with _total)
FAMILIES: Final = (
    *(GAUGE_PREFIX + g for g in GAUGES),
    RESTARTS + "_total",
    ROLLS + "_total",
    WHOLE_SECONDS,
)
FLUSH_SECONDS: Final = 2.0
FILE_PATTERN: Final = "sets-{pid}.json"
MULTIPROC_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"


@dataclass
class SetSample:
    """One CliqueSet's values, as a collector or a snapshot file has them."""

    gauges: dict[str, int] = field(default_factory=dict)
    restarts: int = 0
    rolls: int = 0
    #: counts per bucket of `BUCKETS` (not cumulative), then the sum and the count
    whole: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    whole_sum: float = 0.0

    def observe_whole(self, seconds: float) -> None:
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                self.whole[i] += 1
                break
        else:
            self.whole[-1] += 1
        self.whole_sum += seconds

    def merge(self, other: SetSample) -> None:
        """Add `other` (the same set in another table): gauges by the larger value, the
        counters and the histogram summed."""
        for name, value in other.gauges.items():
            self.gauges[name] = max(self.gauges.get(name, value), value)
        self.restarts += other.restarts
        self.rolls += other.rolls
        self.whole = [a + b for a, b in zip(self.whole, other.whole, strict=True)]
        self.whole_sum += other.whole_sum

    def to_json(self) -> dict[str, Any]:
        return {
            "gauges": self.gauges,
            "restarts": self.restarts,
            "rolls": self.rolls,
            "whole": self.whole,
            "whole_sum": self.whole_sum,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SetSample:
        whole = [int(n) for n in data.get("whole", ())]
        if len(whole) != len(BUCKETS) + 1:
            whole = [0] * (len(BUCKETS) + 1)
        return cls(
            gauges={str(k): int(v) for k, v in dict(data.get("gauges", {})).items()},
            restarts=int(data.get("restarts", 0)),
            rolls=int(data.get("rolls", 0)),
            whole=whole,
            whole_sum=float(data.get("whole_sum", 0.0)),
        )


@dataclass
class _SetRecord:
    """What a table keeps of one set: its sample and what the next observation compares
    with (the gangs seen not whole and since when, the gangs seen outdated, the restart
    total last seen)."""

    namespace: str
    name: str
    sample: SetSample = field(default_factory=SetSample)
    not_whole_since: dict[int, float] = field(default_factory=dict)
    outdated: set[int] = field(default_factory=set)
    restarts_seen: int | None = None


@dataclass(frozen=True)
class GangView:
    """One gang as a plan saw it."""

    whole: bool
    available: bool
    updated: bool
    outdated: bool


class SetTable:
    """The gang metrics of the CliqueSets one controller reconciles (see the module)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        #: CliqueSet key (`namespace/name`) -> its record
        self.records: dict[str, _SetRecord] = {}
        _TABLES.add(self)

    def _record(self, namespace: str, name: str) -> _SetRecord:
        key = f"{namespace}/{name}"
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = _SetRecord(namespace, name)
        return record

    def observe(
        self,
        namespace: str,
        name: str,
        *,
        desired: int,
        gangs: Mapping[int, GangView],
        restarting: int,
        failed: int,
        queued: int,
        moving: int = 0,
    ) -> None:
        """What one plan of a set found: its gangs `0..desired-1` as judged (`gangs`; a gang
        not judged counts as not whole), how many restart, failed for good, are queued, or are
        moved off drained nodes (`moving`)."""
        record = self._record(namespace, name)
        now = self.clock()
        sample = record.sample
        sample.gauges = {
            "desired": desired,
            "whole": sum(1 for g in gangs.values() if g.whole),
            "available": sum(1 for g in gangs.values() if g.available),
            "updated": sum(1 for g in gangs.values() if g.updated and not g.outdated),
            "restarting": restarting,
            "moving": moving,
            "failed": failed,
            "queued": queued,
        }
        for gang in [g for g in record.not_whole_since if g >= desired]:
            del record.not_whole_since[gang]
        for gang in range(desired):
            view = gangs.get(gang)
            if view is None or not view.whole:
                record.not_whole_since.setdefault(gang, now)
            elif gang in record.not_whole_since:
                sample.observe_whole(max(0.0, now - record.not_whole_since.pop(gang)))
        outdated = {g for g, view in gangs.items() if view.outdated}
        sample.rolls += sum(1 for g in record.outdated - outdated if g in gangs and g < desired)
        record.outdated = outdated
        _changed()

    def restarts_seen(self, namespace: str, name: str, total: int) -> None:
        """The set's `status.gangRestarts` as the cache shows it now: its growth since the
        last one seen is counted (the first one seen is where counting starts)."""
        record = self._record(namespace, name)
        if record.restarts_seen is not None and total > record.restarts_seen:
            record.sample.restarts += total - record.restarts_seen
            _changed()
        record.restarts_seen = total

    def forget(self, key: str) -> None:
        """The set `key` is gone: its series go."""
        if self.records.pop(key, None) is not None:
            _changed()

    def close(self) -> None:
        """The controller stopped (its shard went): every set of this table goes."""
        self.records.clear()
        _TABLES.discard(self)
        _changed(now=True)

    def samples(self) -> Iterator[tuple[tuple[str, str], SetSample]]:
        for record in self.records.values():
            yield (record.namespace, record.name), record.sample


#: The live tables of this process (a table no controller holds any more goes by itself).
_TABLES: weakref.WeakSet[SetTable] = weakref.WeakSet()


def merged(
    sources: Iterable[Iterable[tuple[tuple[str, str], SetSample]]],
) -> dict[tuple[str, str], SetSample]:
    """The samples of several tables or files, one per set."""
    out: dict[tuple[str, str], SetSample] = {}
    for source in sources:
        for key, sample in source:
            found = out.get(key)
            if found is None:
                out[key] = SetSample.from_json(sample.to_json())
            else:
                found.merge(sample)
    return out


def families(samples: Mapping[tuple[str, str], SetSample]) -> list[Metric]:
    """The metric families of these samples (every family, with no sample when empty)."""
    gauges = {
        g: GaugeMetricFamily(GAUGE_PREFIX + g, help_text, labels=LABELS)
        for g, help_text in GAUGES.items()
    }
    restarts = CounterMetricFamily(
        RESTARTS, "Gang restarts (failurePolicy RecreateGang) the operator recorded.", labels=LABELS
    )
    rolls = CounterMetricFamily(
        ROLLS, "Gangs rolled from an outdated template to the current one.", labels=LABELS
    )
    whole = HistogramMetricFamily(
        WHOLE_SECONDS,
        "Seconds from when the operator first saw a gang not whole (new, restarted, rolled or "
        "broken) until it saw it whole again.",
        labels=LABELS,
    )
    for (namespace, name), sample in sorted(samples.items()):
        if not sample.gauges:  # seen in an event, not planned yet
            continue
        values = [namespace, name]
        for g, family in gauges.items():
            family.add_metric(values, sample.gauges.get(g, 0))
        restarts.add_metric(values, sample.restarts)
        rolls.add_metric(values, sample.rolls)
        cumulative = 0
        buckets: list[tuple[str, float]] = []
        for bound, count in zip((*BUCKETS, math.inf), sample.whole, strict=True):
            cumulative += count
            buckets.append(("+Inf" if math.isinf(bound) else repr(bound), cumulative))
        whole.add_metric(values, buckets, sample.whole_sum)
    return [*gauges.values(), restarts, rolls, whole]


class TablesCollector(Collector):
    """The gang metrics of this process's tables (one process, no supervisor)."""

    def collect(self) -> Iterable[Metric]:
        return families(merged(t.samples() for t in list(_TABLES)))


class FilesCollector(Collector):
    """The gang metrics of the workers' snapshot files in `directory` (a supervisor)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def collect(self) -> Iterable[Metric]:
        return families(merged(_read(path) for path in self.directory.glob("sets-*.json")))


def collector(directory: Path | None = None) -> Collector:
    return TablesCollector() if directory is None else FilesCollector(directory)


def _read(path: Path) -> list[tuple[tuple[str, str], SetSample]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out: list[tuple[tuple[str, str], SetSample]] = []
    for entry in data.get("sets", []) if isinstance(data, dict) else []:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            key = (str(entry["namespace"]), str(entry["cliqueset"]))
            out.append((key, SetSample.from_json(entry)))
    return out


def snapshot_path(directory: Path, pid: int | None = None) -> Path:
    return directory / FILE_PATTERN.format(pid=os.getpid() if pid is None else pid)


def write_snapshot(directory: Path) -> None:
    """This process's tables, to its snapshot file (written whole, then renamed)."""
    samples = merged(t.samples() for t in list(_TABLES))
    body = {
        "sets": [
            {"namespace": ns, "cliqueset": name, **sample.to_json()}
            for (ns, name), sample in sorted(samples.items())
        ]
    }
    path = snapshot_path(directory)
    tmp = path.with_suffix(".tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")
        tmp.replace(path)


def remove_files(directory: Path, pid: int) -> None:
    """A dead worker's snapshot goes with it."""
    with contextlib.suppress(FileNotFoundError):
        snapshot_path(directory, pid).unlink()


def _multiproc_dir() -> Path | None:
    value = os.environ.get(MULTIPROC_ENV)
    return Path(value) if value else None


class _Flusher:
    """Writes this process's snapshot after a change, at most every FLUSH_SECONDS."""

    def __init__(self) -> None:
        self.handle: asyncio.TimerHandle | None = None

    def changed(self, now: bool = False) -> None:
        """A table changed: under a supervisor, write the snapshot within FLUSH_SECONDS (at
        once with `now`); one process reads its tables when scraped and needs nothing."""
        directory = _multiproc_dir()
        if directory is None:
            return
        if now:
            if self.handle is not None:
                self.handle.cancel()
                self.handle = None
            write_snapshot(directory)
            return
        if self.handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            write_snapshot(directory)
            return
        self.handle = loop.call_later(FLUSH_SECONDS, self._flush, directory)

    def _flush(self, directory: Path) -> None:
        self.handle = None
        write_snapshot(directory)


_changed = _Flusher().changed


def names() -> Sequence[str]:
    """The family names these tables expose (for checks of dashboards and alerts)."""
    return FAMILIES
