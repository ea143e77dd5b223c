"""`cliques operator` flags: what a worker process inherits from the supervisor's command
line ends up in the worker's Config unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from cliques.cli import build_parser
from cliques.cli.operator_cmd import _worker_args, config_from_args, metrics_address

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
        ("--status-hold", "status_hold", 10.0, "-1", "must be a number of seconds >= 0"),
        ("--request-timeout", "request_timeout", 90.0, "0", "must be a number of seconds > 0"),
        ("--resync-period", "resync_period", 0.0, "-5", "must be a number of seconds >= 0"),
        ("--expectations-ttl", "expectations_ttl", 60.0, "nan", "'nan' is not a number"),
        ("--concurrency", "concurrency", 16, "0", "must be >= 1, got 0"),
        ("--burst", "burst", 400, "-1", "must be >= 1, got -1"),
        ("--shards", "shards", 16, "0", "must be >= 1, got 0"),
        ("--lease-duration", "lease_duration", 15.0, "-1", "must be a number of seconds > 0"),
    ],
)
def test_flag_default_and_refused_value(
    capsys: pytest.CaptureFixture[str],
    flag: str,
    field: str,
    default: float,
    refused: str,
    why: str,
) -> None:
    parser = build_parser()
    assert getattr(config_from_args(parser.parse_args(["operator"])), field) == default
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["operator", flag, refused])
    assert exit_.value.code == 2
    assert f"argument {flag}: {why}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--workers", "0"], "argument --workers: must be >= 1, got 0"),
        (["--workers", "many"], "argument --workers: 'many' is not a whole number"),
        (["--metrics-port", "70000"], "argument --metrics-port: must be between 0 and 65535"),
        (["--qps", "nan"], "argument --qps: 'nan' is not a finite number"),
    ],
)
def test_process_flags_are_refused_by_the_parser(
    capsys: pytest.CaptureFixture[str], argv: list[str], why: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["operator", *argv])
    assert exit_.value.code == 2
    assert why in capsys.readouterr().err


def test_lease_timings_that_cannot_work_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["operator", "--leases", "--lease-duration", "5"])
    assert args.func(args) == 2
    assert "need --retry-period < --renew-deadline < --lease-duration, got 2 / 10 / 5" in (
        capsys.readouterr().err
    )


def test_a_missing_kubeconfig_stops_the_operator_before_any_worker_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from cliques.operator import supervisor

    def never(*a: object, **kw: object) -> None:
        raise AssertionError("a supervisor was started")

    monkeypatch.setattr(supervisor, "Supervisor", never)
    args = build_parser().parse_args(
        ["operator", "--workers", "2", "--kubeconfig", str(tmp_path / "nope.yaml")]
    )
    assert args.func(args) == 3
    assert capsys.readouterr().err == (
        f"cliques operator: kubeconfig {tmp_path / 'nope.yaml'}: no such readable file\n"
    )


def test_cli_request_timeout_default_is_the_clients() -> None:
    """The flag's default is written out (the parser must not import the API client, which
    `cliques hash` installs do without); it must stay the client's and Config's own."""
    from cliques.kube.client import REQUEST_TIMEOUT
    from cliques.operator.manager import Config

    args = build_parser().parse_args(["operator"])
    assert args.request_timeout == REQUEST_TIMEOUT == Config.request_timeout


def test_workers_inherit_the_lease_flags_and_get_their_own_identity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POD_NAME", "cliques-operator-7d9f-abcde")
    parser = build_parser()
    sup = parser.parse_args(
        [
            "operator",
            "--leases",
            "--shards",
            "8",
            "--lease-namespace",
            "ops",
            "--lease-duration",
            "20",
            "--renew-deadline",
            "12",
            "--retry-period",
            "3",
        ]
    )
    configs = [
        config_from_args(
            parser.parse_args(["operator", *_worker_args(sup), "--worker-name", f"worker-{n}"])
        )
        for n in range(2)
    ]
    for n, cfg in enumerate(configs):
        assert cfg.leases and cfg.shards == 8 and cfg.lease_namespace == "ops"
        assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (20, 12, 3)
        assert cfg.identity == f"cliques-operator-7d9f-abcde-worker-{n}"
    alone = config_from_args(parser.parse_args(["operator", "--leases", "--identity", "x"]))
    assert alone.identity == "x-worker-0"


def test_without_leases_no_lease_flag_reaches_the_workers() -> None:
    sup = build_parser().parse_args(["operator"])
    assert "--leases" not in _worker_args(sup)


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        ([], ("0.0.0.0", 8080)),
        (["--metrics-bind-address", "127.0.0.1:9090"], ("127.0.0.1", 9090)),
        (["--metrics-bind-address", ":9090"], ("0.0.0.0", 9090)),
        (["--metrics-bind-address", "[::1]:9090"], ("::1", 9090)),
        (["--metrics-port", "0"], ("0.0.0.0", 0)),
    ],
)
def test_metrics_address(argv: list[str], want: tuple[str, int]) -> None:
    assert metrics_address(build_parser().parse_args(["operator", *argv])) == want


def test_a_bad_metrics_address_is_refused_by_the_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["operator", "--metrics-bind-address", "localhost"])
    assert exit_.value.code == 2
    assert "argument --metrics-bind-address: 'localhost' is not HOST:PORT" in (
        capsys.readouterr().err
    )


def test_a_metrics_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for workers in ("1", "2"):
            proc = subprocess.run(
                [sys.executable, "-m", "cliques", "operator", "--kubeconfig", str(kubeconfig),
                 "--workers", workers, "--metrics-bind-address", f"127.0.0.1:{port}"],
                check=False, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert proc.returncode == 1, proc.stderr
            assert f"the metrics address 127.0.0.1:{port} is in use" in proc.stderr
            assert "--metrics-bind-address" in proc.stderr
            assert "Traceback" not in proc.stderr
