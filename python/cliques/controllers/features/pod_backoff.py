"""Back-off for pods that keep finishing (pure): a crash loop at one index is slowed down.

A gang's pods run until replaced (the CRD allows only `restartPolicy: Always`), but a pod
can still finish: evicted, its node lost, `activeDeadlineSeconds` reached. The Clique
replaces a finished pod at its index. When the pods at one index keep finishing, each
replacement waits longer, like the kubelet's crash-loop back-off:

- the Clique records, per index, how many pods finished there in a row
  (`cliques.dev/finished-pods: "3:2,7:1"`, index:count);
- a finished pod is deleted (and so replaced) no sooner than `delay(n)` after it was
  created, `n` being the count before it: 0 s for the first, then 10 s, 20 s, 40 s …
  capped at 5 minutes. A pod that ran at least `RESET_SECONDS` starts the count again.
- while a finished pod waits, it holds its index, the Clique's condition `PodBackOff`
  names the indices and the reconcile is requeued for when the first one is due; every
  replacement after a repeat is a Warning Event `BackOff`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cliques.api.meta import parse_time

BASE_SECONDS: Final = 10.0
MAX_SECONDS: Final = 300.0
RESET_SECONDS: Final = 600.0


def delay(in_a_row: int) -> float:
    """How long the pod at an index must have existed before it is replaced, when
    `in_a_row` pods finished there just before it."""
    if in_a_row <= 0:
        return 0.0
    return float(min(BASE_SECONDS * 2 ** min(in_a_row - 1, 16), MAX_SECONDS))


def parse(value: str) -> dict[int, int]:
    """The recorded counts (`"3:2,7:1"`); anything unreadable is left out."""
    out: dict[int, int] = {}
    for part in value.split(","):
        index, _, count = part.partition(":")
        if index.isdigit() and count.isdigit() and int(count) > 0:
            out[int(index)] = int(count)
    return out


def encode(counts: Mapping[int, int]) -> str:
    return ",".join(f"{i}:{c}" for i, c in sorted(counts.items()) if c > 0)


def age(created: str | None, now: str) -> float | None:
    """Seconds from `created` to `now` (both RFC 3339, seconds), or None if unreadable."""
    start = parse_time(created) if created else None
    end = parse_time(now)
    if start is None or end is None:
        return None
    return max(0.0, (end - start).total_seconds())


def decide(in_a_row: int, lived: float | None) -> tuple[float, int]:
    """For a finished pod: (seconds still to wait before replacing it, the count to record
    once it is replaced). A pod whose age is unknown is replaced at once."""
    if lived is not None and lived >= RESET_SECONDS:
        in_a_row = 0
    wait = delay(in_a_row) - (lived if lived is not None else delay(in_a_row))
    return max(0.0, wait), in_a_row + 1
