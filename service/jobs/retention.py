"""The audit retention purge: per tenant, events older than the tenant's retention are deleted.

Each purge is itself recorded in the tenant's chain, so a verification after a purge is
anchored at the first kept event and the chain never ends in a gap. On PostgreSQL the
append-only trigger lets deletes through only inside this job's transaction (it sets
`airlock.audit_purge`) and only for events older than a day.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from sqlalchemy import delete, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, record
from service.audit.repository import AuditRepository
from service.db.base import utcnow
from service.db.models import Exec, RevokedToken, Sandbox, Tenant
from service.settings import Settings
from service.tenants.service import quotas_of

log = logging.getLogger("airlock.jobs.retention")

SYSTEM = AuditContext(actor="system:retention", request_id=None, client=None)


async def purge_once(session: AsyncSession, default_days: int | None = None) -> dict[str, int]:
    """Purge every tenant's expired events and expired revocations; returns counts per tenant."""
    if session.bind.dialect.name == "postgresql":
        await session.execute(text("SET LOCAL airlock.audit_purge = 'on'"))
    now = utcnow()
    purged: dict[str, int] = {}
    tenants = (await session.scalars(select(Tenant))).all()
    for tenant in tenants:
        days = quotas_of(tenant).audit_retention_days if default_days is None else default_days
        cutoff = now - timedelta(days=days)
        count = await AuditRepository(session, tenant.id).purge_before(cutoff)
        # Exec history and finished sandboxes are kept exactly as long as the audit log.
        await session.execute(
            delete(Exec).where(
                Exec.tenant_id == tenant.id, Exec.created_at < cutoff, Exec.state != "running"
            )
        )
        await session.execute(
            delete(Sandbox).where(
                Sandbox.tenant_id == tenant.id,
                Sandbox.state == "stopped",
                Sandbox.stopped_at < cutoff,
            )
        )
        if count:
            purged[tenant.id] = count
            await record(
                session,
                SYSTEM,
                chain=tenant.id,
                action="audit.purge",
                target=tenant.id,
                details={"before": cutoff.isoformat(), "events": count, "retention_days": days},
            )
    await session.execute(RevokedToken.__table__.delete().where(RevokedToken.expires_at < now))
    return purged


class RetentionJob:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], settings: Settings) -> None:
        self.sessionmaker = sessionmaker
        self.interval = settings.retention_interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="audit-retention")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def _loop(self) -> None:
        while True:
            try:
                async with self.sessionmaker() as session, session.begin():
                    purged = await purge_once(session)
                if purged:
                    log.info("audit retention purged %s", purged)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("audit retention run failed; retrying next interval")
            await asyncio.sleep(self.interval)
