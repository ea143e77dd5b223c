"""The API server's own request counters, read from its /metrics endpoint.

`apiserver_request_total{verb, resource, subresource, code}` counts every request the API
server served, from every client. The benchmark takes the difference over a phase for the
resources an operator writes and reads (pods without subresource, cliquesets, cliques,
services, events; `status` subresources of cliquesets and cliques), which leaves out the
scheduler's bindings and KWOK's pod status updates. Watches and lists of the benchmark's
own observer are counted too (a handful; the same for every operator).

Beside them, what the phase made the control plane do, by resource and from every client
(the operator, the controller-manager's controllers, the scheduler, the fake kubelets):
objects written (`writes pods/binding`), the bytes of the request bodies, and the watch
events the API server fanned out to every watcher with their bytes (`watch events pods`).
An operator's cost to a cluster is mostly there: one pod status change is sent to every
informer that watches pods.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

RESOURCES = {"pods", "cliquesets", "cliques", "services", "events", "controllerrevisions"}
STATUS_OK = {("cliquesets", "status"), ("cliques", "status"), ("cliquesets", "scale")}


#: The verbs of apiserver_request_total that write.
WRITE_VERBS = {"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}


@dataclass(frozen=True)
class Snapshot:
    """The API server's counters at one moment."""

    #: (verb, code) -> operator-relevant requests
    requests: Counter[tuple[str, str]]
    #: `writes R`, `write bytes R`, `watch events R`, `watch bytes R` -> count, by resource R
    plane: Counter[str]


def parse(text: str) -> Snapshot:
    """Both kinds of counters from one /metrics text."""
    requests: Counter[tuple[str, str]] = Counter()
    plane: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        if family.name in ("apiserver_request", "apiserver_request_total"):
            for sample in family.samples:
                if not sample.name.endswith("_total"):
                    continue
                lab = sample.labels
                res = lab.get("resource", "")
                sub = lab.get("subresource", "")
                verb = lab.get("verb", "?")
                if verb in WRITE_VERBS:
                    plane[f"writes {res}/{sub}" if sub else f"writes {res}"] += int(sample.value)
                if res not in RESOURCES or (sub and (res, sub) not in STATUS_OK):
                    continue
                requests[(verb, lab.get("code", "?"))] += int(sample.value)
        elif family.name in ("apiserver_watch_events", "apiserver_watch_events_total"):
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    plane[f"watch events {sample.labels.get('resource', '')}"] += int(sample.value)
        elif family.name in ("apiserver_watch_events_sizes", "apiserver_request_body_size_bytes"):
            key = "watch bytes" if family.name == "apiserver_watch_events_sizes" else "write bytes"
            for sample in family.samples:
                if sample.name.endswith("_sum"):
                    plane[f"{key} {sample.labels.get('resource', '')}"] += int(sample.value)
    return Snapshot(requests, plane)


async def scrape(client: Any) -> Snapshot:
    """Read the API server's counters through an authenticated cliques KubeClient."""
    raw = await client.get_path("/metrics")
    return parse(raw.decode())


def plane_delta(after: Counter[str], before: Counter[str]) -> dict[str, int]:
    """`writes R` ... -> the non-zero growth in between, and the totals over every
    resource (`writes`, `write bytes`, `watch events`, `watch bytes`)."""
    out: dict[str, int] = {}
    totals: Counter[str] = Counter()
    for key in sorted(set(after) | set(before)):
        n = after[key] - before[key]
        if n > 0:
            out[key] = n
            totals[key.rsplit(" ", 1)[0]] += n
    out.update(totals)
    return out


def delta(after: Counter[tuple[str, str]], before: Counter[tuple[str, str]]) -> dict[str, int]:
    """`VERB code` -> requests in between (only non-zero)."""
    out = {}
    for key in sorted(set(after) | set(before)):
        n = after[key] - before[key]
        if n:
            out[f"{key[0]} {key[1]}"] = n
    return out
