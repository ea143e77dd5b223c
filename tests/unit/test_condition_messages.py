"""Condition messages are bounded (`conditions.bound_message`): a message quoting a user's
value of any length keeps its beginning (the path of the offending value) and says how much
was cut, so a status never nears the CRD's 32,768 characters."""

from __future__ import annotations

import re

import pytest

from cliques import hashing
from cliques.api.cliqueset_status import REASON_INVALID_SPEC
from cliques.controllers.base import conditions, failures
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import status as cliqueset_status

from .planner_fixtures import NOW, cliqueset, set_snapshot

CUT = re.compile(r"… \(([0-9,]+) characters cut\)$")


def huge_value_error(size: int = 40_000) -> str:
    """The message of the controller for a template with a `size`-character quantity."""
    template = {
        "spec": {
            "containers": [
                {"name": "m", "image": "i", "resources": {"limits": {"cpu": "x" * size}}}
            ]
        }
    }
    with pytest.raises(ValueError) as caught:
        hashing.template_hash(template)
    return f"invalid pod template: {caught.value}"


def split(bounded: str) -> tuple[str, int]:
    """(what was kept, how many characters the mark says were cut)."""
    found = CUT.search(bounded)
    assert found is not None, bounded[-80:]
    return bounded[: found.start()], int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("length", [0, 1, 1023, 1024])
def test_a_message_within_the_bound_is_kept_whole(length: int) -> None:
    message = "m" * length
    assert conditions.bound_message(message) is message


@pytest.mark.parametrize("length", [1025, 1100, 10_000, 40_083, 2_000_000])
def test_a_longer_message_is_cut_to_the_bound_with_a_mark(length: int) -> None:
    message = "p: " + "v" * (length - 3)
    bounded = conditions.bound_message(message)
    assert len(bounded) == conditions.MAX_MESSAGE
    kept, cut = split(bounded)
    assert message.startswith(kept)
    assert len(kept) + cut == length


def test_an_invalid_template_with_a_40000_character_value_keeps_its_path() -> None:
    message = huge_value_error()
    assert len(message) > 40_000
    bounded = conditions.bound_message(message)
    assert len(bounded) <= conditions.MAX_MESSAGE
    assert bounded.startswith(
        'invalid pod template: spec.containers[0].resources.limits.cpu: invalid quantity "xxx'
    )
    kept, cut = split(bounded)
    assert message.startswith(kept) and len(kept) + cut == len(message)
    assert cut > 39_000


def test_every_invalid_spec_condition_is_bounded() -> None:
    """What the CliqueSet planner writes for an invalid template (the controller's
    `snapshot` puts the hashing error in `invalid`)."""
    message = huge_value_error()
    plan = cliqueset_planner.plan(set_snapshot(cliqueset(), [], invalid=message))
    assert plan.status is not None
    conds = plan.status.conditions
    assert [c.reason for c in conds] == [REASON_INVALID_SPEC] * 3
    for cond in conds:
        assert len(cond.message) <= conditions.MAX_MESSAGE
        assert cond.message == conditions.bound_message(message)
    # The same input gives the same status: a second plan writes nothing.
    cqs = cliqueset()
    cqs.status = plan.status
    assert cliqueset_planner.plan(set_snapshot(cqs, [], invalid=message)).status is None


def test_a_refusal_of_any_length_is_bounded_in_replica_failure() -> None:
    setter = conditions.Setter([], NOW, 1)
    refusal = failures.Failure("FailedCreate", 'Pod "x" is invalid: ' + "y" * 50_000)
    (cond,) = failures.condition(setter, refusal)
    assert len(cond.message) == conditions.MAX_MESSAGE
    assert cond.message.startswith('Pod "x" is invalid: yyy')
    status = cliqueset_status.invalid(cliqueset(), "z" * 5_000, now=NOW)
    assert {len(c.message) for c in status.conditions} == {conditions.MAX_MESSAGE}
