"""`cliques demo`'s progress line, from CliqueSets as `kubectl get -o json` prints them."""

from __future__ import annotations

from typing import Any

from cliques.cli.demo_cmd import _available, progress_line


def _cqs(status: dict[str, Any] | None, replicas: int = 2) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "CliqueSet", "spec": {"replicas": replicas}}
    if status is not None:
        obj["status"] = status
    return obj


def test_no_status_yet_says_so_instead_of_zero_of_zero() -> None:
    assert progress_line(_cqs(None)) == "    waiting for the operator's first status"
    assert progress_line(_cqs({})) == "    waiting for the operator's first status"
    assert _available(_cqs(None)) is None


def test_counts_against_the_desired_replicas_and_shows_the_condition() -> None:
    status = {
        "replicas": 1,
        "readyReplicas": 1,
        "conditions": [
            {"type": "Progressing", "status": "True"},
            {"type": "Available", "status": "False", "message": "1/2 gangs available"},
        ],
    }
    line = progress_line(_cqs(status, replicas=2))
    assert line == "    gangs ready 1/2, Available=False (1/2 gangs available)"
    assert _available(_cqs(status)) == "False"


def test_a_status_without_the_condition_yet() -> None:
    line = progress_line(_cqs({"replicas": 2, "readyReplicas": 0}, replicas=2))
    assert line == "    gangs ready 0/2, Available=not reported yet"
    done = {"readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
    assert _available(_cqs(done)) == "True"
