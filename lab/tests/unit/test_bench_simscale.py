"""`cliques bench sim-scale`: the simulated deploy end to end at a small size (so the
harness cannot rot), its virtual clock, its simulated API server's answers, and the
command's options (no cluster)."""

from __future__ import annotations

import argparse
import asyncio
import time

import pytest

from cliques.kube import errors
from cliques_lab.bench import simscale, simscale_cli, workload


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    simscale_cli.add_parser(parser.add_subparsers(dest="benchmark"))
    return parser.parse_args(["sim-scale", *argv])


@pytest.mark.parametrize("shape", ["1x3x2", "3x2x3"])
def test_a_deploy_runs_to_every_set_available(shape: str) -> None:
    s = workload.Shape.parse(shape)
    seen: list[str] = []
    out = simscale.deploy(s, progress=seen.append)
    pods = s.total_pods
    gangs = s.sets * s.gangs
    cliques = gangs * len(s.roles())
    # every object made once, every pod bound and Ready once, every Clique's status written
    assert out.requests["create Pod"] == pods
    assert out.requests["create Clique"] == cliques
    assert out.requests["create CliqueSet"] == s.sets
    assert out.requests["kubelet bind"] == out.requests["kubelet ready"] == pods
    assert out.requests["status Clique"] >= cliques
    assert out.requests["status CliqueSet"] >= s.sets
    assert out.reconciles["cliqueset"] >= out.set_plans >= s.sets
    assert out.reconciles["clique"] >= cliques
    assert out.pods == pods and out.shape == shape
    assert 0 < out.sim_seconds < 60
    assert out.cpu_total > out.cpu_server > 0
    assert out.cpu_per_pod_ms == pytest.approx(1000 * out.cpu_operator / pods)
    assert out.rss_mib > 0 and out.server_mib > 0
    assert out.server_mib < out.server_held_mib < out.rss_mib
    assert "pods Ready" in seen[-1] and "sets waiting     0" in seen[-1]
    assert set(out.to_json()) >= {"cpu_operator", "cpu_per_pod_ms", "rss_mib", "set_plans"}


def test_the_virtual_clock_jumps_over_sleeps() -> None:
    loop = simscale.VirtualLoop()
    try:
        started = time.monotonic()
        loop.run_until_complete(asyncio.sleep(3600))
        assert loop.time() == pytest.approx(3600)
        assert time.monotonic() - started < 5
    finally:
        loop.close()


def test_a_loop_with_nothing_left_to_do_says_so() -> None:
    loop = simscale.VirtualLoop()
    try:
        with pytest.raises(simscale.SimStuck):
            loop.run_until_complete(loop.create_future())
    finally:
        loop.close()


def test_the_server_answers_as_an_api_server() -> None:
    loop = simscale.VirtualLoop()
    try:
        server = simscale.SimServer(loop, rate=100)
        body = {"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"y": 1}}
        server.create("Clique", "ns", body)
        with pytest.raises(errors.AlreadyExists):
            server.create("Clique", "ns", body)
        # the main resource leaves the status; a spec change moves the generation
        raw = server.patch("Clique", "ns", "a", {"spec": {"x": 2}, "status": {"y": 2}}, "")
        assert b'"generation":2' in raw and b'"status"' not in raw
        raw = server.patch("Clique", "ns", "a", {"status": {"y": 3}}, "status")
        assert b'"y":3' in raw and b'"generation":2' in raw
        # a no-op patch writes nothing; a stale resourceVersion is a 409
        assert server.patch("Clique", "ns", "a", {"status": {"y": 3}}, "status") == raw
        with pytest.raises(errors.Conflict):
            server.patch("Clique", "ns", "a", {"metadata": {"resourceVersion": "1"}}, "")
        with pytest.raises(errors.Conflict):
            server.delete("Clique", "ns", "a", uid="someone-else")
        server.delete("Clique", "ns", "a", uid=None)
        with pytest.raises(errors.NotFound):
            server.get("Clique", "ns", "a")
        # requests are served one after another, `rate` a second
        assert server.turn() == pytest.approx(0.01)
        assert server.turn() == pytest.approx(0.02)
    finally:
        loop.close()


def test_options() -> None:
    args = _parse("--shapes", "1x5000x2,1000x50x2", "--repeat", "3", "--no-save")
    assert args.shapes == ["1x5000x2", "1000x50x2"] and args.repeat == 3
    assert args.func is simscale_cli.run
    assert _parse().shapes == ["1x5000x2"]


@pytest.mark.parametrize("shape", ["1x50000x2", "1x10001x1", "1x5001x2", "1x100x1001"])
def test_shapes_beyond_one_sets_bounds_are_refused(shape: str) -> None:
    with pytest.raises(SystemExit):
        _parse("--shapes", shape)


def test_the_summary_table() -> None:
    rounds = [
        {
            "pods": 10,
            "cpu_operator": c,
            "cpu_per_pod_ms": 100 * c,
            "rss_mib": 50.0,
            "server_mib": 1.0,
            "server_held_mib": 2.0,
            "set_plans": 3,
            "sim_seconds": 4.0,
        }
        for c in (0.1, 0.3, 0.2)
    ]
    table = {"1x5x2": simscale_cli.summary(rounds)}
    assert table["1x5x2"]["cpu_per_pod_ms"] == {"median": 20.0, "min": 10.0, "max": 30.0}
    assert "| 1x5x2 | 10 | 3 | 0.20 (0.10-0.30) | 20.000 (10.000-30.000) | 50 | 1 | 48 |" in (
        simscale_cli.render(table)
    )
