"""`cliques demo`'s progress line, from CliqueSets as `kubectl get -o json` prints them."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from cliques.api.cliqueset import CliqueSet
from cliques_lab.cli.demo_cmd import _available, progress_line

_NOW = "2026-11-22T19:00:00Z"


def _cqs(status: dict[str, Any] | None, replicas: int = 2) -> CliqueSet:
    obj: dict[str, Any] = {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": "llama"},
        "spec": {"replicas": replicas, "template": {"cliques": []}},
    }
    if status is not None:
        obj["status"] = status
    return msgspec.json.decode(json.dumps(obj), type=CliqueSet)


def _cond(type_: str, status: str, message: str) -> dict[str, str]:
    return {
        "type": type_,
        "status": status,
        "reason": "Test",
        "message": message,
        "lastTransitionTime": _NOW,
    }


def test_no_status_yet_says_so_instead_of_zero_of_zero() -> None:
    assert progress_line(_cqs(None)) == "    waiting for the operator's first status"
    assert _available(_cqs(None)) is None


def test_counts_against_the_desired_replicas_and_shows_the_condition() -> None:
    status = {
        "replicas": 1,
        "readyReplicas": 1,
        "conditions": [
            _cond("Progressing", "True", "rolling"),
            _cond("Available", "False", "1/2 gangs available"),
        ],
    }
    line = progress_line(_cqs(status, replicas=2))
    assert line == "    gangs ready 1/2, Available=False (1/2 gangs available)"
    avail = _available(_cqs(status))
    assert avail is not None and avail.status == "False"


def test_a_status_without_the_condition_yet() -> None:
    line = progress_line(_cqs({"replicas": 2, "readyReplicas": 0}, replicas=2))
    assert line == "    gangs ready 0/2, Available=not reported yet"
    done = _cqs({"readyReplicas": 2, "conditions": [_cond("Available", "True", "")]})
    avail = _available(done)
    assert avail is not None and avail.status == "True"
    assert progress_line(done) == "    gangs ready 2/2, Available=True"


def test_a_refused_write_is_shown_with_the_api_servers_reason() -> None:
    refused = {**_cond("ReplicaFailure", "True", 'llama-0-leader: Pod "x" is invalid')}
    refused["reason"] = "FailedCreate"
    status = {"readyReplicas": 0, "conditions": [_cond("Available", "False", "0/2"), refused]}
    assert progress_line(_cqs(status)) == (
        "    gangs ready 0/2, Available=False (0/2)\n"
        '    the API server refuses writes (FailedCreate): llama-0-leader: Pod "x" is invalid'
    )
