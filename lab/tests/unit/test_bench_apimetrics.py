"""The API server's counters as the scale benchmark reads them: the operator-relevant
requests by verb and code, and what the control plane was made to do by resource (writes,
request bytes, watch events fanned out and their bytes), from a /metrics text in the form
kube-apiserver v1.35 serves (lines cut from a scrape of the dev cluster)."""

from __future__ import annotations

from pathlib import Path

from cliques_lab.bench import apimetrics

METRICS = (Path(__file__).parent / "data" / "apiserver-metrics.txt").read_text()


def test_operator_requests_are_counted_by_verb_and_code() -> None:
    got = apimetrics.parse(METRICS).requests
    # Bindings, the kubelets' status patches and endpoint slices are not the operator's.
    assert got == {("POST", "201"): 3000, ("LIST", "200"): 102, ("PATCH", "409"): 4}


def test_the_control_plane_work_is_counted_by_resource() -> None:
    plane = apimetrics.parse(METRICS).plane
    assert plane["writes pods"] == 3000
    assert plane["writes pods/binding"] == 3000
    assert plane["writes pods/status"] == 2000
    assert plane["writes endpointslices"] == 150
    assert plane["writes cliques/status"] == 4  # a refused write is work too
    assert "writes pods/list" not in plane and plane["write bytes pods"] == 5_334_768
    assert plane["watch events pods"] == 21700
    assert plane["watch events endpoints"] == 4138
    assert plane["watch bytes pods"] == 461_754_569


def test_the_delta_keeps_growth_and_totals_it_by_kind() -> None:
    before = apimetrics.parse(METRICS).plane
    after = before.copy()
    after["writes pods"] += 10
    after["writes pods/binding"] += 10
    after["watch events pods"] += 100
    after["watch bytes pods"] += 4096
    got = apimetrics.plane_delta(after, before)
    assert got == {
        "writes pods": 10,
        "writes pods/binding": 10,
        "watch events pods": 100,
        "watch bytes pods": 4096,
        "writes": 20,
        "watch events": 100,
        "watch bytes": 4096,
    }
    assert apimetrics.plane_delta(before, before) == {}
