"""`cliques bench hash` (cliques-lab), wiring only: one tiny round without Go, the generic
selector loop it compares with the core, the reference implementation it loads from the
checkout without registering it, and its flags refusing rounds that measure nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cliques import hashing
from cliques.cli import build_parser, main


def test_bench_hash_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["bench", "hash", "--rounds", "1", "--round-ms", "2", "--no-go", "--results", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "| nginx.json | (a) |" in out
    assert "(a) vs (c)" in out
    assert "skipped: --no-go" in out
    (result,) = tmp_path.glob("hash-*.json")
    doc = json.loads(result.read_text())
    cases = {(t["fixture"], t["case"]) for t in doc["timings"]}
    assert {("nginx.json", "a"), ("inference.json", "c"), ("labels", "filter")} <= cases
    assert doc["skipped"] == {"d": "--no-go"}
    assert all(r["speedup"] > 0 for r in doc["ratios"])
    # The selector target is judged against the generic Python matcher; the hand-inlined
    # loop is reported for information only.
    labels = {r["slow"]: r for r in doc["ratios"] if r["fixture"] == "labels"}
    assert labels["loop-generic"]["target"] == 10.0
    assert labels["loop-generic"]["met"] in (True, False)
    assert labels["loop"]["target"] is None and labels["loop"]["met"] is None
    assert labels["loop"]["informational"] and not labels["loop-generic"]["informational"]
    assert "(filter) vs (loop) | " in out and "informational" in out


def test_generic_selector_loop_agrees_with_the_core() -> None:
    from cliques import _core
    from cliques_lab.bench import hashbench

    sets: list[dict[str, str]] = [
        *hashbench.label_sets(500),
        {},
        {"app.kubernetes.io/name": "llm", "tier": "decode", "canary": ""},
        {"app.kubernetes.io/name": "llm", "tier": "decode"},
    ]
    specs: list[dict[str, object]] = [
        hashbench.SELECTOR,
        {},
        {"matchLabels": {"tier": "decode", "version": "v1"}},
        {"matchExpressions": [{"key": "canary", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "version", "operator": "NotIn", "values": ["v0", "v1"]}]},
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["decode", "x"]}]},
    ]
    for spec in specs:
        want = _core.Selector(spec).filter(sets)
        assert hashbench.generic_filter(hashbench.parse_selector(spec), sets) == want, spec


def test_bench_without_a_benchmark_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench"]) == 2
    assert "hash" in capsys.readouterr().out


def test_bench_hash_loads_the_reference_without_registering_it(tmp_path: Path) -> None:
    from cliques_lab.bench import hashbench

    reference = tmp_path.joinpath(*hashbench.REFERENCE)
    reference.parent.mkdir()
    reference.write_text(
        "from __future__ import annotations\n"
        "import dataclasses\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class Canonical:\n"
        "    text: str\n"
        "    _: dataclasses.KW_ONLY\n"
        "    kind: str = 'PodTemplateSpec'\n"
        "def canonical_json(doc):\n"
        "    return Canonical(str(sorted(doc)), kind='x').text.encode()\n"
    )
    before = set(sys.modules)
    loaded = hashbench.load_reference(tmp_path)
    assert loaded.canonical_json({"b": 1, "a": 2}) == b"['a', 'b']"
    assert set(sys.modules) == before
    # The checkout's own reference loads the same way and agrees with the core.
    real = hashbench.load_reference(Path(__file__).resolve().parents[3])
    doc = {"spec": {"containers": [{"name": "main", "image": "nginx"}]}}
    assert real.template_hash(doc) == hashing.template_hash(doc)


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--rounds", "0"], "argument --rounds: must be >= 1, got 0"),
        (["--round-ms", "-5"], "argument --round-ms: must be >= 1, got -5"),
    ],
)
def test_bench_hash_refuses_rounds_that_measure_nothing(
    capsys: pytest.CaptureFixture[str], argv: list[str], why: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["bench", "hash", *argv])
    assert exit_.value.code == 2
    assert why in capsys.readouterr().err
