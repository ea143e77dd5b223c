"""`cliques._core.plan_indices`: which member indices to create and remove."""

from __future__ import annotations

import pytest

from cliques import _core


@pytest.mark.parametrize(
    ("in_use", "desired", "create", "remove"),
    [
        ([], 0, [], []),
        ([], 3, [0, 1, 2], []),
        ([0, 1, 2], 3, [], []),
        ([1], 3, [0, 2], []),
        ([0, 2, 5, 7], 4, [1, 3], [7, 5]),
        ([3, 3, 9, 9, 0], 2, [1], [9, 3]),
        ([4, 2, 0], 0, [], [4, 2, 0]),
    ],
)
def test_lowest_first(
    in_use: list[int], desired: int, create: list[int], remove: list[int]
) -> None:
    assert _core.plan_indices(in_use, desired) == (create, remove)


def test_any_iterable() -> None:
    assert _core.plan_indices(range(2), 4) == ([2, 3], [])
    assert _core.plan_indices({5, 1}, 3) == ([0, 2], [5])
    assert _core.plan_indices((i for i in [0]), 2) == ([1], [])


def test_seeded_is_a_fixed_permutation() -> None:
    a = _core.plan_indices([1, 4, 30], 20, seed=42)
    assert a == _core.plan_indices([1, 4, 30], 20, seed=42)
    assert a[0] != _core.plan_indices([1, 4, 30], 20, seed=43)[0]
    assert sorted(a[0]) == _core.plan_indices([1, 4, 30], 20)[0]
    assert a[1] == [30]
    # Any int is a seed (reduced modulo 2**64).
    assert _core.plan_indices([], 10, seed=-1) == _core.plan_indices([], 10, seed=2**64 - 1)
    assert _core.plan_indices([], 10, seed=2**64) == _core.plan_indices([], 10, seed=0)


def test_seed_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        _core.plan_indices([], 3, 7)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("in_use", "desired", "message"),
    [([], -1, "^desired: must not be negative$"), ([-2], 3, "^in_use: negative index -2$")],
)
def test_value_errors(in_use: list[int], desired: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.plan_indices(in_use, desired)


def test_type_errors() -> None:
    with pytest.raises(TypeError):
        _core.plan_indices(["0"], 3)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        _core.plan_indices(3, 3)  # type: ignore[arg-type]
