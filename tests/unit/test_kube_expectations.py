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


def test_total_is_kept_equal_to_a_recount() -> None:
    """The pending total is maintained incrementally; it must always equal a recount."""
    import random

    rnd = random.Random(3)
    now = [0.0]
    e = Expectations("t", ttl=5.0, clock=lambda: now[0])
    owners = [f"o{i}" for i in range(4)]
    names = [f"n{i}" for i in range(6)]
    for _ in range(2000):
        op = rnd.randrange(7)
        o = rnd.choice(owners)
        if op == 0:
            e.expect_creates(o, rnd.sample(names, rnd.randrange(4)))
        elif op == 1:
            e.expect_deletes(o, rnd.sample(names, rnd.randrange(4)))
        elif op == 2:
            e.created(o, rnd.choice(names))
        elif op == 3:
            e.deleted(o, rnd.choice(names))
        elif op == 4:
            e.forget(o)
        elif op == 5:
            now[0] += rnd.random() * 3
            e.satisfied(o)
        else:
            e.satisfied(o)
        recount = sum(len(c) + len(d) for c, d in (e.pending(x) for x in owners))
        assert e.total() == recount
