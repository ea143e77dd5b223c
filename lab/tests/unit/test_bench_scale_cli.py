"""`cliques bench scale` options that decide which cluster is used (no cluster started)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from cliques.cli import build_parser
from cliques_lab.bench import scale_cli
from cliques_lab.devcluster import session


def test_fresh_cluster_is_refused_with_an_external_kubeconfig(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["bench", "scale", "--operators", "cliques-w1", "--fresh-cluster"]
    args = build_parser().parse_args(
        [*argv, "--kubeconfig", str(tmp_path / "kc"), "--out", str(tmp_path)]
    )
    assert args.func(args) == 2
    assert "--fresh-cluster restarts a dev cluster" in capsys.readouterr().err


@pytest.mark.parametrize("fresh", [False, True])
def test_the_dev_cluster_is_restarted_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, fresh: bool
) -> None:
    calls: list[tuple[str, Any]] = []

    def start(name: str, nodes: int, **kw: Any) -> dict[str, str]:
        calls.append(("start", (name, nodes, kw)))
        return {"KUBECONFIG": "/kc"}

    monkeypatch.setattr(session, "start", start)
    monkeypatch.setattr(session, "install_crds", lambda env, crds: calls.append(("crds", crds)))
    argv = ["bench", "scale", "--cluster", "b", "--nodes", "7"]
    args = build_parser().parse_args(argv + (["--fresh-cluster"] if fresh else []))
    assert scale_cli._kubeconfig(args) == "/kc"
    assert calls[0] == ("start", ("b", 7, {"disable_qps_limits": True, "fresh": fresh}))
    assert calls[1][0] == "crds"


def test_a_fresh_start_stops_the_running_cluster_first(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    monkeypatch.setattr(session, "_cli", lambda *a: order.append(" ".join(a)) or "/kc\n")

    class Done:
        returncode = 0

    monkeypatch.setattr(session.subprocess, "run", lambda cmd, check: order.append("up") or Done())
    session.start("b", 3, fresh=True)
    assert order[:2] == ["down --name b", "up"]
    order.clear()
    session.start("b", 3)
    assert order[0] == "up"


# -- bad input is refused before anything starts -----------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--nodes", "0"], "argument --nodes: must be between 1 and 1000, got 0"),
        (["--repeat", "-2"], "argument --repeat: must be >= 1, got -2"),
        (["--repeat", "two"], "argument --repeat: 'two' is not a whole number"),
        (["--steady", "-1"], "argument --steady: must be a number of seconds > 0, got -1"),
        (["--timeout", "0"], "argument --timeout: must be a number of seconds > 0, got 0"),
        (["--timeout", "nan"], "argument --timeout: 'nan' is not a number of seconds"),
        (["--timeout", "inf"], "argument --timeout: 'inf' is not a number of seconds"),
        (["--timeout", "soon"], "argument --timeout: 'soon' is not a number of seconds"),
        (["--subdomain-policy", "PerPod"], "give Shared, UniquePerGang or both"),
        (["--subdomain-policy", "Shared,Shared"], "give Shared, UniquePerGang or both"),
        (["--skip", "pods-ready"], "give phases to leave out, comma-separated, of steady-state"),
        (["--skip", ","], "give phases to leave out"),
        (["--crash-gangs", "-1"], "argument --crash-gangs: must be >= 0, got -1"),
    ],
)
def test_option_values_are_checked_by_the_parser(
    capsys: pytest.CaptureFixture[str], option: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["bench", "scale", *option])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_pod_readiness_is_parsed_and_left_out_by_default() -> None:
    parse = build_parser().parse_args
    assert parse(["bench", "scale", "--pod-readiness", "Gang"]).pod_readiness == "Gang"
    assert parse(["bench", "scale"]).pod_readiness == ""
    with pytest.raises(SystemExit):
        parse(["bench", "scale", "--pod-readiness", "Clique"])


def test_the_crash_phase_is_off_unless_asked() -> None:
    parse = build_parser().parse_args
    assert parse(["bench", "scale"]).crash_gangs == 0
    assert parse(["bench", "scale", "--crash-gangs", "3"]).crash_gangs == 3


def test_skipped_phases_are_parsed_into_a_set() -> None:
    args = build_parser().parse_args(
        ["bench", "scale", "--skip", "rolling-update, reorder-apply,rolling-update"]
    )
    assert args.skip == {"rolling-update", "reorder-apply"}
    assert build_parser().parse_args(["bench", "scale"]).skip == frozenset()


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a dev cluster would be started."""

    def start(*a: Any, **kw: Any) -> dict[str, str]:
        raise AssertionError("a cluster was started for a run that should have been refused")

    monkeypatch.setattr(session, "start", start)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--operators", "kopf,foo"], "unknown operator 'foo'"),
        (["--operators", "cliques-w0"], "unknown operator 'cliques-w0'"),
        (["--operators", "cliques-wx"], "unknown operator 'cliques-wx'"),
        (["--operators", " , "], "no operator to run"),
        (["--operator-cmd", "no-equals-sign"], "expected NAME=COMMAND"),
        (["--operator-cmd", "=cmd"], "expected NAME=COMMAND"),
        (["--cliques-from", "old"], "expected NAME=DIR"),
        (["--cliques-from", "old=/nonexistent/tree"], "no cliques package in"),
        (["--shape", "2x0x2"], "every number must be >= 1"),
        (["--kubeconfig", "/nonexistent/kubeconfig"], "/nonexistent/kubeconfig: no such file"),
    ],
)
def test_bad_operators_shapes_and_kubeconfigs_exit_2_without_a_cluster(
    capsys: pytest.CaptureFixture[str],
    no_cluster: None,
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    args = build_parser().parse_args(["bench", "scale", *argv, "--out", str(tmp_path)])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("cliques bench scale: ") and message in err
    assert not any(tmp_path.iterdir()), "nothing is written for a refused run"


def test_operator_names_resolve_worker_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale_cli.os, "cpu_count", lambda: 6)
    args = build_parser().parse_args(
        ["bench", "scale", "--operators", "cliques-w1,cliques-wN,kopf"]
    )
    assert scale_cli._operator_names(args) == [("cliques-w1", 1), ("cliques-wN", 6), ("kopf", None)]
    args = build_parser().parse_args(["bench", "scale", "--operators", "cliques-w1,lws"])
    assert scale_cli._operator_names(args) == [("cliques-w1", 1), ("lws", None)]


