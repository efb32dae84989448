"""Append audit events in the caller's transaction, so an action and its record commit together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from service.audit.chain import GENESIS, event_hash
from service.db.base import utcnow
from service.db.models import AuditChainHead, AuditEvent

OPERATOR_CHAIN = "_operator"
# The retention purge's own event; its `purged_through_seq` anchors the chain that remains.
PURGE_ACTION = "audit.purge"


@dataclass(frozen=True, slots=True)
class AuditContext:
    """Who did it and where the request came from; built once per request."""

    actor: str
    request_id: str | None
    client: str | None


async def record(
    session: AsyncSession | AsyncConnection,
    ctx: AuditContext,
    *,
    chain: str,
    action: str,
    target: str | None,
    outcome: str = "ok",
    details: dict[str, Any] | None = None,
) -> None:
    details = details or {}
    # Lock the chain's head row: appends to one chain are serialised, and two writers can never
    # both extend the same link. Core statements: this runs on every state change and exec.
    lock = (
        select(AuditChainHead.seq, AuditChainHead.hash)
        .where(AuditChainHead.chain == chain)
        .with_for_update()
    )
    head = (await session.execute(lock)).one_or_none()
    if head is None:
        dialect = session.dialect if isinstance(session, AsyncConnection) else session.bind.dialect
        insert = pg_insert if dialect.name == "postgresql" else sqlite_insert
        await session.execute(
            insert(AuditChainHead)
            .values(chain=chain, seq=0, hash=GENESIS)
            .on_conflict_do_nothing(index_elements=["chain"])
        )
        head = (await session.execute(lock)).one()
    prev_seq, prev_hash = head
    seq = prev_seq + 1
    ts = utcnow()
    values = {
        "chain": chain,
        "seq": seq,
        "ts": ts,
        "actor": ctx.actor,
        "action": action,
        "target": target,
        "request_id": ctx.request_id,
        "client": ctx.client,
        "outcome": outcome,
        "details": details,
        "prev_hash": prev_hash,
    }
    values["hash"] = event_hash(**values)
    await session.execute(insert_event.values(**values))
    await session.execute(
        update(AuditChainHead)
        .where(AuditChainHead.chain == chain)
        .values(seq=seq, hash=values["hash"])
    )


insert_event = AuditEvent.__table__.insert()
