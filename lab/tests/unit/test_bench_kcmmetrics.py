"""Reading which controller-manager queues worked, from /metrics text (no cluster)."""

from __future__ import annotations

import os

from cliques_lab.bench import kcmmetrics

TEXT = """\
# HELP workqueue_work_duration_seconds [ALPHA] How long processing an item takes.
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="endpoint_slice",le="+Inf"} 40
workqueue_work_duration_seconds_sum{name="endpoint_slice"} 29.25
workqueue_work_duration_seconds_count{name="endpoint_slice"} 40
workqueue_work_duration_seconds_bucket{name="endpoint",le="+Inf"} 12
workqueue_work_duration_seconds_sum{name="endpoint"} 24.5
workqueue_work_duration_seconds_count{name="endpoint"} 12
workqueue_work_duration_seconds_sum{name="namespace"} 1.5
workqueue_work_duration_seconds_count{name="namespace"} 3
# HELP workqueue_depth [ALPHA] Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="endpoint_slice"} 7
"""


def test_queue_work_reads_the_sums_by_queue() -> None:
    assert kcmmetrics.queue_work(TEXT) == {
        "endpoint_slice": 29.25,
        "endpoint": 24.5,
        "namespace": 1.5,
    }


def test_busiest_are_the_queues_that_worked_longest() -> None:
    before = {"endpoint_slice": 20.0, "endpoint": 24.0, "namespace": 1.5}
    after = kcmmetrics.queue_work(TEXT)
    assert kcmmetrics.busiest(after, before) == {"endpoint_slice": 9.25, "endpoint": 0.5}
    assert list(kcmmetrics.busiest(after, {}, n=1)) == ["endpoint_slice"]


def test_a_process_without_a_secure_port_has_none() -> None:
    assert kcmmetrics.port_of(os.getpid()) is None
    assert kcmmetrics.port_of(2**22 + 12345) is None  # no such process
