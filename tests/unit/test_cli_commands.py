"""Where the `cliques` command's sub-commands come from.

The operator's own (`hash`, `operator`, `start-gate`) are modules of `cliques.cli`;
`dev-cluster`, `demo` and `bench` are cliques-lab's, registered through the
`cliques.commands` entry points in lab/pyproject.toml. Without the lab they are not listed,
and asking for one says how to get it, without a traceback.
"""

from __future__ import annotations

import argparse
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from cliques import cli
from cliques.cli import ENTRY_POINT_GROUP, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
CORE = ("hash", "operator", "start-gate")


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("no sub-commands")


def register_extra(sub: Any) -> None:
    """A command of another distribution."""
    sub.add_parser("extra", help="a command of another distribution")


@pytest.fixture
def without_the_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_plugins", list)


def test_without_the_lab_its_commands_are_not_listed(
    without_the_lab: None, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    assert _choices(parser) == list(CORE)
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "dev-cluster, demo, bench: part of cliques-lab" in " ".join(out.split())


@pytest.mark.parametrize(
    "argv", [["bench", "scale", "--help"], ["dev-cluster", "up"], ["demo"], ["bench"]]
)
def test_without_the_lab_its_commands_say_how_to_get_it(
    without_the_lab: None, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"cliques {argv[0]}: part of cliques-lab")
    assert "make dev" in captured.err and "Traceback" not in captured.err


def test_an_unknown_command_is_still_an_argparse_error(
    without_the_lab: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["nope"])
    assert exit_.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_an_entry_point_that_cannot_load_is_named_and_skipped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = EntryPoint("demo", "cliques_lab_gone.cli:register", ENTRY_POINT_GROUP)
    extra = EntryPoint("extra", f"{__name__}:register_extra", ENTRY_POINT_GROUP)
    monkeypatch.setattr(cli, "_plugins", lambda: [gone, extra])
    assert _choices(build_parser()) == [*CORE, "extra"]
    err = capsys.readouterr().err
    assert "the 'demo' command (cliques_lab_gone.cli:register) cannot be loaded" in err
