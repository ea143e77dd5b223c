"""`cliques._core` FNV-1a and `bucket_of`."""

from __future__ import annotations

import pytest

from cliques import _core


@pytest.mark.parametrize(
    ("data", "h32", "h64"),
    [
        (b"", 0x811C9DC5, 0xCBF29CE484222325),
        (b"a", 0xE40C292C, 0xAF63DC4C8601EC8C),
        (b"foobar", 0xBF9CF968, 0x85944171F73967E8),
        (b"chongo was here!\n", 0xD49930D5, 0x46810940EFF5F915),
    ],
)
def test_fnv_reference_vectors(data: bytes, h32: int, h64: int) -> None:
    assert _core.fnv1a_32(data) == h32
    assert _core.fnv1a_64(data) == h64


def test_fnv_takes_bytes_only() -> None:
    with pytest.raises(TypeError):
        _core.fnv1a_32("text")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("namespace", "name", "buckets"),
    [("default", "web", 256), ("kube-system", "coredns-0", 16), ("", "", 1), ("ns", "ü", 7)],
)
def test_bucket_is_fnv32_of_the_key(namespace: str, name: str, buckets: int) -> None:
    want = _core.fnv1a_32(f"{namespace}/{name}".encode()) % buckets
    assert _core.bucket_of(namespace, name, buckets) == want


def test_bucket_default_is_256() -> None:
    key = b"team-a/clique-7"
    assert _core.bucket_of("team-a", "clique-7") == _core.fnv1a_32(key) % 256


def test_buckets_spread() -> None:
    counts = [0] * 8
    for i in range(8000):
        counts[_core.bucket_of("ns", f"obj-{i}", 8)] += 1
    assert all(800 <= c <= 1200 for c in counts), counts


@pytest.mark.parametrize("buckets", [0, -1, 2**32])
def test_bad_bucket_counts(buckets: int) -> None:
    with pytest.raises(ValueError, match=r"^buckets: must be"):
        _core.bucket_of("a", "b", buckets)
