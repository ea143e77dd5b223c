"""Which of the controller-manager's controllers is working, from its /metrics endpoint.

`workqueue_work_duration_seconds_sum{name}` is the time each of its work queues spent in
its controller's sync (wall time: a sync waiting on the API server counts). Its difference
over a window names the controllers that kept the controller-manager busy: after a deploy,
the endpoint and endpoint-slice controllers of a Service over many pods, or the garbage
collector's graph. The dev cluster's controller-manager serves /metrics without
authentication on its secure port (a self-signed certificate).
"""

from __future__ import annotations

import ssl
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

FAMILY = "workqueue_work_duration_seconds"


def port_of(pid: int) -> int | None:
    """The `--secure-port` of the process `pid`, from its command line."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    for arg in argv:
        if arg.startswith(b"--secure-port="):
            value = arg.split(b"=", 1)[1]
            return int(value) if value.isdigit() else None
    return None


def queue_work(text: str) -> dict[str, float]:
    """Seconds spent in each work queue's syncs so far, by queue name."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != FAMILY:
            continue
        for sample in family.samples:
            if sample.name == f"{FAMILY}_sum":
                name = sample.labels.get("name", "")
                out[name] = out.get(name, 0.0) + float(sample.value)
    return out


def scrape(port: int, timeout: float = 5.0) -> dict[str, float]:
    """`queue_work` of the controller-manager on 127.0.0.1:`port` (blocking)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    url = f"https://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
        return queue_work(resp.read().decode())


def busiest(after: dict[str, float], before: dict[str, float], n: int = 5) -> dict[str, float]:
    """The `n` queues that worked longest between two scrapes, with their seconds (those
    that worked at all)."""
    worked = {k: v - before.get(k, 0.0) for k, v in after.items()}
    top = sorted(((v, k) for k, v in worked.items() if v > 0), reverse=True)[:n]
    return {k: round(v, 3) for v, k in top}
