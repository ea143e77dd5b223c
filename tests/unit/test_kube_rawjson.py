"""The informer's fallback reader: list pages, watch events and object identities read
without recursion from JSON that msgspec refuses (nested deeper than the recursion limit)."""

from __future__ import annotations

import json

import msgspec
import pytest

from cliques.kube import rawjson

DEPTH = 3000


def deep(depth: int = DEPTH) -> bytes:
    return b'{"a":' * depth + b'"x,}]\\"{"' + b"}" * depth


def obj(name: str, spec: bytes) -> bytes:
    return (
        b'{"apiVersion":"cliques.dev/v1alpha1","kind":"CliqueSet","metadata":{"name":"'
        + name.encode()
        + b'","namespace":"team-a","uid":"u-'
        + name.encode()
        + b'","resourceVersion":"42","generation":3,"labels":{"x":"y"},"managedFields":[{"f":'
        + spec
        + b'}]},"spec":'
        + spec
        + b',"status":{"replicas":1}}'
    )


def test_msgspec_really_refuses_it() -> None:
    with pytest.raises(RecursionError):
        msgspec.json.decode(obj("bad", deep()), type=msgspec.Raw)


def test_the_identity_of_an_object_too_deep_to_decode() -> None:
    meta = rawjson.meta_of(obj("bad", deep()))
    assert meta == rawjson.Meta(
        name="bad", namespace="team-a", uid="u-bad", resource_version="42", generation=3
    )


def test_a_list_page_is_split_into_its_items() -> None:
    good = obj("good", b'{"replicas":2,"s":"a]b}c"}')
    page = (
        b'{"kind":"CliqueSetList","apiVersion":"cliques.dev/v1alpha1","metadata":'
        b'{"resourceVersion":"77","continue":"tok"},"items":['
        + good
        + b","
        + obj("bad", deep())
        + b","
        + good
        + b"]}"
    )
    rv, token, items = rawjson.split_items(page)
    assert (rv, token) == ("77", "tok")
    assert len(items) == 3
    assert json.loads(items[0]) == json.loads(good) == json.loads(items[2])
    assert rawjson.meta_of(items[1]).name == "bad"  # type: ignore[union-attr]


def test_an_empty_page() -> None:
    assert rawjson.split_items(b'{"metadata":{"resourceVersion":"5"},"items":[]}') == ("5", "", [])


def test_a_watch_event_is_split_into_type_and_object() -> None:
    body = obj("bad", deep())
    kind, raw = rawjson.split_event(b'{"type":"MODIFIED","object":' + body + b"}")
    assert kind == "MODIFIED" and raw == body


def test_no_identity_in_bytes_that_are_not_an_object() -> None:
    assert rawjson.meta_of(b"[1, 2") is None


@pytest.mark.parametrize(
    ("meta", "want"),
    [
        (b'{"managedFields":[{"a":[1]}],"name":"n"}', "n"),
        (b'{"name":"n","managedFields":[{"a":[1]}]}', "n"),
        (b'{"name":"n","managedFields":[],"uid":"u"}', "n"),
    ],
)
def test_managed_fields_are_left_out_wherever_they_are(meta: bytes, want: str) -> None:
    got = rawjson.meta_of(b'{"metadata":' + meta + b',"spec":' + deep() + b"}")
    assert got is not None and got.name == want
