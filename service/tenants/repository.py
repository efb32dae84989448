from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Tenant


async def lock_tenant(session: AsyncSession, tenant_id: str) -> Tenant:
    """The tenant's row, locked until the transaction ends: what serialises one tenant's quota
    checks (count, then insert) across requests and replicas. Take it just before the insert,
    so nothing slow (name resolution, a streamed body) runs while it is held.

    FOR NO KEY UPDATE, not FOR UPDATE: rows that reference the tenant (a bundle being
    uploaded, a sandbox) take FOR KEY SHARE on it, which this does not wait for. On SQLite
    the clause is dropped: its transactions begin IMMEDIATE and so run one at a time."""
    tenant = await session.scalar(
        select(Tenant)
        .where(Tenant.id == tenant_id)
        .with_for_update(key_share=True)
        .execution_options(populate_existing=True)  # the quotas as they are now
    )
    assert tenant is not None
    return tenant


class TenantRepository:
    """Tenants are the operator's objects: the one repository not scoped by a tenant."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, tenant_id: str) -> Tenant | None:
        return await self.session.get(Tenant, tenant_id)

    async def get_by_name(self, name: str) -> Tenant | None:
        return await self.session.scalar(select(Tenant).where(Tenant.name == name))

    async def list(self, *, limit: int, after_id: str | None) -> list[Tenant]:
        stmt = select(Tenant)
        if after_id is not None:
            stmt = stmt.where(Tenant.id > after_id)
        return list((await self.session.scalars(stmt.order_by(Tenant.id).limit(limit))).all())

    def add(self, tenant: Tenant) -> None:
        self.session.add(tenant)
