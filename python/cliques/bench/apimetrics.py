"""The API server's own request counters, read from its /metrics endpoint.

`apiserver_request_total{verb, resource, subresource, code}` counts every request the API
server served, from every client. The benchmark takes the difference over a phase for the
resources an operator writes and reads (pods without subresource, cliquesets, cliques,
services, events; `status` subresources of cliquesets and cliques), which leaves out the
scheduler's bindings and KWOK's pod status updates. Watches and lists of the benchmark's
own observer are counted too (a handful; the same for every operator).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

RESOURCES = {"pods", "cliquesets", "cliques", "services", "events", "controllerrevisions"}
STATUS_OK = {("cliquesets", "status"), ("cliques", "status"), ("cliquesets", "scale")}


def parse(text: str) -> Counter[tuple[str, str]]:
    """(verb, code) -> count of operator-relevant requests."""
    out: Counter[tuple[str, str]] = Counter()
    for family in text_string_to_metric_families(text):
        if family.name not in ("apiserver_request", "apiserver_request_total"):
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            lab = sample.labels
            res = lab.get("resource", "")
            sub = lab.get("subresource", "")
            if res not in RESOURCES or (sub and (res, sub) not in STATUS_OK):
                continue
            out[(lab.get("verb", "?"), lab.get("code", "?"))] += int(sample.value)
    return out


async def scrape(client: Any) -> Counter[tuple[str, str]]:
    """Read the API server's counters through an authenticated cliques KubeClient."""
    raw = await client.get_path("/metrics")
    return parse(raw.decode())


def delta(after: Counter[tuple[str, str]], before: Counter[tuple[str, str]]) -> dict[str, int]:
    """`VERB code` -> requests in between (only non-zero)."""
    out = {}
    for key in sorted(set(after) | set(before)):
        n = after[key] - before[key]
        if n:
            out[f"{key[0]} {key[1]}"] = n
    return out
