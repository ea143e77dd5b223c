"""`cliques bench hash`: the canonical template hash and label selectors, side by side.

On each fixture of bench/hash/ (`nginx.json`, small; `inference.json`, a ~5 KB
multi-container inference template) it times, in one run:

(a) `template_hash` from JSON bytes (the Rust core, JSON parsed in Rust);
(b) `template_hash` from a Python dict (the core walks the Python objects themselves);
(b') the alternative to (b): serialise the dict with orjson, then (a) (skipped when orjson
     is not installed; it is in the `dev` extra);
(c) a careful pure-Python canonical hash: tests/reference_canonical.py's canonicalizer
    (a dict in, canonical bytes out) and hashlib's BLAKE2b as the digest, since a
    pure-Python FNV loop would only flatter the core (it is reported too, as (c'));
(d) Kubernetes' own `DeepHashObject` with FNV-32a on a decoded `corev1.PodTemplateSpec`,
    the Go program in bench/hash/go (built into ~/.cache/cliques/bench; skipped, with the
    reason, when Go or its modules are not available);

and `Selector.filter` over 10,000 label sets against two Python loops: ("loop-generic") a
straightforward general LabelSelector matcher (matchLabels and In/NotIn/Exists/DoesNotExist
requirements parsed once, then evaluated per label set: the helper an operator author would
write), which the 10x target is judged against; and ("loop") an expression hand-specialised
to this one selector, reported for information.

Each case is timed with `time.perf_counter_ns` (garbage collection off, as `timeit` does)
in rounds of about `--round-ms`, with the iteration count calibrated first; the median
round is reported. The harness's own call overhead is not subtracted. The results are
printed as a Markdown table with the speed-up ratios against their targets, and written as
JSON to bench/results/hash-<UTC timestamp>.json.

It compares the core with code that lives only in a source checkout (the fixtures, the
pure-Python reference in tests/ and the Go program), so it runs from a checkout: the
working directory or one named with `--checkout DIR`; elsewhere it stops with that advice.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import random
import runpy
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from cliques import _core, hashing

FIXTURES = ("nginx.json", "inference.json")
GO_CACHE = Path.home() / ".cache" / "cliques" / "bench"
LABEL_SETS = 10_000

# (name of the faster case, name of the slower case, minimum speed-up); a target of None
# marks an informational ratio: reported, never judged (its "met" is None).
TARGETS: tuple[tuple[str, str, float | None], ...] = (
    ("a", "c", 20.0),
    ("b", "c", 8.0),
    # The dict path within 1.5x of the bytes path, and faster than serialising first.
    ("b", "a", 1 / 1.5),
    ("b", "b'", 1.0),
    ("a", "d", 10.0),
    ("filter", "loop-generic", 10.0),
    ("filter", "loop", None),
)

CASES = {
    "a": "template_hash(JSON bytes)",
    "b": "template_hash(dict)",
    "b'": "template_hash(orjson.dumps(dict))",
    "c": "pure Python: reference canonicalizer + BLAKE2b",
    "c'": "pure Python: reference canonicalizer + FNV-1a 64 loop",
    "d": "Go: DeepHashObject + FNV-32a",
    "filter": f"Selector.filter({LABEL_SETS:,} label sets)",
    "loop": f"Python loop over {LABEL_SETS:,} label sets (hand-specialised to this selector)",
    "loop-generic": f"Python loop over {LABEL_SETS:,} label sets (generic LabelSelector matcher)",
}


class BenchError(Exception):
    """The benchmark cannot run (no checkout, bad fixture)."""


@dataclass
class Timing:
    case: str
    fixture: str
    ns_per_op: float
    rounds_ns_per_op: list[float]
    iterations: int
    note: str = ""

    @property
    def ops_per_s(self) -> float:
        return 1e9 / self.ns_per_op if self.ns_per_op > 0 else float("inf")


@dataclass
class Report:
    started: str
    machine: dict[str, Any]
    settings: dict[str, Any]
    timings: list[Timing] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    ratios: list[dict[str, Any]] = field(default_factory=list)

    def get(self, case: str, fixture: str) -> Timing | None:
        for t in self.timings:
            if t.case == case and t.fixture == fixture:
                return t
        return None


# --- timing --------------------------------------------------------------------------------


def _loop(fn: Callable[[], object], n: int) -> int:
    it = range(n)
    start = time.perf_counter_ns()
    for _ in it:
        fn()
    return time.perf_counter_ns() - start


def measure(
    fn: Callable[[], object], *, rounds: int, round_ns: int
) -> tuple[float, list[float], int]:
    """Median ns per call over `rounds` rounds of about `round_ns` each; and the rounds."""
    fn()  # warm up (and fail early)
    n = 1
    while True:
        elapsed = _loop(fn, n)
        if elapsed >= round_ns // 8 or n >= 1 << 24:
            break
        n *= 4
    n = max(1, round(n * round_ns / max(elapsed, 1)))
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        samples = [_loop(fn, n) / n for _ in range(rounds)]
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(samples), samples, n


# --- the cases -----------------------------------------------------------------------------


# Where the checkout-only parts live, relative to the checkout named by the user.
FIXTURE_DIR = ("bench", "hash")
REFERENCE = ("tests", "reference_canonical.py")


def find_checkout(start: Path | None = None) -> Path:
    """The source checkout: `start` (default: the working directory) or one of its parents."""
    base = (start or Path.cwd()).resolve()
    for directory in (base, *base.parents):
        fixture = directory.joinpath(*FIXTURE_DIR, FIXTURES[0])
        if fixture.is_file() and directory.joinpath(*REFERENCE).is_file():
            return directory
    raise BenchError(
        f"{base} is not inside a cliques source checkout (bench/hash/ and "
        "tests/reference_canonical.py are not installed with the package): run from a "
        "checkout or name one with --checkout DIR"
    )


def load_reference(root: Path) -> SimpleNamespace:
    """The checkout's tests/reference_canonical.py, run as a script by `runpy`: its module
    is in `sys.modules` while it runs (what dataclasses and the like look up as classes are
    made) and taken out again, so nothing of the checkout stays registered here."""
    path = root.joinpath(*REFERENCE)
    try:
        names = runpy.run_path(str(path), run_name="cliques_bench_reference")
    except OSError as exc:
        raise BenchError(f"cannot load {path}: {exc}") from exc
    return SimpleNamespace(**names)


def hash_serialised(dumps: Callable[[Any], bytes], doc: Mapping[str, Any]) -> str:
    """(b'): serialise, then hash the bytes."""
    return _core.template_hash(dumps(doc))


def python_hash(reference: Any, doc: Mapping[str, Any]) -> str:
    """(c): the careful pure-Python canonical hash (digest: BLAKE2b-64, in C)."""
    canonical: bytes = reference.canonical_json(doc)
    digest = int.from_bytes(hashlib.blake2b(canonical, digest_size=8).digest(), "big")
    return reference.safe_encode(str(digest))  # type: ignore[no-any-return]


def python_hash_fnv(reference: Any, doc: Mapping[str, Any]) -> str:
    """(c'): the same with the spec's FNV-1a 64 in pure Python (the exact template hash)."""
    return reference.hash_of_canonical(reference.canonical_json(doc))  # type: ignore[no-any-return]


def _run(
    argv: list[str], *, timeout: float, what: str, cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str] | None, str]:
    """Run a command, output captured: (the result, "") or (None, why: it took too long)."""
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None, f"{what} took over {timeout / 60:.0f} minutes"
    return done, ""


