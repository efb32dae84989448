"""The audit retention purge: per tenant, events older than the tenant's retention are deleted.

Each purge is itself recorded in the tenant's chain, so a verification after a purge is
anchored at the first kept event and the chain never ends in a gap. On PostgreSQL the
append-only trigger lets deletes through only inside this job's transaction (it sets
`airlock.audit_purge`) and only for events older than a day.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import PURGE_ACTION, AuditContext, record
from service.audit.repository import AuditRepository
from service.db.base import utcnow
from service.db.models import Exec, ExecStartBucket, RevokedToken, Sandbox, Tenant
from service.db.pg import only_one
from service.execs import stored
from service.execs.recording import rate_second
from service.jobs.output_retention import purge_outputs
from service.jobs.queries import AUDIT_PURGE_ON
from service.periodic import PeriodicJob
from service.settings import Settings
from service.tenants.service import quotas_of

log = logging.getLogger("airlock.jobs.retention")

SYSTEM = AuditContext(actor="system:retention", request_id=None, client=None)
_LOCK_KEY = 0x61697232  # pg advisory lock key of the retention passes


async def purge_once(session: AsyncSession, default_days: int | None = None) -> dict[str, int]:
    """Purge every tenant's expired events and expired revocations; returns counts per tenant.

    Each tenant is purged in its own savepoint, so one tenant's failure does not keep the
    others from being purged.
    """
    postgres = session.bind.dialect.name == "postgresql"
    now = utcnow()
    # The database refuses to delete events younger than a day by its own clock; never ask
    # it to, whatever this host's clock says.
    floor = None
    if postgres:
        await session.execute(AUDIT_PURGE_ON)
        db_now = await session.scalar(select(func.now()))
        floor = db_now - timedelta(days=1, minutes=5)
    purged: dict[str, int] = {}
    tenants = (await session.scalars(select(Tenant))).all()
    for tenant in tenants:
        days = quotas_of(tenant).audit_retention_days if default_days is None else default_days
        cutoff = now - timedelta(days=days)
        if floor is not None:
            cutoff = min(cutoff, floor)
        try:
            async with session.begin_nested():
                count = await _purge_tenant(session, tenant.id, cutoff, days)
        except SQLAlchemyError:
            log.exception("audit retention for tenant %s failed; others go on", tenant.id)
            continue
        if count:
            purged[tenant.id] = count
    await session.execute(RevokedToken.__table__.delete().where(RevokedToken.expires_at < now))
    # Rate buckets no check sums any more (the last minute's, service/execs/recording.py).
    stale = rate_second(now) - 120
    await session.execute(delete(ExecStartBucket).where(ExecStartBucket.second < stale))
    return purged


async def _purge_tenant(session: AsyncSession, tenant_id: str, cutoff: datetime, days: int) -> int:
    count, through = await AuditRepository(session, tenant_id).purge_before(cutoff)
    # Exec history and finished sandboxes are kept exactly as long as the audit log; the
    # output of the execs that go is taken off the tenant's stored output first.
    await stored.purge_before(session, tenant_id, cutoff)
    await session.execute(
        delete(Exec).where(
            Exec.tenant_id == tenant_id, Exec.created_at < cutoff, Exec.state != "running"
        )
    )
    await session.execute(
        delete(Sandbox).where(
            Sandbox.tenant_id == tenant_id,
            Sandbox.state == "stopped",
            Sandbox.stopped_at < cutoff,
        )
    )
    if count:
        await record(
            session,
            SYSTEM,
            chain=tenant_id,
            action=PURGE_ACTION,
            target=tenant_id,
            details={
                "before": cutoff.isoformat(),
                "events": count,
                "purged_through_seq": through,
                "retention_days": days,
            },
        )
    return count


class RetentionJob(PeriodicJob):
    name = "audit-retention"

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], settings: Settings) -> None:
        super().__init__(settings.retention_interval_s)
        self.sessionmaker = sessionmaker

    async def run_once(self) -> bool:
        # Every API process runs this job; one of them at a time does each pass.
        async with self.sessionmaker() as session, session.begin():
            purged = await purge_once(session) if await only_one(session, _LOCK_KEY) else {}
        if purged:
            log.info("audit retention purged %s", purged)
        async with self.sessionmaker() as session, session.begin():
            outputs = (
                await purge_outputs(session, utcnow()) if await only_one(session, _LOCK_KEY) else {}
            )
        if outputs:
            log.info("output retention purged %s", outputs)
        return False
