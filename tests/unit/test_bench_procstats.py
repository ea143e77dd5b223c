"""The CPU of named processes (the control plane's components), read from /proc."""

from __future__ import annotations

import os

from cliques.bench import procstats


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
