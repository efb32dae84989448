"""Stored output retention: what executions printed and the review bundles tenants uploaded
are kept `output_retention_days` and `bundle_retention_days` (tenant quotas), far shorter
than the records and audit events that describe them (`audit_retention_days`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Exec, ExecChunk, ReviewBundle, Tenant
from service.tenants.service import quotas_of


async def purge_outputs(session: AsyncSession, now: datetime) -> dict[str, int]:
    """Delete expired exec output and bundles of every tenant; (output chunks + bundles)
    deleted per tenant."""
    purged: dict[str, int] = {}
    for tenant in (await session.scalars(select(Tenant))).all():
        quotas = quotas_of(tenant)
        output_cutoff = now - timedelta(days=quotas.output_retention_days)
        old_execs = select(Exec.id).where(
            Exec.tenant_id == tenant.id,
            Exec.created_at < output_cutoff,
            Exec.state != "running",
        )
        chunks = await session.execute(delete(ExecChunk).where(ExecChunk.exec_id.in_(old_execs)))
        bundles = await session.execute(
            delete(ReviewBundle).where(
                ReviewBundle.tenant_id == tenant.id,
                ReviewBundle.created_at < now - timedelta(days=quotas.bundle_retention_days),
            )
        )
        count = int(chunks.rowcount or 0) + int(bundles.rowcount or 0)  # type: ignore[attr-defined]
        if count:
            purged[tenant.id] = count
    return purged
