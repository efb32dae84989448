"""Reads of one chain; every statement is scoped to it through `_scoped`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime

from sqlalchemy import Select, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import AuditChainHead, AuditEvent


class AuditRepository:
    def __init__(self, session: AsyncSession, chain: str) -> None:
        self.session = session
        self.chain = chain

    def _scoped(self, stmt: Select[tuple[AuditEvent]]) -> Select[tuple[AuditEvent]]:
        return stmt.where(AuditEvent.chain == self.chain)

    async def list(
        self,
        *,
        limit: int,
        before_seq: int | None,
        action: str | None,
        target: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[AuditEvent]:
        stmt = self._scoped(select(AuditEvent))
        if before_seq is not None:
            stmt = stmt.where(AuditEvent.seq < before_seq)
        if action is not None:
            stmt = stmt.where(AuditEvent.action == action)
        if target is not None:
            stmt = stmt.where(AuditEvent.target == target)
        if since is not None:
            stmt = stmt.where(AuditEvent.ts >= since)
        if until is not None:
            stmt = stmt.where(AuditEvent.ts < until)
        stmt = stmt.order_by(AuditEvent.seq.desc()).limit(limit)
        return list((await self.session.scalars(stmt)).all())

    async def stream(
        self, after: int = 0, through: int | None = None, batch: int = 1000
    ) -> AsyncIterator[AuditEvent]:
        """The chain's events after seq `after` (up to `through`), in order, read in batches."""
        stmt = self._scoped(select(AuditEvent)).order_by(AuditEvent.seq).limit(batch)
        if through is not None:
            stmt = stmt.where(AuditEvent.seq <= through)
        while True:
            rows = list((await self.session.scalars(stmt.where(AuditEvent.seq > after))).all())
            for row in rows:
                yield row
            if len(rows) < batch:
                return
            after = rows[-1].seq
            self.session.expunge_all()

    async def head(self) -> AuditChainHead | None:
        return await self.session.get(AuditChainHead, self.chain)

    async def event(self, seq: int) -> AuditEvent | None:
        return await self.session.scalar(
            self._scoped(select(AuditEvent)).where(AuditEvent.seq == seq)
        )

    async def save_verified(self, seq: int, hash_at_seq: str, mac: str) -> None:
        await self.session.execute(
            update(AuditChainHead)
            .where(AuditChainHead.chain == self.chain)
            .values(verified_seq=seq, verified_hash=hash_at_seq, verified_mac=mac)
        )

    async def purge_before(self, cutoff: datetime) -> tuple[int, int | None]:
        """Delete the oldest events, up to the last one before `cutoff`.

        Deletes a prefix of the chain (by sequence number), so what remains is one unbroken
        chain; returns how many were deleted and the last deleted sequence number.
        """
        through = await self.session.scalar(
            select(func.max(AuditEvent.seq)).where(
                AuditEvent.chain == self.chain, AuditEvent.ts < cutoff
            )
        )
        if through is None:
            return 0, None
        result = await self.session.execute(
            delete(AuditEvent).where(AuditEvent.chain == self.chain, AuditEvent.seq <= through)
        )
        return result.rowcount or 0, int(through)