def test_lws_client_limits_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["bench", "scale", "--operators", "lws", "--lws-qps", "0"])
    assert exited.value.code == 2
    assert "--lws-qps: must be > 0" in capsys.readouterr().err


def test_an_unloadable_kubeconfig_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    args = build_parser().parse_args(
        [
            "bench",
            "scale",
            "--operators",
            "cliques-w1",
            "--kubeconfig",
            str(kc),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert args.func(args) == 1
    assert f"cliques bench scale: cannot load {kc}: " in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# -- signals: the first stops the run and lets its cleanup finish -------------------------


def _send_later(loop: asyncio.AbstractEventLoop, delay: float, sig: int) -> None:
    loop.call_later(delay, os.kill, os.getpid(), sig)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_first_signal_cancels_the_run_and_its_cleanup_completes(sig: int) -> None:
    steps: list[str] = []

    async def operator_run() -> str:
        try:
            await asyncio.sleep(60)
            return "finished"
        finally:
            steps.append("cleanup started")
            _send_later(asyncio.get_running_loop(), 0.05, sig)  # a second, impatient signal
            await asyncio.sleep(0.3)  # stopping the operator, deleting its namespace
            steps.append("cleanup done")

    async def main(signals: scale_cli.Signals) -> Any:
        _send_later(asyncio.get_running_loop(), 0.1, sig)
        return await asyncio.wait_for(signals.run(operator_run()), timeout=10)

    before = signal.getsignal(sig)
    with scale_cli.Signals() as signals:
        assert asyncio.run(main(signals)) is None
    assert signals.caught == sig
    assert steps == ["cleanup started", "cleanup done"]
    assert signal.getsignal(sig) is before, "the previous handler is restored"


def test_without_a_signal_the_result_is_returned() -> None:
    async def quick() -> str:
        await asyncio.sleep(0)
        return "measured"

    with scale_cli.Signals() as signals:
        assert asyncio.run(signals.run(quick())) == "measured"
    assert signals.caught is None


def test_an_api_server_that_does_not_answer_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    out = str(tmp_path / "out")
    argv = ["bench", "scale", "--operators", "cliques-w1", "--kubeconfig", str(kc), "--out", out]
    args = build_parser().parse_args(argv)
    assert args.func(args) == 1
    err = capsys.readouterr().err
    assert f"the API server at https://127.0.0.1:{port} does not answer" in err
    assert not (tmp_path / "out").exists()


def test_the_node_limit_is_the_dev_clusters() -> None:
    from cliques_lab.devcluster import kwok

    assert scale_cli.MAX_NODES == kwok.MAX_NODES


def test_subdomain_policies_are_parsed_in_order() -> None:
    parse = build_parser().parse_args
    assert parse(["bench", "scale"]).subdomain_policy == [""]
    args = parse(["bench", "scale", "--subdomain-policy", "UniquePerGang, Shared"])
    assert args.subdomain_policy == ["UniquePerGang", "Shared"]


def test_cliques_options_reach_the_cliques_operators_and_are_recorded() -> None:
    argv = ["bench", "scale", "--operators", "cliques-w1,cliques-w2"]
    args = build_parser().parse_args([*argv, "--cliques-options", "--status-hold 30"])
    specs = scale_cli._specs(args)
    for spec in specs:
        assert spec.argv[-2:] == ["--status-hold", "30"]
        assert spec.settings == {"options": "--status-hold 30"}
    plain = scale_cli._specs(build_parser().parse_args(argv))
    assert all(spec.settings == {} and "--status-hold" not in spec.argv for spec in plain)


def test_another_cliques_tree_runs_as_cliques_w1_with_its_own_python_path(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "old"
    (tree / "python" / "cliques").mkdir(parents=True)
    (tree / "python" / "cliques" / "__main__.py").write_text("")
    argv = ["bench", "scale", "--operators", "cliques-w1", "--cliques-from", f"old={tree}"]
    with pytest.raises(scale_cli.UsageError, match="has no native core"):
        scale_cli._specs(build_parser().parse_args(argv))
    (tree / "python" / "cliques" / "_core.abi3.so").write_bytes(b"")
    args = build_parser().parse_args([*argv, "--cliques-options", "--status-hold 30"])
    new, old = scale_cli._specs(args)
    assert (new.name, old.name) == ("cliques-w1", "old")
    assert old.argv == new.argv, "the same operator command, only the source differs"
    assert old.env == {"PYTHONPATH": str(tree / "python")} and new.env == {}
    assert old.readyz and old.scrape_metrics and old.in_place
    assert old.settings == {"options": "--status-hold 30", "source": str(tree)}
    only = build_parser().parse_args(
        ["bench", "scale", "--operators", "", "--cliques-from", f"old={tree}"]
    )
    assert [s.name for s in scale_cli._specs(only)] == ["old"]


def test_rounds_alternate_the_order_of_the_runs() -> None:
    """Over two rounds each operator goes first once and last once."""
    runs = ["cliques-w1", "lws", "kopf"]
    orders = [scale_cli.round_order(runs, rnd) for rnd in (1, 2, 3, 4)]
    assert orders == [runs, runs[::-1], runs, runs[::-1]]
    assert runs == ["cliques-w1", "lws", "kopf"]
    firsts = [order[0] for order in orders[:2]]
    assert sorted(firsts) == sorted(["cliques-w1", "kopf"])


def _watches(**open_watches: int) -> str:
    lines = [
        'apiserver_longrunning_requests{component="apiserver",group="cliques.dev",'
        f'resource="{resource}",scope="cluster",subresource="",verb="WATCH",'
        f'version="v1alpha1"}} {n}'
        for resource, n in open_watches.items()
    ]
    lines.append(  # another group's watch, and a watch of a subresource-less builtin
        'apiserver_longrunning_requests{component="apiserver",group="",resource="pods",'
        'scope="cluster",subresource="",verb="WATCH",version="v1"} 9'
    )
    return "\n".join(lines) + "\n"


def test_the_crds_count_as_watched_once_every_resource_has_a_watch_open() -> None:
    assert session.watched(_watches(cliquesets=1, cliques=2, cliquescalinggroups=1))
    assert not session.watched(_watches(cliquesets=1, cliques=1))  # scaling groups not yet
    assert not session.watched(_watches(cliquesets=1, cliques=0, cliquescalinggroups=1))
    assert not session.watched("")


def test_the_start_model_flags_reach_every_pod_template_and_the_hash() -> None:
    from cliques_lab.bench import kinds, scale

    args = build_parser().parse_args(
        ["bench", "scale", "--pull-seconds", "60", "--load-seconds", "90", "--shape", "1x2x2"]
    )
    assert (args.pull_seconds, args.load_seconds) == (60.0, 90.0)
    shape = scale_cli.workload.Shape.parse("1x2x2")
    cfg = scale.Settings("kc", shape, pull_seconds=60, load_seconds=90)
    for kind in (kinds.CLIQUESET, kinds.LEADERWORKERSET):
        body = scale._manifest(kind, cfg, "bench-0", kinds.FIRST_IMAGE)
        for template in kind.pod_templates(body).values():
            assert template["metadata"]["annotations"] == {
                scale_cli.workload.PULL_ANNOTATION: "60",
                scale_cli.workload.LOAD_ANNOTATION: "90",
            }
    with_start = {
        k.template_hash(shape, "None", 60, 90) for k in (kinds.CLIQUESET, kinds.LEADERWORKERSET)
    }
    assert len(with_start) == 1  # cliques and LWS still run the same pods
    assert with_start != {kinds.CLIQUESET.template_hash(shape, "None")}
    plain = build_parser().parse_args(["bench", "scale"])
    assert (plain.pull_seconds, plain.load_seconds) == (None, None)


def test_the_start_model_flags_and_time_to_serve_are_saved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import json

    from cliques_lab.bench import report, scale

    async def one_run(spec: Any, cfg: Any, run: Any) -> Any:
        assert (cfg.pull_seconds, cfg.load_seconds) == (6.0, 9.0)
        run.phases.append(scale.PhaseResult("pods-ready", 20.0, 1.0, 50.0, {}, time_to_serve=19.5))
        return run

    async def host(kubeconfig: str) -> str:
        return "https://127.0.0.1:1"

    monkeypatch.setattr(scale_cli, "_with_progress", one_run)
    monkeypatch.setattr(scale_cli, "_kubeconfig", lambda args: "/kc")
    monkeypatch.setattr(scale_cli, "_control_plane", lambda args: {})
    monkeypatch.setattr(scale, "preflight", host)
    monkeypatch.setattr(report, "plots", lambda doc, out, stem: [])
    args = build_parser().parse_args(
        [
            "bench",
            "scale",
            "--operators",
            "cliques-w1",
            "--shape",
            "1x2x2",
            "--out",
            str(tmp_path),
            "--pull-seconds",
            "6",
            "--load-seconds",
            "9",
        ]
    )
    assert args.func(args) == 0
    (saved,) = tmp_path.glob("scale-*.json")
    doc = json.loads(saved.read_text())
    assert (doc["pull_seconds"], doc["load_seconds"]) == (6.0, 9.0)
    assert doc["runs"][0]["phases"][0]["time_to_serve"] == 19.5
    table = report.markdown(doc["runs"])
    assert "| serve s |" in table and "| 20.0 | 19.5 |" in table
