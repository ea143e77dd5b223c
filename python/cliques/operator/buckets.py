"""Bucket ownership: which CliqueSets (and so which children) this process reconciles.

Every CliqueSet maps to one of `BUCKETS` virtual buckets by `bucket_of(namespace, name)`,
and everything it owns carries that bucket in the `cliques.dev/bucket` label. A process that
owns a set of buckets watches children with a server-side selector on that label, so it never
receives (or decodes) another process's pods.
"""

from __future__ import annotations

from collections.abc import Iterable

from cliques import _core
from cliques.api import labels

BUCKETS = 256


class BucketSet:
    def __init__(self, buckets: Iterable[int] | None = None, total: int = BUCKETS) -> None:
        self.total = total
        self.buckets = frozenset(range(total) if buckets is None else buckets)
        bad = [b for b in self.buckets if not 0 <= b < total]
        if bad:
            raise ValueError(f"bucket(s) out of range 0..{total - 1}: {sorted(bad)[:5]}")

    @property
    def is_all(self) -> bool:
        return len(self.buckets) == self.total

    def owns(self, namespace: str, name: str) -> bool:
        return self.is_all or _core.bucket_of(namespace, name, self.total) in self.buckets

    def selector(self) -> str:
        """The server-side label selector for children of the owned buckets."""
        if self.is_all:
            return labels.LABEL_BUCKET
        values = ",".join(str(b) for b in sorted(self.buckets))
        return f"{labels.LABEL_BUCKET} in ({values})"

    def __repr__(self) -> str:
        return f"BucketSet({len(self.buckets)}/{self.total})"


def split(total: int, parts: int) -> list[list[int]]:
    """Split buckets 0..total-1 into `parts` contiguous ranges of near-equal size."""
    if parts < 1:
        raise ValueError("parts must be >= 1")
    size, extra = divmod(total, parts)
    out: list[list[int]] = []
    start = 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(list(range(start, end)))
        start = end
    return out
