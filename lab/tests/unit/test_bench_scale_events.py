"""`cliques bench scale-events`: its options and the CliqueSet it scales (no cluster; the
benchmark itself runs on a dev cluster, docs/performance.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cliques_lab.bench import scale_events, scale_events_cli


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cliques bench")
    scale_events_cli.add_parser(parser.add_subparsers(dest="benchmark"))
    return parser.parse_args(["scale-events", *argv])


def test_defaults_and_options() -> None:
    args = parse([])
    assert (args.cluster, args.gangs, args.events, args.down) == ("cliques-events", 1000, 10, False)
    assert args.backend == "Auto" and args.results == Path("bench/results")
    assert args.func is scale_events_cli.run
    args = parse(["--gangs", "50", "--events", "4", "--down", "--backend", "None"])
    assert (args.gangs, args.events, args.down, args.backend) == (50, 4, True, "None")


@pytest.mark.parametrize("bad", [["--gangs", "0"], ["--events", "-1"], ["--backend", "Kueue"]])
def test_bad_options_are_refused(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(bad)
    assert exc.value.code == 2
    assert "scale-events" in capsys.readouterr().err


def test_each_gang_is_a_leader_and_one_instance_of_a_scaling_group() -> None:
    body = scale_events.manifest(3, "None")
    spec = body["spec"]
    assert spec["replicas"] == 3 and spec["gangScheduling"] == {"backend": "None"}
    assert [c["name"] for c in spec["template"]["cliques"]] == ["leader", "worker"]
    (group,) = spec["template"]["scalingGroups"]
    assert group == {"name": "workers", "cliques": ["worker"], "replicas": 1, "minAvailable": 1}


def test_the_command_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    from cliques.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["bench", "scale-events", "--help"])
    assert exc.value.code == 0
    assert "Auto, Workload or None" in capsys.readouterr().out