def run_go(
    root: Path, fixtures: Sequence[Path], rounds: int, round_ms: int
) -> tuple[dict[str, Any] | None, str]:
    """(d): build (if needed) and run the Go program; (report, "") or (None, why skipped)."""
    go = shutil.which("go")
    if go is None:
        return None, "Go is not installed (no `go` on PATH)"
    source = root.joinpath(*FIXTURE_DIR, "go")
    binary = GO_CACHE / "hashbench-go"
    inputs = [source / name for name in ("main.go", "go.mod", "go.sum")]
    stale = not binary.exists() or any(p.stat().st_mtime > binary.stat().st_mtime for p in inputs)
    if stale:
        GO_CACHE.mkdir(parents=True, exist_ok=True)
        print(
            f"building {binary} (go build; the first build compiles k8s.io/api) ...",
            file=sys.stderr,
        )
        built, why = _run(
            [go, "build", "-trimpath", "-o", str(binary), "."],
            cwd=source,
            timeout=1800,
            what="go build",
        )
        if built is None:
            return None, why
        if built.returncode != 0:
            return None, "go build failed: " + (built.stderr.strip().splitlines() or ["?"])[-1]
    ran, why = _run(
        [str(binary), f"-rounds={rounds}", f"-round={round_ms}ms", *map(str, fixtures)],
        timeout=600,
        what="the Go benchmark",
    )
    if ran is None:
        return None, why
    if ran.returncode != 0:
        return None, "the Go benchmark failed: " + ran.stderr.strip()[-300:]
    report: dict[str, Any] = json.loads(ran.stdout)
    return report, ""


def label_sets(count: int, seed: int = 7) -> list[dict[str, str]]:
    """Label sets like a cluster's pods: app, tier, zone, version, and a few extra."""
    rnd = random.Random(seed)
    apps = ["llm", "web", "db", "cache", "batch"]
    sets = []
    for i in range(count):
        labels = {
            "app.kubernetes.io/name": rnd.choice(apps),
            "tier": rnd.choice(["prefill", "decode", "frontend", "backend"]),
            "topology.kubernetes.io/zone": f"zone-{rnd.randrange(3)}",
            "version": f"v{rnd.randrange(5)}",
            "pod-template-hash": f"{rnd.getrandbits(40):x}",
            "cliques.dev/gang-index": str(i % 64),
        }
        if rnd.random() < 0.1:
            labels["canary"] = "true"
        sets.append(labels)
    return sets


