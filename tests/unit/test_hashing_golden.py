"""Golden vectors (testdata/hash-golden/, written with the core) through cliques.hashing and
through the pure-Python reference: the hash and the SHA-256 of the canonical bytes of every
file, from bytes, str and dict, must be the committed ones. A file named `X--variant.json`
is a re-spelling of `X.json` (re-ordered, re-spelled quantities, empties added) and must
hash the same; other variants of X must not.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from cliques import hashing
from tests import reference_canonical as ref

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "hash-golden"
EXPECTED: dict[str, dict[str, Any]] = json.loads((GOLDEN / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_golden_vector(name: str) -> None:
    want = EXPECTED[name]
    data = (GOLDEN / name).read_bytes()
    kind = want["kind"]
    for form in (data, data.decode(), json.loads(data)):
        canonical = hashing.canonical_json(form, kind)
        assert hashlib.sha256(canonical).hexdigest() == want["canonical_sha256"]
        assert hashing.template_hash(form, kind) == want["hash"]
    reference = ref.canonical_json(data, kind)
    assert reference == hashing.canonical_json(data, kind)
    assert ref.hash_of_canonical(reference) == want["hash"]


def test_every_file_has_a_vector() -> None:
    files = {p.name for p in GOLDEN.glob("*.json")} - {"expected.json"}
    assert files == set(EXPECTED)


def _base(name: str) -> str:
    return name.split("--", 1)[0].removesuffix(".json") + ".json"


def test_variants() -> None:
    for name, want in EXPECTED.items():
        base = _base(name)
        if "--" in name:
            assert want["hash"] == EXPECTED[base]["hash"], f"{name} should hash as {base}"
    # Real changes (an image bump, swapped env or init containers) change the hash.
    changed = [n for n in EXPECTED if "--" not in n and n.startswith("inference-")]
    assert changed
    for name in changed:
        assert EXPECTED[name]["hash"] != EXPECTED["inference.json"]["hash"], name
