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
from service.db.pg import dumps

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
    event = next_event(
        ctx, chain=chain, head=head, action=action, target=target, outcome=outcome, details=details
    )
    await session.execute(insert_event.values(**event))
    await session.execute(
        update(AuditChainHead)
        .where(AuditChainHead.chain == chain)
        .values(seq=event["seq"], hash=event["hash"])
    )


insert_event = AuditEvent.__table__.insert()


def next_event(
    ctx: AuditContext,
    *,
    chain: str,
    head: tuple[int, str],
    action: str,
    target: str | None,
    outcome: str,
    details: dict[str, Any],
) -> dict[str, Any]:
    """The event that extends a chain whose head is (seq, hash), with its hash."""
    prev_seq, prev_hash = head
    values: dict[str, Any] = {
        "chain": chain,
        "seq": prev_seq + 1,
        "ts": utcnow(),
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
    return values


# The same append on PostgreSQL through the driver (service.db.pg): the head is locked with one
# statement, and the event, the head's move and the action's own write go in a second.

_EVENT_COLUMNS = (
    "chain",
    "seq",
    "ts",
    "actor",
    "action",
    "target",
    "request_id",
    "client",
    "outcome",
    "details",
    "prev_hash",
    "hash",
)


async def pg_lock_head(conn: Any, chain: str) -> tuple[int, str]:
    """Lock a chain's head row (made at genesis when missing) and return (seq, hash)."""
    lock = "SELECT seq, hash FROM audit_chain_heads WHERE chain = $1 FOR UPDATE"
    head = await conn.fetchrow(lock, chain)
    if head is None:
        await conn.execute(
            "INSERT INTO audit_chain_heads (chain, seq, hash) VALUES ($1, 0, $2) "
            "ON CONFLICT (chain) DO NOTHING",
            chain,
            GENESIS,
        )
        head = await conn.fetchrow(lock, chain)
    return head[0], head[1]


async def pg_append(
    conn: Any, event: dict[str, Any], *, with_statement: tuple[str, list[Any]] | None = None
) -> None:
    """Write `event` and move its chain's head, after `pg_lock_head` in the same transaction.

    `with_statement` is a data-modifying statement (numbered parameters from $1) and its
    parameters, run in the same statement as the append.
    """
    prefix, params = with_statement or ("", [])
    n = len(params)
    placeholders = ", ".join(f"${n + i + 1}" for i in range(len(_EVENT_COLUMNS)))
    ctes = [f"action_write AS ({prefix})"] if prefix else []
    ctes.append(
        f"event AS (INSERT INTO audit_events ({', '.join(_EVENT_COLUMNS)}) VALUES ({placeholders}))"  # noqa: S608 (fixed names)
    )
    sql = (
        f"WITH {', '.join(ctes)} UPDATE audit_chain_heads SET seq = ${n + 2}, "  # noqa: S608 (fixed names)
        f"hash = ${n + len(_EVENT_COLUMNS)} WHERE chain = ${n + 1}"
    )
    values = [dumps(event[c]) if c == "details" else event[c] for c in _EVENT_COLUMNS]
    await conn.execute(sql, *params, *values)
