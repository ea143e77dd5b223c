"""Template hashes as the controllers use them: memoized, versioned, upgrade-safe.

The hash of a clique's pod template is the Rust core's canonical `template_hash`
(algorithm `HASH_ALGORITHM_VERSION`). Every object the operator labels with a hash is also
annotated with the algorithm version, so that an operator whose algorithm differs can tell
"the template changed" from "only the way we hash it changed": in the second case it
re-labels pods in place (see the Clique planner) instead of rolling the gang.

`Hasher(algorithm=N)` with N other than the core's version exists to prove exactly that
path in tests: it emulates a future algorithm by hashing a version-tagged canonical form.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from cliques import _core

CORE_ALGORITHM = _core.HASH_ALGORITHM_VERSION


class Hasher:
    """Template hashes with a small memo keyed by the template's JSON bytes."""

    def __init__(self, algorithm: int = CORE_ALGORITHM, *, memo_size: int = 4096) -> None:
        if algorithm < 1:
            raise ValueError(f"hash algorithm must be >= 1, got {algorithm}")
        self.algorithm = algorithm
        self._memo: OrderedDict[bytes, str] = OrderedDict()
        self._memo_size = memo_size
        self._encode = msgspec.json.Encoder().encode

    def template_hash(self, template: dict[str, Any]) -> str:
        """The hash of a PodTemplateSpec (raises ValueError on an invalid template)."""
        raw = self._encode(template)
        cached = self._memo.get(raw)
        if cached is not None:
            self._memo.move_to_end(raw)
            return cached
        if self.algorithm == CORE_ALGORITHM:
            value = _core.template_hash(raw)
        else:
            tagged = b"cliques-hash-v%d\n" % self.algorithm + _core.canonical_json(raw)
            value = _core.safe_encode(_core.fnv1a_64(tagged))
        self._memo[raw] = value
        if len(self._memo) > self._memo_size:
            self._memo.popitem(last=False)
        return value
