from __future__ import annotations

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from service.db.models import Exec, ExecChunk


class ExecRepository:
    """Execs of one tenant (and, for a sandbox-bound token, of that sandbox only)."""

    def __init__(
        self,
        session: AsyncSession | AsyncConnection,
        tenant_id: str,
        only_sandbox: str | None = None,
    ) -> None:
        self.session = session
        self.tenant_id = tenant_id
        self.only_sandbox = only_sandbox

    def _scoped(self, stmt: Select[tuple[Exec]]) -> Select[tuple[Exec]]:
        stmt = stmt.where(Exec.tenant_id == self.tenant_id)
        if self.only_sandbox is not None:
            stmt = stmt.where(Exec.sandbox_id == self.only_sandbox)
        return stmt

    async def get(self, sandbox_id: str, exec_id: str) -> Exec | None:
        return await self.session.scalar(
            self._scoped(select(Exec))
            .where(Exec.sandbox_id == sandbox_id, Exec.id == exec_id)
            .execution_options(populate_existing=True)
        )

    async def get_by_idempotency_key(self, sandbox_id: str, key: str) -> Exec | None:
        return await self.session.scalar(
            self._scoped(select(Exec)).where(
                Exec.sandbox_id == sandbox_id, Exec.idempotency_key == key
            )
        )

    async def list(self, sandbox_id: str, *, limit: int, after_id: str | None) -> list[Exec]:
        stmt = self._scoped(select(Exec)).where(Exec.sandbox_id == sandbox_id)
        if after_id is not None:
            stmt = stmt.where(Exec.id > after_id)
        return list((await self.session.scalars(stmt.order_by(Exec.id).limit(limit))).all())

    async def chunks(self, exec_id: str, *, after_seq: int, limit: int = 500) -> list[ExecChunk]:
        # Callers reach this only for an exec they already found through `get`.
        return list(
            (
                await self.session.scalars(
                    select(ExecChunk)
                    .where(ExecChunk.exec_id == exec_id, ExecChunk.seq > after_seq)
                    .order_by(ExecChunk.seq)
                    .limit(limit)
                )
            ).all()
        )
