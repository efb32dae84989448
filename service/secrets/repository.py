from __future__ import annotations

from sqlalchemy import Select, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import TenantSecret


class SecretRepository:
    """Secrets of one tenant; every statement goes through `_scoped`."""

    def __init__(self, session: AsyncSession, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self, stmt: Select[tuple[TenantSecret]]) -> Select[tuple[TenantSecret]]:
        return stmt.where(TenantSecret.tenant_id == self.tenant_id)

    async def get(self, name: str, *, for_update: bool = False) -> TenantSecret | None:
        stmt = self._scoped(select(TenantSecret)).where(TenantSecret.name == name)
        if for_update:
            stmt = stmt.with_for_update()
        return await self.session.scalar(stmt)

    async def list(self, *, limit: int, after_name: str | None) -> list[TenantSecret]:
        stmt = self._scoped(select(TenantSecret))
        if after_name is not None:
            stmt = stmt.where(TenantSecret.name > after_name)
        stmt = stmt.order_by(TenantSecret.name).limit(limit)
        return list((await self.session.scalars(stmt)).all())

    def add(self, row: TenantSecret) -> None:
        if row.tenant_id != self.tenant_id:
            raise ValueError("secret belongs to another tenant")
        self.session.add(row)

    async def delete(self, name: str) -> bool:
        result = await self.session.execute(
            delete(TenantSecret).where(
                TenantSecret.tenant_id == self.tenant_id, TenantSecret.name == name
            )
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]
