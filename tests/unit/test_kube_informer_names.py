"""Informers are named for a person reading the log: kind, namespace and bucket range."""

from __future__ import annotations

import pytest

from cliques.kube import informer
from cliques.operator.buckets import BucketSet


@pytest.mark.parametrize(
    ("numbers", "text"),
    [
        ([0, 1, 2, 3], "0-3"),
        ([0, 1, 2, 3, 7, 9, 10], "0-3,7,9-10"),
        ([5], "5"),
        ([3, 1, 2], "1-3"),
        ([], ""),
    ],
)
def test_ranges(numbers: list[int], text: str) -> None:
    assert informer.ranges(numbers) == text


def test_a_process_s_bucket_selector_reads_as_a_range() -> None:
    selector = BucketSet(range(128)).selector()
    assert len(selector) > 400  # what the log used to repeat in every line
    assert informer.short_selector(selector) == " buckets=0-127"
    two = BucketSet([*range(0, 64), *range(128, 192)]).selector()
    assert informer.short_selector(two) == " buckets=0-63,128-191"
    assert informer.short_selector(BucketSet().selector()) == " all buckets"
    assert informer.short_selector("") == ""
    assert informer.short_selector("app=x,tier in (a,b)") == " selector=app=x,tier in (a,b)"


def test_each_version_of_an_undecodable_object_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from cliques.api.pod import Pod
    from cliques.kube.resources import PODS

    inf = informer.Informer(None, PODS, Pod)  # type: ignore[arg-type]  # the client is unused

    def bad(name: str, version: str) -> bytes:
        meta = f'{{"name": "{name}", "namespace": "ns", "resourceVersion": "{version}"}}'
        return f'{{"metadata": {meta}, "spec": 7}}'.encode()

    caplog.set_level("DEBUG", logger="cliques.kube.informer")
    for _ in range(5):  # relists and events: two bad objects, seen again and again
        assert inf._decode(bad("a", "1")) is None
        assert inf._decode(bad("b", "1")) is None
    assert inf._decode(bad("a", "2")) is None  # a new version of it is news
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 3, warned
    assert [w.split()[4] for w in warned] == ["ns/a:", "ns/b:", "ns/a:"]
