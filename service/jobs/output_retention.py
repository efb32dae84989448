"""Stored output retention: what executions printed and the review bundles tenants uploaded
are kept `output_retention_days` and `bundle_retention_days` (tenant quotas), far shorter
than the records and audit events that describe them (`audit_retention_days`). Exec output
is also trimmed to the tenant's `max_stored_output_mib` here, as a backstop to the trim after
each exec that passes it (service.execs.stored)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import ReviewBundle, Tenant
from service.execs import stored
from service.tenants.service import quotas_of


async def purge_outputs(session: AsyncSession, now: datetime) -> dict[str, int]:
    """Delete expired exec output and bundles of every tenant, and trim exec output to the
    tenant's cap; (execs whose output went + bundles) deleted per tenant."""
    purged: dict[str, int] = {}
    for tenant in (await session.scalars(select(Tenant))).all():
        quotas = quotas_of(tenant)
        output_cutoff = now - timedelta(days=quotas.output_retention_days)
        execs = await stored.purge_before(session, tenant.id, output_cutoff)
        execs += await stored.trim(session, tenant.id, quotas.max_stored_output_mib * stored.MIB)
        bundles = await session.execute(
            delete(ReviewBundle).where(
                ReviewBundle.tenant_id == tenant.id,
                ReviewBundle.created_at < now - timedelta(days=quotas.bundle_retention_days),
            )
        )
        count = execs + int(bundles.rowcount or 0)  # type: ignore[attr-defined]
        if count:
            purged[tenant.id] = count
    return purged
