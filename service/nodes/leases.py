"""A node's place in the record: registered at start, held by a lease it renews, lost when it
stops renewing.

Times come from the database's clock on PostgreSQL (`now()`), so hosts whose clocks drift
still agree on who is late; the embedded SQLite database serves one process, whose clock is
the only one. Each start of a node process registers a new `incarnation`: a renewal carries
it, so a process that another start replaced (the same node id) can no longer renew, and
learns that it was replaced.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import ColumnElement, func, insert, literal, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from service.db.base import UTCDateTime, utcnow
from service.db.models import Node

READY, DRAINING, LOST = "ready", "draining", "lost"
REPLACED = "replaced"  # not a state of the record: what a renewal of a superseded start gets


@dataclass(frozen=True)
class NodeInfo:
    """What a node says of itself when it registers."""

    id: str
    address: str
    runtime: str
    platform: str | None
    vcpus: float
    memory_mib: int
    disk_mib: int
    pids: int
    version: str
    labels: dict[str, str] = field(default_factory=dict)


def db_now(on: AsyncSession | AsyncEngine) -> ColumnElement[object]:
    """Now by the clock leases are judged by, as an SQL value (see the module's words), for
    statements run in this session or on this engine."""
    engine = on.bind if isinstance(on, AsyncSession) else on
    if engine.dialect.name == "postgresql":
        return func.now()
    return literal(utcnow(), UTCDateTime())


class Leases:
    def __init__(self, db: async_sessionmaker[AsyncSession], lease_s: float) -> None:
        self.db = db
        self.lease = timedelta(seconds=lease_s)

    def clock(self, session: AsyncSession) -> tuple[ColumnElement[object], ColumnElement[object]]:
        """Now, and the end of a lease taken now, as SQL values."""
        if session.bind.dialect.name == "postgresql":
            return func.now(), func.now() + self.lease
        now = utcnow()  # SQLite has no interval arithmetic: the end is computed here
        return literal(now, UTCDateTime()), literal(now + self.lease, UTCDateTime())

    async def register(self, info: NodeInfo) -> str:
        """Take (or take back) the node's place; its new incarnation. A node an operator
        drained stays draining; a lost one is ready again."""
        incarnation = secrets.token_hex(16)
        async with self.db() as session, session.begin():
            now, until = self.clock(session)
            values = {
                "address": info.address,
                "runtime": info.runtime,
                "platform": info.platform,
                "vcpus": info.vcpus,
                "memory_mib": info.memory_mib,
                "disk_mib": info.disk_mib,
                "pids": info.pids,
                "labels": dict(info.labels),
                "version": info.version,
                "incarnation": incarnation,
            }
            found = await session.scalar(
                select(Node.state).where(Node.id == info.id).with_for_update()
            )
            times = {"registered_at": now, "lease_expires_at": until}
            if found is None:
                row = {"id": info.id, "state": READY, **values, **times}
                await session.execute(insert(Node).values(**row))
            else:
                state = DRAINING if found == DRAINING else READY
                await session.execute(
                    update(Node).where(Node.id == info.id).values(state=state, **values, **times)
                )
        return incarnation

    async def renew(self, node_id: str, incarnation: str) -> str:
        """Extend the lease; the node's state, or REPLACED when another start registered the
        node since (this process must stop acting for it), or LOST when the lease ran out
        (late renewals do not bring it back: it registers again and reconciles)."""
        async with self.db() as session, session.begin():
            _, until = self.clock(session)
            row = await session.execute(
                update(Node)
                .where(
                    Node.id == node_id,
                    Node.incarnation == incarnation,
                    Node.state != LOST,
                )
                .values(lease_expires_at=until)
                .returning(Node.state)
            )
            state = row.scalar_one_or_none()
            if state is not None:
                return state
            holder = await session.scalar(select(Node.incarnation).where(Node.id == node_id))
        return LOST if holder == incarnation else REPLACED

    async def mark_lost(self) -> list[str]:
        """Nodes whose lease ran out become lost; their ids."""
        async with self.db() as session, session.begin():
            return await self.mark_lost_in(session)

    async def mark_lost_in(self, session: AsyncSession, keep: str | None = None) -> list[str]:
        """`mark_lost` inside the caller's transaction, sparing the node `keep`."""
        now, _ = self.clock(session)
        late = [Node.state != LOST, Node.lease_expires_at < now]
        if keep is not None:
            late.append(Node.id != keep)
        rows = await session.execute(
            update(Node).where(*late).values(state=LOST).returning(Node.id)
        )
        return sorted(rows.scalars())

    async def set_state(self, node_id: str, state: str) -> bool:
        """Drain a node (or make a drained one ready); False when there is no such node or it
        is lost."""
        async with self.db() as session, session.begin():
            rows = await session.execute(
                update(Node)
                .where(Node.id == node_id, Node.state != LOST)
                .values(state=state)
                .returning(Node.id)
            )
            return rows.scalar_one_or_none() is not None
