"""Golden vectors (testdata/hash-golden) through the extension: each `NAME.json` gives the
kind, hash and canonical SHA-256 recorded in `expected.json`, as bytes, str and dict alike;
`BASE--VARIANT.json` (re-ordered, re-spelled, with droppable empties) hashes like
`BASE.json`, and distinct bases hash differently."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from cliques import _core

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "hash-golden"
EXPECTED: dict[str, dict[str, Any]] = json.loads((GOLDEN / "expected.json").read_text())


def test_there_are_enough_vectors() -> None:
    assert len(EXPECTED) >= 15
    on_disk = {p.name for p in GOLDEN.glob("*.json")} - {"expected.json"}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_vector(name: str) -> None:
    want = EXPECTED[name]
    raw = (GOLDEN / name).read_bytes()
    kind = want["kind"]
    canonical = _core.canonical_json(raw, kind)
    assert _core.template_hash(raw, kind) == want["hash"]
    if "canonical_sha256" in want:
        assert hashlib.sha256(canonical).hexdigest() == want["canonical_sha256"]
    # The three input forms agree, and the canonical form is a fixed point.
    assert _core.canonical_json(raw.decode(), kind) == canonical
    assert _core.canonical_json(json.loads(raw), kind) == canonical
    assert _core.canonical_json(canonical, kind) == canonical
    assert _core.template_hash(json.loads(raw), kind) == want["hash"]


def test_variants_hash_like_their_base() -> None:
    variants = [n for n in EXPECTED if "--" in n]
    assert len(variants) >= 5
    for name in variants:
        base = name.split("--", 1)[0] + ".json"
        assert EXPECTED[name]["hash"] == EXPECTED[base]["hash"], name


def test_distinct_bases_hash_differently() -> None:
    bases = [n for n in EXPECTED if "--" not in n]
    hashes = [EXPECTED[n]["hash"] for n in bases]
    assert len(set(hashes)) == len(hashes)
    # Order of ordered lists matters: init containers and env are not sorted.
    assert EXPECTED["inference-init-swapped.json"]["hash"] != EXPECTED["inference.json"]["hash"]
    assert EXPECTED["inference-env-swapped.json"]["hash"] != EXPECTED["inference.json"]["hash"]
