"""The CPU of named processes (the control plane's components), read from /proc."""

from __future__ import annotations

import os

from cliques_lab.bench import procstats


def test_cpu_of_reads_live_processes_and_leaves_out_the_gone() -> None:
    found = procstats.cpu_of({"me": os.getpid(), "gone": 2**22 + 12345})
    assert set(found) == {"me"} and found["me"] > 0


def test_cpu_delta_names_each_component_and_sums_them() -> None:
    before = {"etcd": 1.0, "kube-apiserver": 10.0, "kube-scheduler": 2.0}
    now = {"etcd": 1.5, "kube-apiserver": 14.0, "kube-controller-manager": 9.0}
    assert procstats.cpu_delta(now, before) == {
        "cpu_etcd": 0.5,
        "cpu_kube-apiserver": 4.0,
        "cpu_control_plane": 4.5,
    }
    assert procstats.cpu_delta({}, before) == {}


def test_busy_until_is_the_end_of_the_last_busy_span() -> None:
    # 0-5 s: 0.5 cores; 5-10: idle; 10-15: 0.3 cores; then idle to 30 s
    samples = [(0.0, 10.0), (5.0, 12.5), (10.0, 12.55), (15.0, 14.05), (30.0, 14.1)]
    assert procstats.busy_until(samples) == 15.0
    assert procstats.busy_until(samples, rate=0.4) == 5.0
    assert procstats.busy_until([(0.0, 1.0), (5.0, 1.01)]) == 0.0, "never busy"
    assert procstats.busy_until([(0.0, 1.0)]) is None


def test_a_short_spike_is_not_work() -> None:
    # half-second samples, idle but for 0.08 s of CPU in one of them (a periodic task)
    samples = [(i * 0.5, 1.0 + (0.08 if i >= 31 else 0.0)) for i in range(81)]
    assert procstats.busy_until(samples, window=0.5) == 15.5
    assert procstats.busy_until(samples) == 0.0
    busy = [(i * 0.5, i * 0.5 * 0.3) for i in range(81)]  # 0.3 cores throughout
    assert procstats.busy_until(busy) == 40.0
