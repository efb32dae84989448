"""Append audit events in the caller's transaction, so an action and its record commit together."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from service.audit.chain import GENESIS, event_hash
from service.audit.queries import (
    EVENT_COLUMNS,
    INSERT_EVENT,
    LITE_EVENT,
    LITE_INSERT_EVENT,
    LITE_INSERT_HEAD,
    LITE_READ_HEAD,
    LITE_UPDATE_HEAD,
    PG_INSERT_HEAD,
    PG_READ_HEAD,
    PG_READ_HEAD_FOR_UPDATE,
    ChainHead,
    genesis_head,
    head_for_update,
    move_head,
    pg_append_sql,
)
from service.db.base import utcnow
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
    # Core statements (service.audit.queries): this runs on every state change and exec.
    lock = head_for_update(chain)
    head = (await session.execute(lock)).one_or_none()
    if head is None:
        dialect = session.dialect if isinstance(session, AsyncConnection) else session.bind.dialect
        await session.execute(genesis_head(dialect.name, chain))
        head = (await session.execute(lock)).one()
    event = next_event(
        ctx,
        chain=chain,
        head=ChainHead(head.seq, head.hash),
        action=action,
        target=target,
        outcome=outcome,
        details=details,
    )
    await session.execute(INSERT_EVENT.values(**event))
    await session.execute(move_head(chain, ChainHead(event["seq"], event["hash"])))


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


# The same append on PostgreSQL through the driver (service.db.pg), as a compare-and-swap: one
# statement moves the chain's head from the (seq, hash) the caller read to the new event's, writes
# the event and the action's own row, or does nothing at all when another append got in first
# (the caller reads the head again and retries). No transaction is held open across round trips.


class ChainHeads:
    """The last head (seq, hash) this process saw per chain: a hint for the next append's
    compare-and-swap, which checks it; a wrong or missing one costs a read. Bounded: the
    oldest entries go first.

    `turn(chain)`: this process's appends to one chain one after another, so they never race
    each other's compare-and-swap (with 32 execs of one tenant at once they missed about twice
    per append, each miss a round trip), only another process's. Taken by every
    compare-and-swap append: an exec's records (service.execs.records_pg) and a pool claim
    (service.pool.claim_pg)."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._heads: dict[str, tuple[int, str]] = {}
        self._turns: dict[str, _Turn] = {}

    @contextlib.asynccontextmanager
    async def turn(self, chain: str) -> AsyncIterator[None]:
        turn = self._turns.get(chain)
        if turn is None:
            turn = self._turns[chain] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                yield
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[chain]

    def get(self, chain: str) -> tuple[int, str] | None:
        return self._heads.get(chain)

    def __setitem__(self, chain: str, head: tuple[int, str]) -> None:
        self._heads.pop(chain, None)
        self._heads[chain] = head
        if len(self._heads) > self.size:
            del self._heads[next(iter(self._heads))]

    def pop(self, chain: str, default: None = None) -> tuple[int, str] | None:
        return self._heads.pop(chain, default)


@dataclass
class _Turn:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


# Shared by every PostgreSQL append of this process (exec records, pool claims).
CHAIN_HEADS = ChainHeads()


async def pg_read_head(conn: Any, chain: str, *, lock: bool = False) -> ChainHead:
    """A chain's head, made at genesis when the chain has none yet; `lock` holds it for the
    rest of the caller's transaction."""
    read = PG_READ_HEAD_FOR_UPDATE if lock else PG_READ_HEAD
    head = await conn.fetchrow(read, chain)
    if head is None:
        await conn.execute(PG_INSERT_HEAD, chain, GENESIS)
        head = await conn.fetchrow(read, chain)
    return ChainHead.read(head)


def pg_event_params(event: dict[str, Any]) -> list[Any]:
    """The event's values in the order `pg_append_sql` numbers them."""
    return [dumps(event[c]) if c == "details" else event[c] for c in EVENT_COLUMNS]


async def pg_try_append(
    conn: Any, event: dict[str, Any], *, with_statement: tuple[str, list[Any]] | None = None
) -> bool:
    """Write `event` if its chain's head is still the one it extends; False if it moved.

    `with_statement` is the action's own data-modifying statement (parameters numbered from $1)
    and its parameters, as `action` of `pg_append_sql`.
    """
    action, params = with_statement or ("", [])
    sql = _append_statement(len(params) + 1, action)
    return bool(await conn.fetchval(sql, *params, *pg_event_params(event)))


@functools.lru_cache(maxsize=32)
def _append_statement(first: int, action: str) -> str:
    """`pg_append_sql` built once per statement shape, not on every append."""
    return pg_append_sql(first, action=action)


# The same append on SQLite with fixed SQL (service.db.sqlite.Direct): the writer's transaction
# holds the database's one write lock, so the head read is the head the event extends.


def sqlite_append(conn: sqlite3.Connection, ctx: AuditContext, what: dict[str, Any]) -> None:
    """`record` in the write transaction of `conn`; `what` as `record` takes its keywords."""
    chain = what["chain"]
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    found = cursor.execute(LITE_READ_HEAD, (chain,)).fetchone()
    if found is None:
        conn.execute(LITE_INSERT_HEAD, (chain, GENESIS))
        head = ChainHead(0, GENESIS)
    else:
        head = ChainHead.read(found)
    event = next_event(ctx, head=head, **what)
    conn.execute(LITE_INSERT_EVENT, LITE_EVENT.params(event))
    conn.execute(LITE_UPDATE_HEAD, (event["seq"], event["hash"], chain))
