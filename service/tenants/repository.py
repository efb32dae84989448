from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Tenant


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
