from __future__ import annotations

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import ApiKey


class ApiKeyRepository:
    """API keys of one tenant; every statement goes through `_scoped`."""

    def __init__(self, session: AsyncSession, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self, stmt: Select[tuple[ApiKey]]) -> Select[tuple[ApiKey]]:
        return stmt.where(ApiKey.tenant_id == self.tenant_id)

    async def get(self, key_id: str) -> ApiKey | None:
        return await self.session.scalar(self._scoped(select(ApiKey)).where(ApiKey.id == key_id))

    async def list(self, *, limit: int, after_id: str | None) -> list[ApiKey]:
        stmt = self._scoped(select(ApiKey))
        if after_id is not None:
            stmt = stmt.where(ApiKey.id > after_id)
        return list((await self.session.scalars(stmt.order_by(ApiKey.id).limit(limit))).all())

    def add(self, key: ApiKey) -> None:
        if key.tenant_id != self.tenant_id:
            raise ValueError("key belongs to another tenant")
        self.session.add(key)
