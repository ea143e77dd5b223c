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


@pytest.mark.parametrize(
    ("flag", "field", "default", "refused", "why"),
    [
        ("--status-hold", "status_hold", 10.0, "-1", "--status-hold must be >= 0"),
        ("--request-timeout", "request_timeout", 90.0, "0", "--request-timeout must be > 0"),
    ],
)
def test_flag_default_and_refused_value(
    flag: str, field: str, default: float, refused: str, why: str
) -> None:
    parser = build_parser()
    assert getattr(config_from_args(parser.parse_args(["operator"])), field) == default
    args = parser.parse_args(["operator", flag, refused])
    with pytest.raises(SystemExit, match=why):
        args.func(args)


def test_cli_request_timeout_default_is_the_clients() -> None:
    """The flag's default is written out (the parser must not import the API client, which
    `cliques hash` installs do without); it must stay the client's and Config's own."""
    from cliques.kube.client import REQUEST_TIMEOUT
    from cliques.operator.manager import Config

    args = build_parser().parse_args(["operator"])
    assert args.request_timeout == REQUEST_TIMEOUT == Config.request_timeout