SELECTOR: dict[str, Any] = {
    "matchLabels": {"app.kubernetes.io/name": "llm"},
    "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["prefill", "decode"]},
        {"key": "version", "operator": "NotIn", "values": ["v0"]},
        {"key": "canary", "operator": "DoesNotExist"},
    ],
}


# One parsed requirement: (key, operator, values).
Requirement = tuple[str, str, frozenset[str]]


def parse_selector(spec: Mapping[str, Any]) -> list[Requirement]:
    """A LabelSelector's requirements, parsed once (matchLabels are `In` a single value)."""
    requirements = [
        (key, "In", frozenset((value,))) for key, value in (spec.get("matchLabels") or {}).items()
    ]
    for expr in spec.get("matchExpressions") or ():
        operator = expr["operator"]
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"unknown operator {operator!r}")
        requirements.append((expr["key"], operator, frozenset(expr.get("values") or ())))
    return requirements


def selector_matches(requirements: Sequence[Requirement], labels: Mapping[str, str]) -> bool:
    """Whether a label set satisfies every requirement (apimachinery semantics)."""
    for key, operator, values in requirements:
        if operator == "In":
            if labels.get(key) not in values:
                return False
        elif operator == "NotIn":
            if labels.get(key) in values:
                return False
        elif operator == "Exists":
            if key not in labels:
                return False
        elif key in labels:  # DoesNotExist
            return False
    return True


def generic_filter(
    requirements: Sequence[Requirement], sets: Sequence[Mapping[str, str]]
) -> list[int]:
    """("loop-generic"): the general matcher above over every label set."""
    return [i for i, labels in enumerate(sets) if selector_matches(requirements, labels)]


def python_filter(sets: Sequence[Mapping[str, str]]) -> list[int]:
    """The selector above as a careful Python loop (requirements hoisted, short-circuit)."""
    tiers = frozenset(("prefill", "decode"))
    out = []
    for i, labels in enumerate(sets):
        if (
            labels.get("app.kubernetes.io/name") == "llm"
            and labels.get("tier") in tiers
            and labels.get("version") != "v0"
            and "canary" not in labels
        ):
            out.append(i)
    return out


# --- the run -------------------------------------------------------------------------------


def run(
    *,
    root: Path | None = None,
    rounds: int = 7,
    round_ms: int = 200,
    go: bool = True,
    results_dir: Path | None = None,
) -> Report:
    root = find_checkout(root)
    reference = load_reference(root)
    report = Report(
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        machine={
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "hash_algorithm": hashing.HASH_ALGORITHM_VERSION,
        },
        settings={"rounds": rounds, "round_ms": round_ms, "label_sets": LABEL_SETS},
    )
    round_ns = round_ms * 1_000_000
    fixture_paths = [root.joinpath(*FIXTURE_DIR, name) for name in FIXTURES]

    def timed(case: str, fixture: str, fn: Callable[[], object], note: str = "") -> None:
        print(f"  {fixture:<16} {case:<12} {CASES[case]}", file=sys.stderr)
        median, samples, n = measure(fn, rounds=rounds, round_ns=round_ns)
        report.timings.append(Timing(case, fixture, median, samples, n, note))

    dumps: Callable[[Any], bytes] | None = None
    try:
        import orjson

        dumps = orjson.dumps
    except ImportError:
        report.skipped["b'"] = "orjson is not installed"

    print("timing (median of rounds):", file=sys.stderr)
    for path in fixture_paths:
        data = path.read_bytes()
        doc = json.loads(data)
        expected = hashing.canonical_json(data)
        if reference.canonical_json(doc) != expected:
            raise BenchError(f"{path.name}: the reference and the core disagree; not comparable")
        if hashing.template_hash(doc) != hashing.template_hash(data):
            raise BenchError(f"{path.name}: bytes and dict inputs disagree")
        name = path.name
        timed("a", name, partial(_core.template_hash, data), f"{len(data)} bytes of JSON")
        timed("b", name, partial(_core.template_hash, doc))
        if dumps is not None:
            timed("b'", name, partial(hash_serialised, dumps, doc))
        timed("c", name, partial(python_hash, reference, doc), f"{len(expected)} canonical bytes")
        timed("c'", name, partial(python_hash_fnv, reference, doc))

    if go:
        go_report, why = run_go(root, fixture_paths, rounds, round_ms)
        if go_report is None:
            report.skipped["d"] = why
            print(f"  skipped (d): {why}", file=sys.stderr)
        else:
            report.machine["go"] = go_report.get("go")
            for result in go_report["results"]:
                report.timings.append(
                    Timing(
                        "d",
                        Path(result["fixture"]).name,
                        float(result["ns_per_op"]),
                        [float(x) for x in result["rounds_ns_per_op"]],
                        int(result["iterations"]),
                        "decoded once; DeepHashObject only",
                    )
                )
    else:
        report.skipped["d"] = "--no-go"

    sets = label_sets(LABEL_SETS)
    selector = _core.Selector(SELECTOR)
    requirements = parse_selector(SELECTOR)
    if selector.filter(sets) != python_filter(sets):
        raise BenchError("Selector.filter and the Python loop disagree; not comparable")
    if selector.filter(sets) != generic_filter(requirements, sets):
        raise BenchError("Selector.filter and the generic Python loop disagree; not comparable")
    matched = len(python_filter(sets))
    timed("filter", "labels", partial(selector.filter, sets), f"{matched} of {LABEL_SETS} match")
    timed("loop-generic", "labels", partial(generic_filter, requirements, sets))
    timed("loop", "labels", partial(python_filter, sets))

    for fast, slow, target in TARGETS:
        for fixture in ("labels",) if fast == "filter" else FIXTURES:
            a, b = report.get(fast, fixture), report.get(slow, fixture)
            if a is None or b is None:
                continue
            ratio = b.ns_per_op / a.ns_per_op
            report.ratios.append(
                {
                    "fixture": fixture,
                    "fast": fast,
                    "slow": slow,
                    "speedup": ratio,
                    "target": target,
                    "met": None if target is None else ratio >= target,
                    "informational": target is None,
                }
            )

    results_dir = results_dir or root / "bench" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = results_dir / f"hash-{stamp}.json"
    doc_out = asdict(report)
    doc_out["cases"] = CASES
    for timing in doc_out["timings"]:
        timing["ops_per_s"] = 1e9 / timing["ns_per_op"]
    out.write_text(json.dumps(doc_out, indent=2) + "\n")
    report.settings["results"] = str(out)
    return report


