"""atheris fuzz target: arbitrary input to `canonical_json` / `template_hash` may only ever
raise ValueError, never crash the process or raise anything else.

    .venv/bin/python tests/fuzz/fuzz_canonical.py -runs=100000 [CORPUS_DIR]
    .venv/bin/python tests/fuzz/fuzz_canonical.py -max_total_time=300 /tmp/corpus

Each input is used four ways, chosen by its first byte: as JSON bytes, as a str, as the
object Python's json makes of it (the mapping path of the binding), and as a structured
template built from the bytes (pod-template-shaped documents with fuzzed quantities, keys
and nesting, which get past the JSON parser far more often). Both kinds are tried. For a
valid input, the canonical form must be valid JSON, idempotent, and `template_hash` must be
the hash of it. tests/unit/test_fuzz_smoke.py runs this for a bounded number of runs.

The Rust extension is not built with coverage instrumentation, so libFuzzer's feedback
comes from the Python side only (this file, and `json`); the structured mode is what
reaches deep into the core. rust/fuzz is the place for a coverage-guided target of the
core itself.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import atheris

from cliques import _core

atheris.instrument_func(json.loads)

KINDS = ("PodTemplateSpec", "PodSpec")
QUANTITY_PARTS = ["", "-", "+", "0", "1", "10", ".", "5", "e", "E", "-3", "+2", "Ki", "Mi",
                  "Gi", "m", "n", "k", "M", "E", "101", "e100", "00", " ", "\x00", "é"]  # fmt: skip
FIELDS = ["containers", "initContainers", "volumes", "ports", "env", "resources", "limits",
          "requests", "name", "containerPort", "protocol", "overhead", "securityContext",
          "args", "tolerations", "metadata", "labels", "spec", "finalizers"]  # fmt: skip


@atheris.instrument_func
def structured(fdp: atheris.FuzzedDataProvider, depth: int = 0) -> Any:
    """A JSON value shaped like a pod template, steered by the fuzzer's bytes."""
    choice = fdp.ConsumeIntInRange(0, 11 if depth < 6 else 5)
    if choice == 0:
        return None
    if choice == 1:
        return fdp.ConsumeBool()
    if choice == 2:
        return fdp.ConsumeInt(8)
    if choice == 3:
        return fdp.ConsumeRegularFloat()
    if choice == 4:  # a quantity-like string
        return "".join(
            fdp.PickValueInList(QUANTITY_PARTS) for _ in range(fdp.ConsumeIntInRange(0, 4))
        )
    if choice == 5:
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 8))
    if choice in (6, 7):
        return [structured(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    keys = [
        fdp.PickValueInList(FIELDS) if fdp.ConsumeBool() else fdp.ConsumeUnicodeNoSurrogates(4)
        for _ in range(fdp.ConsumeIntInRange(0, 4))
    ]
    return {k: structured(fdp, depth + 1) for k in keys}


@atheris.instrument_func
def check(doc: Any, kind: str) -> None:
    try:
        canonical = _core.canonical_json(doc, kind)
    except ValueError:
        return
    json.loads(canonical)  # valid JSON
    assert _core.canonical_json(canonical, kind) == canonical, "not idempotent"
    assert _core.template_hash(doc, kind) == _core.template_hash(canonical, kind)


@atheris.instrument_func
def test_one_input(data: bytes) -> None:
    if not data:
        return
    mode, kind, body = data[0] % 4, KINDS[(data[0] >> 2) % 2], data[1:]
    if mode == 0:
        check(body, kind)
    elif mode == 1:
        check(body.decode("utf-8", "replace"), kind)
    elif mode == 2:
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return
        if isinstance(parsed, dict):
            check(parsed, kind)
    else:
        fdp = atheris.FuzzedDataProvider(body)
        doc = structured(fdp)
        if fdp.ConsumeBool():
            doc = (
                {"spec": {"containers": [doc]}}
                if kind == "PodTemplateSpec"
                else {"containers": [doc]}
            )
        check(doc if isinstance(doc, dict) else {"spec": doc}, kind)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
