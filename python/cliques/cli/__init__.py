"""The `cliques` command: one argparse parser, a sub-command per module.

Each sub-command lives in its own module exposing `register(subparsers)`; its handler is
stored as `func` on the parsed namespace and returns the process exit code. The operator's
own commands are modules of this package (`hash_cmd`, `operator_cmd`, `start_gate_cmd`).
Other distributions add commands through the `cliques.commands` entry-point group, each
entry point naming such a `register` function: cliques-lab (`lab/` in the source tree)
adds `dev-cluster`, `demo` and `bench` this way. Without it those commands are not in
`--help`, and asking for one says where it comes from.

Sub-command modules import their heavy dependencies lazily, so `cliques hash` works with
only the base install.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint, entry_points

from cliques import __version__

# Module names under cliques.cli, in the order they appear in --help.
_COMMANDS = (
    "hash_cmd",
    "operator_cmd",
    "start_gate_cmd",
)
#: The entry-point group other distributions register sub-commands in.
ENTRY_POINT_GROUP = "cliques.commands"
#: Commands that come with cliques-lab, named when asked for without it installed.
LAB_COMMANDS = ("dev-cluster", "demo", "bench")
LAB_HINT = (
    "part of cliques-lab, which is not installed (in a source checkout: `make dev`, or "
    "`pip install -e lab` next to an installed cliques)"
)


def _plugins() -> list[EntryPoint]:
    """The installed `cliques.commands` entry points, in the order of their names."""
    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def build_parser() -> argparse.ArgumentParser:
    return _build()[0]


def _build() -> tuple[argparse.ArgumentParser, frozenset[str]]:
    """The parser and the names of the commands it has."""
    parser = argparse.ArgumentParser(
        prog="cliques",
        description="cliques: a Kubernetes operator for gangs of pods.",
    )
    parser.add_argument("--version", action="version", version=f"cliques {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"cliques.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"cliques.cli.{name}":
                raise
            continue
        module.register(sub)
    for plugin in _plugins():
        try:
            register: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]
            register = plugin.load()
        except ImportError as exc:  # an install whose files are gone: the rest still works
            print(
                f"cliques: the {plugin.name!r} command ({plugin.value}) cannot be loaded: {exc}",
                file=sys.stderr,
            )
            continue
        register(sub)
    missing = [name for name in LAB_COMMANDS if name not in sub.choices]
    if missing:
        parser.epilog = f"{', '.join(missing)}: {LAB_HINT}."
    return parser, frozenset(sub.choices)


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = _build()
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in LAB_COMMANDS and command not in commands:
        print(f"cliques {command}: {LAB_HINT}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
