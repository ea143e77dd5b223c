"""cliques-lab's commands: `dev-cluster`, `demo` and `bench`, declared as `cliques.commands`
entry points in lab/pyproject.toml and, with the lab installed, sub-commands of `cliques`.
(Without the lab, the product's own: tests/unit/test_cli_commands.py.)"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from cliques import cli
from cliques.cli import ENTRY_POINT_GROUP, LAB_COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[3]
CORE = ("hash", "operator", "start-gate")


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("no sub-commands")


def test_the_lab_declares_its_commands_as_entry_points() -> None:
    lab = tomllib.loads((ROOT / "lab" / "pyproject.toml").read_text())["project"]
    declared = lab["entry-points"][ENTRY_POINT_GROUP]
    assert sorted(declared) == sorted(LAB_COMMANDS)
    for name, target in declared.items():
        module, _, func = target.partition(":")
        assert module.startswith("cliques_lab.cli.") and func == "register", name


def test_the_installed_lab_adds_its_commands() -> None:
    assert sorted(ep.name for ep in cli._plugins()) == sorted(LAB_COMMANDS)
    assert _choices(build_parser()) == [*CORE, *sorted(LAB_COMMANDS)]
    assert build_parser().epilog is None
