"""argparse value types shared by the command lines (`cliques operator`, `cliques bench`):
a bad value is refused by the parser itself, with the option's name and exit code 2,
before anything is started."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _number(text: str, kind: type[int] | type[float], what: str) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def int_at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number >= `low` (and <= `high`, if given)."""

    def parse(text: str) -> int:
        value = int(_number(text, int, "a whole number"))
        if value < low or (high is not None and value > high):
            bounds = f"between {low} and {high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {value}")
        return value

    parse.__name__ = "int"
    return parse


def seconds(*, zero: bool = False) -> Callable[[str], float]:
    """A finite number of seconds, > 0 (or >= 0 with `zero`)."""

    def parse(text: str) -> float:
        value = _number(text, float, "a number of seconds")
        if value < 0 or (value == 0 and not zero):
            want = ">= 0" if zero else "> 0"
            raise argparse.ArgumentTypeError(f"must be a number of seconds {want}, got {text}")
        return value

    parse.__name__ = "seconds"
    return parse


def number(text: str) -> float:
    """Any finite number (a rate, where <= 0 may mean "no limit")."""
    return float(_number(text, float, "a finite number"))


def positive_number(text: str) -> float:
    """A finite number > 0 (a client rate limit that must not be turned off)."""
    value = float(_number(text, float, "a finite number"))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def bind_address(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT` (all addresses) or `[v6]:PORT`; port 0..65535."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    host = host.strip("[]") or "0.0.0.0"
    port = int_at_least(0, 65535)(port_text)
    return host, port


bind_address.__name__ = "address"
