"""The operator's own counters, read from its /metrics endpoint (cliques operators only).

The API server's counters say what every client did (the fake kubelets' and the
controller-manager's requests among them); these say what the operator under test did
itself: its requests by verb and resource (`cliques_api_requests_total`, watches left out)
and, apart, those answered with an error code (`answered <code> <verb> <resource>`: a 409
is a conflict the operator drew on itself), its reconciles by controller
(`cliques_reconciles_total`) and the time they took (`cliques_reconcile_duration_seconds`,
wall time, in ms: a finer measure of a no-op reconcile than /proc's 10 ms ticks over a
whole process tree). The benchmark records their difference over each phase in the
phase's `extra` figures, so a change that saves requests or reconciles shows up as a
number, not a guess.
"""

from __future__ import annotations

import urllib.request
from collections import Counter

from prometheus_client.parser import text_string_to_metric_families


def parse(text: str) -> Counter[str]:
    """`requests <verb> <resource>`, `answered <code> <verb> <resource>` (codes 400 and up)
    and `reconciles <controller>` -> count, and `reconcile ms <controller>` -> milliseconds
    spent reconciling (wall time)."""
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            lab = sample.labels
            if family.name == "cliques_reconcile_duration_seconds":
                if sample.name.endswith("_sum"):
                    ms = round(sample.value * 1000)
                    out[f"reconcile ms {lab.get('controller', '?')}"] += ms
                continue
            if not sample.name.endswith("_total"):
                continue
            if family.name == "cliques_api_requests":
                if lab.get("verb") == "watch":
                    continue
                what = f"{lab.get('verb', '?')} {lab.get('resource', '?')}"
                out[f"requests {what}"] += int(sample.value)
                code = lab.get("code", "")
                if code.isdigit() and int(code) >= 400:
                    out[f"answered {code} {what}"] += int(sample.value)
            elif family.name == "cliques_reconciles":
                out[f"reconciles {lab.get('controller', '?')}"] += int(sample.value)
    return out


def scrape(port: int) -> Counter[str]:
    """Blocking read of http://127.0.0.1:PORT/metrics (call it in a thread)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return parse(resp.read().decode())


def delta(after: Counter[str], before: Counter[str]) -> dict[str, float]:
    """Non-zero differences, plus `requests`, `reconciles` and `reconcile ms` totals, and
    `answered <code>` over every verb and resource."""
    out: dict[str, float] = {}
    for key in sorted(set(after) | set(before)):
        n = after[key] - before[key]
        if n:
            out[key] = float(n)
            if key.startswith("reconcile ms"):
                head = key.rsplit(" ", 1)[0]
            elif key.startswith("answered "):
                head = " ".join(key.split(" ")[:2])
            else:
                head = key.split(" ")[0]
            out[head] = out.get(head, 0.0) + n
    return out
