"""Pool queries. Pools are not tenant data: the operator sets them; tenants only claim members
of pools of templates they can see (checked by the caller)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.base import utcnow
from service.db.models import PoolMember, PoolRequest, PoolTarget, Template

FAIR_SHARE_WINDOW = timedelta(seconds=60)
STATS_WINDOW = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Claim:
    """A member taken for a sandbox: its runtime sandbox and the runtime that runs it."""

    runtime_id: str
    runtime: str | None


class PoolRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def find(self, template_id: str, size: str) -> PoolTarget | None:
        return await self.session.scalar(
            select(PoolTarget).where(PoolTarget.template_id == template_id, PoolTarget.size == size)
        )

    async def targets(self) -> list[tuple[PoolTarget, Template]]:
        rows = await self.session.execute(
            select(PoolTarget, Template)
            .join(Template, Template.id == PoolTarget.template_id)
            .order_by(Template.name, PoolTarget.size)
        )
        return [(row.PoolTarget, row.Template) for row in rows]

    async def claim(
        self, pool_id: str, version_id: str, host: str, sandbox_id: str
    ) -> Claim | None:
        """Take one ready member atomically; None when empty.

        On PostgreSQL concurrent claims skip each other's locked rows instead of waiting or
        taking the same one; SQLite transactions here hold the write lock from their start.
        """
        pick = (
            select(PoolMember.id)
            .where(
                PoolMember.pool_id == pool_id,
                PoolMember.version_id == version_id,
                PoolMember.host == host,
                PoolMember.state == "ready",
            )
            .order_by(PoolMember.ready_at)
            .limit(1)
        )
        if self.session.bind.dialect.name == "postgresql":
            pick = pick.with_for_update(skip_locked=True)
        row = (
            await self.session.execute(
                update(PoolMember)
                .where(PoolMember.id == pick.scalar_subquery(), PoolMember.state == "ready")
                .values(state="claimed", claimed_at=utcnow(), sandbox_id=sandbox_id)
                .returning(PoolMember.runtime_id, PoolMember.runtime)
            )
        ).one_or_none()
        if row is None or row.runtime_id is None:
            return None
        return Claim(runtime_id=row.runtime_id, runtime=row.runtime)

    async def recent_asks(self, pool_id: str, tenant_id: str) -> tuple[int, int]:
        """(tenants that asked this pool in the last minute, counting this one; this tenant's
        claims in that minute)."""
        since = utcnow() - FAIR_SHARE_WINDOW
        tenants = set(
            (
                await self.session.scalars(
                    select(PoolRequest.tenant_id)
                    .where(PoolRequest.pool_id == pool_id, PoolRequest.at >= since)
                    .distinct()
                )
            ).all()
        )
        tenants.add(tenant_id)
        mine = await self.session.scalar(
            select(func.count(PoolRequest.id)).where(
                PoolRequest.pool_id == pool_id,
                PoolRequest.tenant_id == tenant_id,
                PoolRequest.claimed.is_(True),
                PoolRequest.at >= since,
            )
        )
        return len(tenants), int(mine or 0)

    def add_request(self, pool_id: str, tenant_id: str, claimed: bool) -> None:
        self.session.add(
            PoolRequest(pool_id=pool_id, tenant_id=tenant_id, claimed=claimed, at=utcnow())
        )

    async def member_counts(
        self, pool_id: str, host: str, version_id: str | None
    ) -> dict[str, int]:
        """This node's members of the version, by state."""
        return {
            state: n
            for (node, state), n in (await self.members_by_node(pool_id, version_id)).items()
            if node == host
        }

    async def members_by_node(
        self, pool_id: str, version_id: str | None
    ) -> dict[tuple[str, str], int]:
        """Every node's members of the version: (node, state) -> how many."""
        rows = await self.session.execute(
            select(PoolMember.host, PoolMember.state, func.count(PoolMember.id).label("n"))
            .where(
                PoolMember.pool_id == pool_id,
                PoolMember.version_id == (version_id or ""),
                PoolMember.state.in_(["starting", "ready"]),
            )
            .group_by(PoolMember.host, PoolMember.state)
        )
        return {(row.host, row.state): int(row.n) for row in rows}

    async def claims_and_misses(self, pool_id: str) -> tuple[int, int]:
        rows = await self.session.execute(
            select(PoolRequest.claimed, func.count(PoolRequest.id).label("n"))
            .where(PoolRequest.pool_id == pool_id, PoolRequest.at >= utcnow() - STATS_WINDOW)
            .group_by(PoolRequest.claimed)
        )
        counts = {bool(row.claimed): int(row.n) for row in rows}
        return counts.get(True, 0), counts.get(False, 0)

    async def prune(self, now: datetime) -> None:
        await self.session.execute(delete(PoolRequest).where(PoolRequest.at < now - STATS_WINDOW))
        await self.session.execute(
            delete(PoolMember).where(
                PoolMember.state == "claimed", PoolMember.claimed_at < now - STATS_WINDOW
            )
        )

    async def set_refill(self, pool_id: str, at: datetime, ms: int) -> None:
        await self.session.execute(
            update(PoolTarget)
            .where(PoolTarget.id == pool_id)
            .values(last_refill_at=at, last_refill_ms=ms)
        )
