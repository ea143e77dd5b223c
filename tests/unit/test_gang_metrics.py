"""The per-CliqueSet gang metrics (`cliques.gang_metrics`): counts from a plan's gangs,
rolls and time until whole from what successive plans see, restarts from the status,
series gone with the set, and the same values through a worker's snapshot file as through
the tables of one process."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cliques import gang_metrics
from cliques.gang_metrics import GangView, SetTable
from cliques.operator import health


@pytest.fixture(autouse=True)
def no_other_tables() -> Iterator[None]:
    """The tables of controllers other tests left behind (held in reference cycles until
    the collector runs) go first: this module reads every table of the process."""
    gc.collect()
    yield


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def gangs(*states: str) -> dict[int, GangView]:
    """A gang per letter: W whole and available and updated, w whole only, o outdated and
    whole, - not whole."""
    out = {}
    for i, s in enumerate(states):
        out[i] = GangView(
            whole=s in "Wwo", available=s in "Wo", updated=s == "W", outdated=s == "o"
        )
    return out


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(text: str, name: str, ns: str = "ns", set_: str = "llama", **extra: str) -> float:
    labels = tuple(sorted({"namespace": ns, "cliqueset": set_, **extra}.items()))
    return samples(text)[(name, labels)]


def test_counts_rolls_and_time_until_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(gang_metrics.MULTIPROC_ENV, raising=False)
    clock = Clock()
    table = SetTable(clock)
    table.observe("ns", "llama", desired=3, gangs=gangs("-", "-"), restarting=1, failed=1, queued=2)
    clock.now += 42.0
    table.observe(
        "ns", "llama", desired=3, gangs=gangs("W", "o", "w"), restarting=0, failed=0, queued=0
    )
    text = health.render_metrics(lambda: True).decode()
    assert value(text, "cliques_cliqueset_gangs_desired") == 3
    assert value(text, "cliques_cliqueset_gangs_whole") == 3
    assert value(text, "cliques_cliqueset_gangs_available") == 2
    assert value(text, "cliques_cliqueset_gangs_updated") == 1
    assert value(text, "cliques_cliqueset_gangs_restarting") == 0
    # gangs 0, 1 and 2 were seen not whole (2 not judged at all), then whole 42 s later
    assert value(text, "cliques_cliqueset_gang_whole_seconds_count") == 3
    assert value(text, "cliques_cliqueset_gang_whole_seconds_sum") == pytest.approx(126.0)
    assert value(text, "cliques_cliqueset_gang_whole_seconds_bucket", le="30.0") == 0
    assert value(text, "cliques_cliqueset_gang_whole_seconds_bucket", le="60.0") == 3
    assert value(text, "cliques_cliqueset_gang_rolls_total") == 0
    # gang 1 rolls to the current template: one roll; still outdated again: none more
    table.observe(
        "ns", "llama", desired=3, gangs=gangs("W", "W", "o"), restarting=0, failed=0, queued=0
    )
    table.observe(
        "ns", "llama", desired=3, gangs=gangs("W", "W", "o"), restarting=0, failed=0, queued=0
    )
    table.observe(
        "ns", "llama", desired=3, gangs=gangs("W", "W", "W"), restarting=0, failed=0, queued=0
    )
    text = health.render_metrics(lambda: False).decode()
    assert value(text, "cliques_cliqueset_gang_rolls_total") == 2
    assert samples(text)[("cliques_operator_ready", ())] == 0
    table.forget("ns/llama")
    text = health.render_metrics(lambda: True).decode()
    assert not any(labels and dict(labels).get("cliqueset") for _, labels in samples(text))
    assert samples(text)[("cliques_operator_ready", ())] == 1


def test_restarts_count_the_growth_of_the_status_total() -> None:
    table = SetTable()
    table.restarts_seen("ns", "llama", 4)  # where counting starts
    table.restarts_seen("ns", "llama", 6)
    table.restarts_seen("ns", "llama", 6)
    table.observe("ns", "llama", desired=1, gangs=gangs("W"), restarting=0, failed=0, queued=0)
    (sample,) = [s for key, s in table.samples() if key == ("ns", "llama")]
    assert sample.restarts == 2
    table.close()
    assert next(iter(gang_metrics.TablesCollector().collect())).samples == []


def test_a_workers_snapshot_is_what_the_supervisor_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(gang_metrics.MULTIPROC_ENV, str(tmp_path))
    table = SetTable()
    table.observe("ns", "a", desired=2, gangs=gangs("W", "-"), restarting=0, failed=1, queued=0)
    gang_metrics.write_snapshot(tmp_path)
    path = gang_metrics.snapshot_path(tmp_path)
    assert path.exists()
    text = health.render_metrics(lambda: True).decode()
    assert value(text, "cliques_cliqueset_gangs_whole", set_="a") == 1
    assert value(text, "cliques_cliqueset_gangs_failed", set_="a") == 1
    import os

    gang_metrics.remove_files(tmp_path, os.getpid())
    text = health.render_metrics(lambda: True).decode()
    assert ("cliques_cliqueset_gangs_whole", (("cliqueset", "a"), ("namespace", "ns"))) not in (
        samples(text)
    )
    table.close()


def test_every_family_is_exposed_even_with_no_set() -> None:
    text = health.render_metrics(lambda: True).decode()
    names = {f.name for f in text_string_to_metric_families(text)}
    for family in gang_metrics.FAMILIES:
        assert family.removesuffix("_total") in names


async def test_the_set_controller_writes_its_sets_and_drops_them() -> None:
    """Wired into the CliqueSet controller: a plan sets the set's series (a new set of two
    gangs: none whole yet), its status' restart total starts the count, a deleted set's
    series go, and a stopped controller's table with them."""
    from tests.unit.planner_fixtures import cliqueset
    from tests.unit.test_controller_forget import SET_KEY, set_controller

    ctl = set_controller()
    cqs = cliqueset(replicas=2)
    ctl.cliquesets.store.upsert(cqs)
    await ctl.reconcile(SET_KEY)
    text = health.render_metrics(lambda: True).decode()
    assert value(text, "cliques_cliqueset_gangs_desired") == 2
    assert value(text, "cliques_cliqueset_gangs_whole") == 0
    assert value(text, "cliques_cliqueset_gang_restarts_total") == 0
    ctl.cliquesets.store.remove(SET_KEY)
    await ctl.reconcile(SET_KEY)
    text = health.render_metrics(lambda: True).decode()
    assert (
        "cliques_cliqueset_gangs_desired",
        (("cliqueset", "llama"), ("namespace", "ns")),
    ) not in (samples(text))
    ctl.cliquesets.store.upsert(cqs)
    await ctl.reconcile(SET_KEY)
    ctl.close()
    assert next(iter(gang_metrics.TablesCollector().collect())).samples == []
