"""`only_status_changed`: which updates a controller may skip as its own status write."""

from __future__ import annotations

import msgspec

from cliques.api.clique import CliqueStatus
from cliques.api.meta import only_status_changed

from . import planner_fixtures as f


def test_status_only_update_is_recognised() -> None:
    old = f.clique(0, "leader")
    new = msgspec.structs.replace(
        old,
        metadata=msgspec.structs.replace(old.metadata, resource_version="6"),
        status=CliqueStatus(observed_generation=1, replicas=1, ready_replicas=0),
    )
    assert only_status_changed(old, new)


def test_spec_label_annotation_and_deletion_changes_are_not_status_only() -> None:
    old = f.clique(0, "leader")
    m = old.metadata
    for meta in (
        msgspec.structs.replace(m, generation=2),
        msgspec.structs.replace(m, labels={**m.labels, "x": "y"}),
        msgspec.structs.replace(m, annotations={}),
        msgspec.structs.replace(m, deletion_timestamp="2026-11-22T08:00:00Z"),
        msgspec.structs.replace(m, finalizers=["f"]),
        msgspec.structs.replace(m, uid="other"),
    ):
        assert not only_status_changed(old, msgspec.structs.replace(old, metadata=meta))


def test_format_now_is_the_current_whole_second() -> None:
    import datetime
    import time

    from cliques.api.meta import format_now, format_time

    before = format_time(datetime.datetime.fromtimestamp(int(time.time()), datetime.UTC))
    got = format_now()
    after = format_time(datetime.datetime.fromtimestamp(int(time.time()), datetime.UTC))
    assert before <= got <= after
    assert got.endswith("Z") and len(got) == len("2026-11-22T08:00:00Z")


def test_parse_time_reads_what_format_time_writes() -> None:
    import datetime

    from cliques.api.meta import format_time, parse_time

    when = datetime.datetime(2026, 11, 22, 8, 0, 5, tzinfo=datetime.UTC)
    assert parse_time(format_time(when)) == when
    assert parse_time("2026-11-22T08:00:05.123Z") is None
    assert parse_time("garbage") is None
