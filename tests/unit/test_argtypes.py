"""The shared argparse value types (`cliques bench hash`'s flags that use them:
lab/tests/unit/test_bench_hash.py)."""

from __future__ import annotations

import argparse

import pytest

from cliques import argtypes


def test_int_at_least_accepts_the_bounds_and_refuses_beyond() -> None:
    port = argtypes.int_at_least(0, 65535)
    assert (port("0"), port("65535")) == (0, 65535)
    for bad, why in (("-1", "between 0 and 65535"), ("65536", "got 65536"), ("1.5", "whole")):
        with pytest.raises(argparse.ArgumentTypeError, match=why):
            port(bad)


def test_seconds_zero_only_when_allowed_and_never_nan_or_inf() -> None:
    assert argtypes.seconds(zero=True)("0") == 0.0
    assert argtypes.seconds()("0.25") == 0.25
    for parse, bad in ((argtypes.seconds(), "0"), (argtypes.seconds(zero=True), "-0.1")):
        with pytest.raises(argparse.ArgumentTypeError, match="must be a number of seconds"):
            parse(bad)
    for bad in ("nan", "inf", "-inf", "soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="is not a number of seconds"):
            argtypes.seconds(zero=True)(bad)


def test_number_is_any_finite_number() -> None:
    assert (argtypes.number("-1"), argtypes.number("0"), argtypes.number("2.5")) == (-1, 0, 2.5)
    for bad in ("nan", "inf", "fast"):
        with pytest.raises(argparse.ArgumentTypeError, match="is not a finite number"):
            argtypes.number(bad)