# --- output --------------------------------------------------------------------------------


def _ns(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:,.2f} ms"
    if value >= 1e3:
        return f"{value / 1e3:,.2f} µs"
    return f"{value:,.0f} ns"


def markdown(report: Report) -> str:
    lines = [
        f"## cliques bench hash — {report.started}",
        "",
        f"Python {report.machine['python']}, {report.machine['cpus']} CPUs, load average "
        f"{', '.join(f'{x:.1f}' for x in report.machine['load_average'] or [])}; "
        f"median of {report.settings['rounds']} rounds of ~{report.settings['round_ms']} ms.",
        "",
        "| fixture | case | what | time/op | ops/s | rounds min..max |",
        "|---|---|---|---:|---:|---:|",
    ]
    for t in report.timings:
        spread = f"{_ns(min(t.rounds_ns_per_op))}..{_ns(max(t.rounds_ns_per_op))}"
        what = CASES[t.case] + (f" ({t.note})" if t.note else "")
        cells = [t.fixture, f"({t.case})", what, _ns(t.ns_per_op), f"{t.ops_per_s:,.0f}", spread]
        lines.append("| " + " | ".join(cells) + " |")
    for case, why in report.skipped.items():
        lines.append(f"| all | ({case}) | {CASES[case]} | skipped: {why} | | |")
    lines += ["", "| fixture | speed-up | measured | target | |", "|---|---|---:|---:|---|"]
    for r in report.ratios:
        if r["target"] is None:
            target, mark = "-", "informational"
        else:
            target, mark = f">={r['target']:.2g}x", "met" if r["met"] else "**MISSED**"
        pair = f"({r['fast']}) vs ({r['slow']})"
        cells = [r["fixture"], pair, f"{r['speedup']:,.1f}x", target, mark]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"JSON: {report.settings.get('results', '-')}"]
    return "\n".join(lines)


def print_report(report: Report) -> None:
    text = markdown(report)
    if sys.stdout.isatty():
        try:
            from rich.console import Console
            from rich.markdown import Markdown
        except ImportError:
            pass
        else:
            Console().print(Markdown(text))
            return
    print(text)


def main(
    *,
    rounds: int = 7,
    round_ms: int = 200,
    go: bool = True,
    results_dir: Path | None = None,
    check: bool = False,
    checkout: Path | None = None,
) -> int:
    try:
        report = run(
            root=checkout, rounds=rounds, round_ms=round_ms, go=go, results_dir=results_dir
        )
    except BenchError as exc:
        print(f"cliques bench hash: {exc}", file=sys.stderr)
        return 2
    print_report(report)
    if check and not all(r["met"] for r in report.ratios if r["target"] is not None):
        return 1
    return 0
