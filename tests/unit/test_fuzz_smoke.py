"""A bounded run of the atheris fuzz target (tests/fuzz/fuzz_canonical.py): 20,000 inputs
must give nothing but ValueError. Skipped when atheris is not installed (it is in the `dev`
extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "tests" / "fuzz" / "fuzz_canonical.py"


def test_fuzz_canonical_smoke(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"  # libFuzzer adds to it, so a copy of the seeds
    corpus.mkdir()
    seeds = [
        *sorted((ROOT / "bench" / "hash").glob("*.json")),
        *sorted((ROOT / "testdata" / "hash-golden").glob("*.json")),
    ]
    for seed in seeds:
        # First byte 0: the rest is fed as JSON bytes, kind PodTemplateSpec.
        (corpus / seed.name).write_bytes(b"\x00" + seed.read_bytes())
    proc = subprocess.run(
        [
            sys.executable,
            str(TARGET),
            "-runs=20000",
            "-seed=1",
            "-max_len=4096",
            "-rss_limit_mb=2048",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    tail = proc.stderr[-3000:]
    assert proc.returncode == 0, tail
    assert "Done 20000 runs" in proc.stderr, tail
    assert not list(tmp_path.glob("crash-*")), tail
