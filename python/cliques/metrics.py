"""Prometheus metrics of the operator, defined once for every layer.

In a multi-process operator the supervisor sets PROMETHEUS_MULTIPROC_DIR before the workers
start, and prometheus-client then writes these to per-process files that the supervisor's
HTTP endpoint aggregates. Gauges use the `livesum` mode so that a dead worker's values go.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

API_REQUESTS = Counter(
    "cliques_api_requests_total",
    "Requests to the Kubernetes API server, by verb, resource and response code.",
    ["verb", "resource", "code"],
)
API_LATENCY = Histogram(
    "cliques_api_request_duration_seconds",
    "Latency of requests to the Kubernetes API server.",
    ["verb"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
API_THROTTLED = Counter(
    "cliques_api_throttled_total",
    "429 answers honoured with Retry-After.",
    ["resource"],
)
RECONCILES = Counter(
    "cliques_reconciles_total",
    "Reconciles by controller and result (success, requeue, error, conflict).",
    ["controller", "result"],
)
RECONCILE_DURATION = Histogram(
    "cliques_reconcile_duration_seconds",
    "Wall time of one reconcile.",
    ["controller"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5),
)
QUEUE_DEPTH = Gauge(
    "cliques_workqueue_depth",
    "Keys waiting in a work queue.",
    ["controller"],
    multiprocess_mode="livesum",
)
QUEUE_LATENCY = Histogram(
    "cliques_workqueue_latency_seconds",
    "Time a key waits in the queue before a reconcile picks it up.",
    ["controller"],
    buckets=(0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30),
)
STATUS_HOLD = Gauge(
    "cliques_status_hold_seconds",
    "How long a progress-only status is held back now (it stretches when pods are slow).",
    ["controller"],
    multiprocess_mode="livemax",
)
EXPECTATIONS_PENDING = Gauge(
    "cliques_expectations_pending",
    "Creates and deletes in flight that no watch event has confirmed yet.",
    ["controller"],
    multiprocess_mode="livesum",
)
OBJECTS_WRITTEN = Counter(
    "cliques_objects_written_total",
    "Objects the operator created, updated, patched or deleted, by kind and verb.",
    ["kind", "verb"],
)
INFORMER_RELISTS = Counter(
    "cliques_informer_relists_total",
    "Full relists of an informer (start, 410 Gone, errors).",
    ["resource", "reason"],
)
INFORMER_UNDECODABLE = Counter(
    "cliques_informer_undecodable_objects_total",
    "Objects an informer skipped because they cannot be decoded (too deep, wrong schema).",
    ["resource"],
)
WORKER_RESTARTS = Counter(
    "cliques_worker_restarts_total",
    "Worker processes the supervisor restarted after they died.",
    ["worker"],
)
