"""Append audit events in the caller's transaction, so an action and its record commit together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.chain import GENESIS, event_hash
from service.db.base import utcnow
from service.db.models import AuditChainHead, AuditEvent

OPERATOR_CHAIN = "_operator"


@dataclass(frozen=True, slots=True)
class AuditContext:
    """Who did it and where the request came from; built once per request."""

    actor: str
    request_id: str | None
    client: str | None


async def record(
    session: AsyncSession,
    ctx: AuditContext,
    *,
    chain: str,
    action: str,
    target: str | None,
    outcome: str = "ok",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    details = details or {}
    # Make sure the head row exists, then lock it: appends to one chain are serialised, and two
    # writers can never both extend the same link.
    insert = pg_insert if session.bind.dialect.name == "postgresql" else sqlite_insert
    await session.execute(
        insert(AuditChainHead)
        .values(chain=chain, seq=0, hash=GENESIS)
        .on_conflict_do_nothing(index_elements=["chain"])
    )
    head = (
        await session.execute(
            select(AuditChainHead)
            .where(AuditChainHead.chain == chain)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    ).scalar_one()
    seq = head.seq + 1
    ts = utcnow()
    digest = event_hash(
        chain=chain,
        seq=seq,
        ts=ts,
        actor=ctx.actor,
        action=action,
        target=target,
        request_id=ctx.request_id,
        client=ctx.client,
        outcome=outcome,
        details=details,
        prev_hash=head.hash,
    )
    event = AuditEvent(
        chain=chain,
        seq=seq,
        ts=ts,
        actor=ctx.actor,
        action=action,
        target=target,
        request_id=ctx.request_id,
        client=ctx.client,
        outcome=outcome,
        details=details,
        prev_hash=head.hash,
        hash=digest,
    )
    session.add(event)
    head.seq, head.hash = seq, digest
    await session.flush()
    return event
