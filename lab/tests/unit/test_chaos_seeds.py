"""`cliques bench chaos --seeds`: the seed list it parses and the table it reports."""

from __future__ import annotations

import argparse

import pytest

from cliques_lab.bench import chaos_cli


@pytest.mark.parametrize(
    ("text", "seeds"),
    [
        ("7", [7]),
        ("1-3", [1, 2, 3]),
        ("4242,1-3", [4242, 1, 2, 3]),
        ("1-3,2,3-4", [1, 2, 3, 4]),
        (" 5 , 6 ,", [5, 6]),
    ],
)
def test_seed_list(text: str, seeds: list[int]) -> None:
    assert chaos_cli.seed_list(text) == seeds


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no seed"),
        ("x", "'x' is not a seed"),
        ("3-1", "from low to high"),
        ("-4", "not a seed"),
        ("0-5000", "more than 1000"),
    ],
)
def test_seed_list_refuses(text: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        chaos_cli.seed_list(text)


def test_seed_and_seeds_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="cliques bench")
    chaos_cli.add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["chaos", "--seed", "1", "--seeds", "1-2"])
    assert "not allowed with argument" in capsys.readouterr().err
    args = parser.parse_args(["chaos", "--seeds", "1-2"])
    assert args.seeds == [1, 2] and args.seed is None


def _doc(seed: int, violations: list[str]) -> dict[str, object]:
    return {
        "seed": seed,
        "steps": 40,
        "wall": 250.0,
        "pods": {"pods created": 30, "pods deleted: roll": 5, "pods deleted: scale": 2},
        "counts": {"workers killed": 3},
        "worker_restarts": 3,
        "max_rollout_down": 1,
        "convergence": {"a": 3.5, "b": 12.25},
        "violations": violations,
        "error": "",
    }


def test_seeds_table_has_a_line_per_seed_and_a_total() -> None:
    table = chaos_cli.seeds_table([_doc(1, []), _doc(4242, ["crash loop"])])  # type: ignore[list-item]
    lines = table.splitlines()
    assert len(lines) == 4
    assert lines[1].split() == ["1", "40", "250", "30", "7", "3", "3", "1", "12.2", "0"]
    assert lines[2].split()[0] == "4242" and lines[2].split()[-1] == "1"
    assert lines[3].split() == ["all", "2", "80", "60", "14", "6", "6", "1"]
