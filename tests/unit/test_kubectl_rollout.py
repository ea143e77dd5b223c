"""`kubectl cliques rollout`: the history table and JSON (pure), ages as kubectl prints
them, which undo refusals end the command with which exit code, and the command line."""

from __future__ import annotations

import datetime as dt

import pytest

from cliques.kubectl import build_parser, exits, rollout
from cliques.kubectl.render import WIDTH
from cliques.rollout import history as rollout_history
from cliques.rollout.history import RevisionInfo

NOW = dt.datetime(2026, 11, 28, 12, 0, 0, tzinfo=dt.UTC)


def info(n: int, *, current: bool = False, cause: str = "", image: str = "vllm:1") -> RevisionInfo:
    return RevisionInfo(
        revision=n,
        name=f"llama-rev{n}",
        created="2026-11-28T11:15:00Z",
        change_cause=cause,
        images={"worker": (image, "sidecar:2"), "leader": (image,)},
        current=current,
    )


@pytest.mark.parametrize(
    ("created", "shown"),
    [
        ("2026-11-28T11:59:15Z", "45s"),
        ("2026-11-28T11:15:00Z", "45m"),
        ("2026-11-28T07:00:00Z", "5h"),
        ("2026-11-25T12:00:00Z", "3d"),
        ("2026-11-28T12:00:30Z", "0s"),
        ("", "-"),
        ("not a time", "-"),
    ],
)
def test_age(created: str, shown: str) -> None:
    assert rollout.age(created, NOW) == shown


def test_history_text_marks_the_current_and_fits_the_width() -> None:
    long_image = "registry.example.com/" + "a" * 120 + ":1"
    lines = rollout.history_text(
        "llama",
        [
            info(1),
            info(2, cause="kubectl apply -f v2.yaml", image=long_image),
            info(3, current=True),
        ],
        NOW,
    )
    assert lines[0] == "CliqueSet llama"
    assert all(len(line) <= WIDTH for line in lines)
    rows = [line for line in lines if line[:1].isdigit()]
    assert [r.split()[0] for r in rows] == ["1", "2", "3"]
    assert "*" in rows[2] and "*" not in rows[0] and "*" not in rows[1]
    assert "leader=vllm:1 worker=vllm:1,sidecar:2" in rows[0]
    assert rows[1].endswith("...")
    assert any("cause: kubectl apply -f v2.yaml" in line for line in lines)


def test_history_of_a_set_with_none_says_so() -> None:
    assert rollout.history_text("llama", [], NOW) == ["CliqueSet llama: no revisions recorded yet"]


def test_history_json_is_whole() -> None:
    doc = rollout.history_json("llama", [info(1), info(2, current=True)])
    assert doc["cliqueSet"] == "llama"
    assert [r["revision"] for r in doc["revisions"]] == [1, 2]
    assert doc["revisions"][1]["current"] is True
    assert doc["revisions"][0]["images"] == {
        "leader": ["vllm:1"],
        "worker": ["vllm:1", "sidecar:2"],
    }


def test_undo_refusals_and_their_exit_codes() -> None:
    missing = rollout.undo_failure(rollout_history.NoSuchRevision("llama", 7, [1, 2]))
    assert missing is not None and missing.code == exits.NOT_FOUND
    assert "no revision 7" in missing.message and "revisions: 1, 2" in missing.message
    raced = rollout.undo_failure(rollout_history.ConcurrentEdit("changed meanwhile"))
    assert raced is not None and raced.code == exits.CONFLICT
    assert rollout.undo_failure(rollout_history.AlreadyAtRevision("at 2 already")) is None


def test_the_command_line() -> None:
    args = build_parser().parse_args(["rollout", "undo", "llama", "--to-revision", "3", "-n", "x"])
    assert (args.command, args.verb, args.name, args.to_revision, args.namespace) == (
        "rollout",
        "undo",
        "llama",
        3,
        "x",
    )
    args = build_parser().parse_args(["-n", "y", "rollout", "history", "llama", "-o", "json"])
    assert (args.verb, args.output, args.namespace) == ("history", "json", "y")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["rollout", "llama"])


# --- rollout restart ------------------------------------------------------------------

AT = "2026-11-28T15:00:00Z"


def restart_set(*templates: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {"name": "llama", "resourceVersion": "42"},
        "spec": {
            "template": {
                "cliques": [{"name": f"c{i}", "template": t} for i, t in enumerate(templates)]
            }
        },
    }


def test_restart_stamps_every_clique_template_guarded_by_the_resource_version() -> None:
    from cliques.rollout import restart

    key = restart.RESTARTED_AT
    cqs = restart_set(
        {"spec": {}},  # no metadata
        {"metadata": {"labels": {"a": "b"}}, "spec": {}},  # no annotations
        {"metadata": {"annotations": {key: "2026-01-01T00:00:00Z", "x": "y"}}, "spec": {}},
    )
    ops = restart.restart_patch(cqs, AT)
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    base = "/spec/template/cliques"
    assert {"op": "test", "path": f"{base}/1/name", "value": "c1"} in ops
    writes = [op for op in ops if op["op"] == "add"]
    assert writes == [
        {"op": "add", "path": f"{base}/0/template/metadata", "value": {"annotations": {key: AT}}},
        {"op": "add", "path": f"{base}/1/template/metadata/annotations", "value": {key: AT}},
        # an earlier restart's time is replaced, the other annotations stay
        {
            "op": "add",
            "path": f"{base}/2/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt",
            "value": AT,
        },
    ]


def test_restart_parses() -> None:
    args = build_parser().parse_args(["rollout", "restart", "llama", "-n", "ml"])
    assert (args.command, args.verb, args.name, args.namespace) == (
        "rollout",
        "restart",
        "llama",
        "ml",
    )
