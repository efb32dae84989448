"""Prometheus figures of the warm pool, registered once per process (they appear on /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

LABELS = ("template", "size")

TARGET = Gauge("airlock_pool_target", "Started sandboxes the pool should keep", LABELS)
READY = Gauge("airlock_pool_ready", "Started sandboxes waiting in the pool", LABELS)
CLAIMS = Counter("airlock_pool_claims", "Creates served by a pool member", LABELS)
MISSES = Counter(
    "airlock_pool_misses",
    "Creates that matched a pool but started cold (empty, or beyond the tenant's fair share)",
    (*LABELS, "reason"),
)
REFILL = Histogram(
    "airlock_pool_refill_seconds",
    "Time to start one pool member",
    LABELS,
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
)
