"""What each tenant's running sandboxes use on this node, on `/metrics`.

`UsageSampler` (a node job) reads every running sandbox's figures from the runtime each
`AIRLOCK_USAGE_SAMPLE_INTERVAL_S` and sums them per tenant; `/metrics` then shows the last
sums as `airlock_tenant_*` gauges labelled with the tenant id. Each node reports its own
sandboxes, so a fleet's figure for a tenant is the sum over its nodes (the scraper's
`instance` label tells them apart). The per-sandbox figures are `GET
/v1/sandboxes/{id}/metrics`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db.models import Sandbox as SandboxRow
from service.periodic import PeriodicJob
from service.runtime.errors import SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.sandboxes.states import State

log = logging.getLogger("airlock.usage")

# Asked of one sandbox's runtime at a time, so sampling never crowds the execs out.
PER_SANDBOX_TIMEOUT_S = 5.0


@dataclass
class TenantUsage:
    sandboxes: int = 0
    cpu_seconds: float = 0.0
    memory_bytes: int = 0
    processes: int = 0
    writable_bytes: int = 0


@dataclass
class _Latest:
    """The last sample of this process (one per process: `/metrics` is the process's)."""

    tenants: dict[str, TenantUsage] = field(default_factory=dict)
    at: float | None = None
    took_s: float = 0.0


LATEST = _Latest()

_GAUGES = (
    ("sandboxes", "Running sandboxes of the tenant on this node"),
    ("cpu_seconds", "CPU seconds the tenant's running sandboxes on this node have spent"),
    ("memory_bytes", "Host memory the tenant's running sandboxes on this node hold"),
    ("processes", "Processes in the tenant's running sandboxes on this node"),
    ("writable_bytes", "Writable space the tenant's running sandboxes on this node use"),
)


SAMPLE_AGE = "airlock_usage_sample_age_seconds"
SAMPLE_DURATION = "airlock_usage_sample_duration_seconds"
# Every name this module puts on /metrics.
METRIC_NAMES = (*(f"airlock_tenant_{name}" for name, _ in _GAUGES), SAMPLE_AGE, SAMPLE_DURATION)


class _UsageCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        if LATEST.at is None:
            return
        for name, documentation in _GAUGES:
            family = GaugeMetricFamily(
                f"airlock_tenant_{name}", documentation, labels=["tenant_id"]
            )
            for tenant_id, usage in sorted(LATEST.tenants.items()):
                family.add_metric([tenant_id], getattr(usage, name))
            yield family
        yield GaugeMetricFamily(
            SAMPLE_AGE,
            "Seconds since the per-tenant figures were sampled",
            value=time.monotonic() - LATEST.at,
        )
        yield GaugeMetricFamily(
            SAMPLE_DURATION,
            "How long the last per-tenant sample took",
            value=LATEST.took_s,
        )


_registered = False


def register() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(_UsageCollector())
        _registered = True


class UsageSampler(PeriodicJob):
    name = "usage-sampler"

    def __init__(
        self,
        db: async_sessionmaker[AsyncSession],
        holder: RuntimeHolder,
        interval_s: float,
        node_id: str,
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.holder = holder
        self.node_id = node_id
        register()

    async def run_once(self) -> bool:
        started = time.monotonic()
        runtime = await self.holder.get()
        async with self.db() as session:
            rows = (
                await session.execute(
                    select(SandboxRow.tenant_id, SandboxRow.runtime_id).where(
                        SandboxRow.state == State.RUNNING,
                        SandboxRow.node_id == self.node_id,
                        SandboxRow.runtime_id.is_not(None),
                    )
                )
            ).all()
        tenants: dict[str, TenantUsage] = {}
        for row in rows:
            runtime_id = row.runtime_id
            usage = tenants.setdefault(row.tenant_id, TenantUsage())
            usage.sandboxes += 1
            try:
                stats = await asyncio.wait_for(runtime.stats(runtime_id), PER_SANDBOX_TIMEOUT_S)
            except (SandboxRuntimeError, TimeoutError) as exc:
                log.debug("no figures for sandbox %s: %s", runtime_id, exc)
                continue
            usage.cpu_seconds += stats.cpu_seconds or 0.0
            usage.memory_bytes += stats.memory_bytes
            usage.processes += stats.processes or 0
            usage.writable_bytes += stats.writable_bytes or 0
        LATEST.tenants, LATEST.at = tenants, time.monotonic()
        LATEST.took_s = LATEST.at - started
        return False
