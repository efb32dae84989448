from __future__ import annotations

from service.db.models import ApiKey
from service.db.scoped import TenantScoped


class ApiKeyRepository(TenantScoped[ApiKey]):
    """API keys of one tenant; every statement goes through `_scoped`."""

    model, what = ApiKey, "key"

    async def get(self, key_id: str) -> ApiKey | None:
        return await self.session.scalar(self._rows().where(ApiKey.id == key_id))

    async def list(self, *, limit: int, after_id: str | None) -> list[ApiKey]:
        stmt = self._rows()
        if after_id is not None:
            stmt = stmt.where(ApiKey.id > after_id)
        return list((await self.session.scalars(stmt.order_by(ApiKey.id).limit(limit))).all())
