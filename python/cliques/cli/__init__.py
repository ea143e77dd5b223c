"""The `cliques` command: one argparse parser, a sub-command per module.

Each sub-command lives in its own module (`hash_cmd`, `devcluster_cmd`, `operator_cmd`,
`start_gate_cmd`, `bench_cmd`, `demo_cmd`) exposing `register(subparsers)`; its handler is stored as
`func` on the parsed namespace and returns the process exit code. Sub-command modules import
their heavy dependencies lazily, so `cliques hash` works with only the base install.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from cliques import __version__

# Module names under cliques.cli, in the order they appear in --help.
_COMMANDS = (
    "hash_cmd",
    "devcluster_cmd",
    "operator_cmd",
    "start_gate_cmd",
    "demo_cmd",
    "bench_cmd",
)


def build_parser() -> argparse.ArgumentParser:
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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
