"""Each tenant's request rates, from its quotas, read again every few seconds.

Kept in memory so that a request costs no read of its own: an operator's change to a tenant's
quotas reaches every process within TTL_S. A fetch that many requests of one tenant wait for
at once is made once; one that fails (the database away) keeps what was known, or the
defaults, for another TTL_S.
"""

from __future__ import annotations

import asyncio
import logging
import time

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.models import Tenant
from service.ratelimit.buckets import Rate
from service.ratelimit.classes import RouteClass
from service.ratelimit.shared import UNREACHABLE
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_from

log = logging.getLogger(__name__)

TTL_S = 5.0
DEFAULTS = Quotas()


class TenantRates:
    def __init__(self, engine: AsyncEngine, ttl_s: float = TTL_S) -> None:
        self.engine = engine
        self.ttl_s = ttl_s
        self._known: dict[str, tuple[Quotas, float]] = {}
        self._reading: dict[str, asyncio.Task[Quotas]] = {}

    async def rate(self, tenant_id: str, route_class: RouteClass) -> Rate:
        quotas = await self.quotas(tenant_id)
        return Rate(getattr(quotas, f"{route_class}_per_s"))

    async def quotas(self, tenant_id: str) -> Quotas:
        """The tenant's quotas as read at most TTL_S ago (the caps on work in flight, too:
        service.ratelimit.running)."""
        known = self._known.get(tenant_id)
        if known is None or known[1] <= time.monotonic():
            return await self._read_once(tenant_id)
        return known[0]

    async def _read_once(self, tenant_id: str) -> Quotas:
        task = self._reading.get(tenant_id)
        if task is None:
            task = self._reading[tenant_id] = asyncio.create_task(self._read(tenant_id))
            task.add_done_callback(lambda _t: self._reading.pop(tenant_id, None))
        return await asyncio.shield(task)

    async def _read(self, tenant_id: str) -> Quotas:
        try:
            quotas = await self._stored(tenant_id)
        except UNREACHABLE as exc:
            log.warning("request rates of tenant %s not read: %s", tenant_id, exc)
            known = self._known.get(tenant_id)
            quotas = DEFAULTS if known is None else known[0]
        if len(self._known) > 100_000:  # tenants come and go: forget those not seen lately
            now = time.monotonic()
            self._known = {k: v for k, v in self._known.items() if v[1] > now}
        self._known[tenant_id] = (quotas, time.monotonic() + self.ttl_s)
        return quotas

    async def _stored(self, tenant_id: str) -> Quotas:
        async with self.engine.connect() as conn:
            stored = await conn.scalar(select(Tenant.quotas).where(Tenant.id == tenant_id))
        # A tenant gone since its caller was authenticated: its request fails on its own.
        return DEFAULTS if stored is None else quotas_from(stored)
