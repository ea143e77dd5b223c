"""The operator's own counters as the scale benchmark reads them from /metrics."""

from __future__ import annotations

from cliques_lab.bench import opmetrics

BEFORE = """\
# TYPE cliques_api_requests_total counter
cliques_api_requests_total{verb="create",resource="pods",code="201"} 10.0
cliques_api_requests_total{verb="watch",resource="pods",code="200"} 3.0
# TYPE cliques_reconciles_total counter
cliques_reconciles_total{controller="clique",result="success"} 5.0
# TYPE cliques_reconcile_duration_seconds histogram
cliques_reconcile_duration_seconds_bucket{controller="cliqueset",le="+Inf"} 2.0
cliques_reconcile_duration_seconds_count{controller="cliqueset"} 2.0
cliques_reconcile_duration_seconds_sum{controller="cliqueset"} 0.010
"""

AFTER = """\
# TYPE cliques_api_requests_total counter
cliques_api_requests_total{verb="create",resource="pods",code="201"} 12.0
cliques_api_requests_total{verb="create",resource="pods",code="409"} 1.0
cliques_api_requests_total{verb="patch",resource="cliques",code="200"} 4.0
cliques_api_requests_total{verb="watch",resource="pods",code="200"} 9.0
# TYPE cliques_reconciles_total counter
cliques_reconciles_total{controller="clique",result="success"} 8.0
cliques_reconciles_total{controller="clique",result="requeue"} 1.0
# TYPE cliques_reconcile_duration_seconds histogram
cliques_reconcile_duration_seconds_bucket{controller="cliqueset",le="+Inf"} 3.0
cliques_reconcile_duration_seconds_count{controller="cliqueset"} 3.0
cliques_reconcile_duration_seconds_sum{controller="cliqueset"} 0.013
"""


def test_delta_of_requests_reconciles_and_reconcile_time() -> None:
    got = opmetrics.delta(opmetrics.parse(AFTER), opmetrics.parse(BEFORE))
    assert got == {
        "requests create pods": 3.0,  # 201s and 409s together; watches left out
        "requests patch cliques": 4.0,
        "requests": 7.0,
        "answered 409 create pods": 1.0,  # and apart, by the code
        "answered 409": 1.0,
        "reconciles clique": 4.0,
        "reconciles": 4.0,
        "reconcile ms cliqueset": 3.0,
        "reconcile ms": 3.0,
    }
