"""The hypothesis strategies of `hashing_strategies` checked against the pure-Python
reference: the templates they build are valid, their quantity spellings parse, and their
shuffles keep the canonical form."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import reference_canonical as ref
from tests.unit.hashing_strategies import LIGHT, quantity_strings, shuffle_unordered, templates


@LIGHT
@given(templates())
def test_templates_are_valid_for_the_reference(doc: dict[str, Any]) -> None:
    out = ref.canonical_json(doc)
    assert out.startswith(b'{"')
    assert b'"containers":[' in out


@settings(max_examples=50, deadline=None)
@given(quantity_strings())
def test_quantity_strings_parse(text: str) -> None:
    ref.parse_quantity(text)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(templates(), st.randoms(use_true_random=False))
def test_shuffle_keeps_the_reference_canonical_form(
    doc: dict[str, Any], rnd: random.Random
) -> None:
    before = ref.canonical_json(doc)
    list(shuffle_unordered(doc, rnd))
    assert ref.canonical_json(doc) == before
