"""The node phases of `cliques bench scale` (pure parts): the option, the gangs by pod name,
the nodes a drain and a node loss take, the summary of the samples and the capacity
plot's series (no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cliques.cli import build_parser
from cliques_lab.bench import capacity_plot, disruption, workload, workload_lws
from cliques_lab.bench.workload import Shape


def test_phases_parse_in_run_order_and_refuse_unknown_names() -> None:
    assert disruption.parse_phases("node-loss, drain") == ("drain", "node-loss")
    assert disruption.parse_phases("drain,drain") == ("drain",)
    with pytest.raises(ValueError, match="unknown phase"):
        disruption.parse_phases("drain,flood")


def test_scale_option_defaults_to_no_node_phase(tmp_path: Path) -> None:
    parse = build_parser().parse_args
    args = parse(["bench", "scale", "--out", str(tmp_path)])
    assert args.with_phases == ()
    assert args.out_of_service_after == 120.0
    args = parse(["bench", "scale", "--with-phases", "node-loss,drain"])
    assert args.with_phases == ("drain", "node-loss")
    args = parse(["bench", "scale", "--with-phases", "drain", "--out-of-service-after", "90"])
    assert args.out_of_service_after == 90.0


def test_scale_option_refuses_an_unknown_phase(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "scale", "--with-phases", "reboot"])
    assert "unknown phase(s) reboot" in capsys.readouterr().err


@pytest.mark.parametrize("shape", ["1x3x1", "1x3x2", "2x4x3"])
def test_gangs_cover_every_pod_each_once(shape: str) -> None:
    s = Shape.parse(shape)
    for kind, desired in (
        ("CliqueSet", workload.Shape.desired_pods(s)),
        ("LeaderWorkerSet", workload_lws.desired_pods(s)),
    ):
        gangs = disruption.gangs(kind, s)
        assert len(gangs) == s.sets * s.gangs
        assert all(len(g) == s.pods for g in gangs)
        assert set().union(*gangs) == desired


def test_an_lws_group_is_its_leader_and_its_workers() -> None:
    gangs = disruption.gangs("LeaderWorkerSet", Shape(1, 2, 3))
    assert gangs[1] == {"bench-0-1", "bench-0-1-1", "bench-0-1-2"}


def test_a_gang_is_whole_only_with_every_pod_ready() -> None:
    gangs = disruption.gangs("CliqueSet", Shape(1, 2, 2))
    ready = {"bench-0-0-leader-0", "bench-0-0-worker-0", "bench-0-1-leader-0"}
    assert disruption.whole(gangs, ready) == 1
    assert disruption.whole(gangs, ready | {"bench-0-1-worker-0"}) == 2
    assert disruption.whole(gangs, set()) == 0


def test_gangs_by_node_count_a_gang_once_per_node() -> None:
    gangs = [frozenset({"a", "b"}), frozenset({"c", "d"})]
    node_of = {"a": "n1", "b": "n1", "c": "n1", "d": "n2"}
    assert disruption.gangs_by_node(gangs, node_of) == {"n1": 2, "n2": 1}
    assert disruption.gangs_by_node(gangs, {"a": ""}) == {}


def test_a_drain_takes_a_tenth_of_the_nodes_with_pods_the_fullest_first() -> None:
    pods = {f"n{i:02}": 1 for i in range(25)} | {"n07": 4, "n03": 4, "empty": 0}
    assert disruption.drain_nodes(pods) == ["n03", "n07"]
    assert disruption.drain_nodes({"a": 1, "b": 2}) == ["b"]  # at least one
    assert disruption.drain_nodes({"a": 0}) == []


def test_a_node_loss_takes_the_node_with_the_most_gangs() -> None:
    assert disruption.lost_node({"b": 2, "a": 2, "c": 1}) == "a"
    assert disruption.lost_node({}) is None


def test_summary_of_a_dip_and_its_recovery() -> None:
    samples = [(0.0, 5), (1.0, 4), (2.0, 3), (3.0, 5), (4.0, 4), (5.0, 5), (6.0, 5)]
    s = disruption.summarize(samples, 5)
    assert (s.min_whole, s.seconds_below_full, s.first_below, s.whole_again) == (3, 3.0, 1.0, 5.0)
    extra = s.as_extra()
    assert extra["min_whole_gangs"] == 3.0
    assert extra["whole_again_s"] == 5.0


def test_summary_without_a_dip_and_of_a_phase_that_ended_below_full() -> None:
    steady = disruption.summarize([(0.0, 5), (1.0, 5)], 5)
    assert (steady.min_whole, steady.seconds_below_full, steady.whole_again) == (5, 0.0, 0.0)
    assert "first_below_full_s" not in steady.as_extra()
    broken = disruption.summarize([(0.0, 5), (1.0, 2)], 5)
    assert broken.whole_again is None
    assert "whole_again_s" not in broken.as_extra()
    assert disruption.summarize([], 5).min_whole == 5


def test_capacity_series_are_read_per_run_and_phase() -> None:
    doc = {
        "shape": "1x2x2",
        "runs": [
            {
                "operator": "cliques-w1",
                "phases": [
                    {"phase": "available", "extra": {}},
                    {
                        "phase": "drain",
                        "samples": [[0.0, 2], [1.0, 1]],
                        "marks": [[1.5, "drained n1"]],
                        "extra": {"gangs": 2.0, "min_whole_gangs": 1.0, "drain_s": 1.5},
                    },
                ],
            },
            {"operator": "lws", "phases": [{"phase": "node-loss", "samples": []}]},
        ],
    }
    (one,) = capacity_plot.series(doc, "drain")
    assert one["name"] == "cliques-w1"
    assert one["samples"] == [(0.0, 2), (1.0, 1)]
    assert one["marks"] == [(1.5, "drained n1")]
    assert capacity_plot.series(doc, "node-loss") == []
