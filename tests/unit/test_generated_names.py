"""Names the operator makes from user names never meet (docs/operator.md, "Names"): the
one rule for names it cuts or joins ambiguously (`labels.generated_name`), and for each
name made from user names, two inputs that would have met, and do not (or that the CRD
refuses). Kueue's pod groups and the DRA claims' objects: tests/unit/test_kueue.py and
tests/unit/test_claims.py."""

from __future__ import annotations

import itertools
import re

import pytest

from cliques.api import labels

#: The CRD's rule on clique and scaling group names (`cliquetemplate`, `scalinggroup`).
DIGIT_PART = re.compile(r"(^|-)[0-9]+-")
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def test_a_name_that_fits_is_kept_and_one_cut_carries_the_hash_of_its_parts() -> None:
    assert labels.generated_name("llama", 0, "r", limit=63) == "llama-0-r"
    long_a, long_b = "x" * 55 + "-a", "x" * 55 + "-b"
    a = labels.generated_name(long_a, 7, "rev", limit=63)
    b = labels.generated_name(long_b, 7, "rev", limit=63)
    assert a != b and len(a) == len(b) == 63
    assert a.endswith("-7-rev") and LABEL.fullmatch(a)
    assert labels.name_hash(long_a, 7, "rev") in a
    # one that would be exactly the limit long is cut too: kept names are shorter
    exact = "y" * 57
    assert len(f"{exact}-7-rev") == 63
    assert labels.generated_name(exact, 7, "rev", limit=63) != f"{exact}-7-rev"
    # hashed: the join of `a` + `1-x` and `a-1` + `x` is ambiguous
    one = labels.generated_name("a", "1-x", limit=253, hashed=True)
    other = labels.generated_name("a-1", "x", limit=253, hashed=True)
    assert one != other and one.startswith("a-") and one.endswith("-1-x")
    with pytest.raises(ValueError):
        labels.generated_name("a", "x" * 70, limit=63)


def test_the_name_hash_keeps_its_parts_apart_and_is_stable() -> None:
    assert labels.name_hash("a", "1-x") != labels.name_hash("a-1", "x")
    assert labels.name_hash("a", 1) == labels.name_hash("a", "1")
    assert len(labels.name_hash("llama")) == labels.NAME_HASH_LENGTH
    assert labels.name_hash("llama", 0) == labels.name_hash("llama", 0)


NAMES = ["a", "a-1", "a-1-2", "b-0", "0", "1-b", "0-b", "b"]


def test_clique_names_of_valid_inputs_never_meet() -> None:
    """Set `a` gang 1 clique `0-b` and set `a-1` gang 0 clique `b` would both be `a-1-0-b`:
    the CRD refuses the clique name `0-b`. Over every valid input here, no two meet."""
    assert labels.clique_name("a", 1, "0-b") == labels.clique_name("a-1", 0, "b")
    assert DIGIT_PART.search("0-b")
    seen: dict[str, tuple[str, int, str]] = {}
    sets = [n for n in NAMES if n[0].isalpha()]
    cliques = [n for n in NAMES if not DIGIT_PART.search(n)]
    for cqs, gang, clique in itertools.product(sets, range(3), cliques):
        name = labels.clique_name(cqs, gang, clique)
        assert seen.setdefault(name, (cqs, gang, clique)) == (cqs, gang, clique), name


def test_pod_names_and_hostnames_never_meet() -> None:
    """A pod is `<Clique>-<index>`, its hostname `<clique>-<gang>-<index>` under the set's
    Service (`-<gang>-<instance>-<index>` in a scaling group, whose cliques the CRD keeps
    from ending in digits) or `<clique>-<index>` under the gang's: the indices have no '-'."""
    cliques = ["a-0-b", "a-0-b-1", "a-0-b-10", "a-0-b1"]
    pods = [labels.pod_name(c, i) for c in cliques for i in range(12)]
    assert len(set(pods)) == len(pods)
    shared = [
        labels.shared_pod_hostname(c, g, i, inst)
        for c in ("w", "w-1", "lead")
        for g in range(3)
        for i in range(3)
        for inst in (None,)
    ]
    assert len(set(shared)) == len(shared)
    grouped = [
        labels.shared_pod_hostname(c, g, i, inst)
        for c in ("w", "lead")
        for g in range(3)
        for i in range(3)
        for inst in range(3)
    ]
    assert len(set(grouped)) == len(grouped)
    per_gang = [
        labels.pod_hostname(c, i, inst)
        for c in ("w", "lead")
        for i in range(3)
        for inst in (None, 0, 1)
    ]
    assert len(set(per_gang)) == len(per_gang)
