"""`cliques operator` flags: what a worker process inherits from the supervisor's command
line ends up in the worker's Config unchanged."""

from __future__ import annotations

import pytest

from cliques.cli import build_parser
from cliques.cli.operator_cmd import _worker_args, config_from_args

SUPERVISOR = [
    "operator",
    "--workers",
    "2",
    "--kubeconfig",
    "/tmp/kc.yaml",
    "--namespace",
    "team-a",
    "--qps",
    "50",
    "--burst",
    "80",
    "--concurrency",
    "8",
    "--log-format",
    "json",
    "--log-level",
    "warning",
    "--expectations-ttl",
    "30",
    "--status-hold",
    "2.5",
    "--request-timeout",
    "45",
    "--resync-period",
    "600",
]


def test_worker_inherits_every_tuning_flag() -> None:
    parser = build_parser()
    sup = parser.parse_args(SUPERVISOR)
    worker = parser.parse_args(["operator", *_worker_args(sup), "--workers", "1"])
    want = config_from_args(sup)
    got = config_from_args(worker)
    for field in (
        "kubeconfig",
        "namespace",
        "qps",
        "burst",
        "concurrency",
        "expectations_ttl",
        "status_hold",
        "request_timeout",
        "resync_period",
    ):
        assert getattr(got, field) == getattr(want, field), field
    assert got.status_hold == 2.5
    assert got.request_timeout == 45.0
    assert (worker.log_format, worker.log_level) == ("json", "warning")


def test_status_hold_defaults_to_ten_seconds_and_refuses_negative() -> None:
    parser = build_parser()
    assert config_from_args(parser.parse_args(["operator"])).status_hold == 10.0
    args = parser.parse_args(["operator", "--status-hold", "-1"])
    with pytest.raises(SystemExit, match="--status-hold must be >= 0"):
        args.func(args)


def test_request_timeout_defaults_to_ninety_seconds_and_must_be_positive() -> None:
    parser = build_parser()
    assert config_from_args(parser.parse_args(["operator"])).request_timeout == 90.0
    args = parser.parse_args(["operator", "--request-timeout", "0"])
    with pytest.raises(SystemExit, match="--request-timeout must be > 0"):
        args.func(args)
