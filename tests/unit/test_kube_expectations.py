"""Expectations: keyed by owner UID and child name, satisfied by events, bounded by a TTL."""

from cliques.kube.expectations import Expectations


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_satisfied_only_after_every_create_and_delete_is_observed() -> None:
    e = Expectations("t", ttl=10, clock=Clock())
    e.expect_creates("uid-1", ["p-0", "p-1"])
    e.expect_deletes("uid-1", ["p-5"])
    assert not e.satisfied("uid-1")
    e.created("uid-1", "p-0")
    e.created("uid-1", "p-1")
    assert not e.satisfied("uid-1")
    e.deleted("uid-1", "p-5")
    assert e.satisfied("uid-1")
    assert e.total() == 0


def test_keyed_by_uid_not_name() -> None:
    e = Expectations("t", clock=Clock())
    e.expect_creates("old-uid", ["p-0"])
    assert e.satisfied("new-uid"), "a recreated owner must not inherit expectations"
    e.created("new-uid", "p-0")  # an event for another owner does not satisfy
    assert not e.satisfied("old-uid")


def test_ttl_expires_lost_events() -> None:
    clock = Clock()
    e = Expectations("t", ttl=10, clock=clock)
    e.expect_creates("u", ["p-0"])
    clock.now = 9.9
    assert not e.satisfied("u")
    clock.now = 10.1
    assert e.satisfied("u")
    assert e.pending("u") == (frozenset(), frozenset())


def test_forget_on_owner_delete() -> None:
    e = Expectations("t", clock=Clock())
    e.expect_creates("u", ["a"])
    e.forget("u")
    assert e.satisfied("u")


def test_unrelated_observations_are_ignored() -> None:
    e = Expectations("t", clock=Clock())
    e.created("u", "x")
    e.deleted("u", "y")
    assert e.satisfied("u")
