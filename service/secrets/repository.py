from __future__ import annotations

from sqlalchemy import delete

from service.db.models import TenantSecret
from service.db.scoped import TenantScoped


class SecretRepository(TenantScoped[TenantSecret]):
    """Secrets of one tenant; every statement goes through `_scoped`."""

    model, what = TenantSecret, "secret"

    async def get(self, name: str, *, for_update: bool = False) -> TenantSecret | None:
        stmt = self._rows().where(TenantSecret.name == name)
        if for_update:
            stmt = stmt.with_for_update()
        return await self.session.scalar(stmt)

    async def list(self, *, limit: int, after_name: str | None) -> list[TenantSecret]:
        stmt = self._rows()
        if after_name is not None:
            stmt = stmt.where(TenantSecret.name > after_name)
        stmt = stmt.order_by(TenantSecret.name).limit(limit)
        return list((await self.session.scalars(stmt)).all())

    async def delete(self, name: str) -> bool:
        result = await self.session.execute(
            delete(TenantSecret).where(
                TenantSecret.tenant_id == self.tenant_id, TenantSecret.name == name
            )
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]
