"""Append audit events in the caller's transaction, so an action and its record commit together."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from service.audit.chain import GENESIS, event_hash
from service.db.base import utcnow
from service.db.models import AuditChainHead, AuditEvent
from service.db.pg import dumps
from service.db.sqlite import Codec

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


# The same append on PostgreSQL through the driver (service.db.pg), as a compare-and-swap: one
# statement moves the chain's head from the (seq, hash) the caller read to the new event's, writes
# the event and the action's own row, or does nothing at all when another append got in first
# (the caller reads the head again and retries). No transaction is held open across round trips.

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


def pg_casts(table: Any, columns: tuple[str, ...]) -> list[str]:
    """Each column's type without its length, for parameters in an INSERT ... SELECT (an
    explicit cast to varchar(n) would truncate; the column itself refuses what is too long)."""
    from sqlalchemy.dialects import postgresql

    dialect = postgresql.dialect()
    return [table.c[name].type.compile(dialect=dialect).split("(")[0] for name in columns]


_EVENT_CASTS = pg_casts(AuditEvent.__table__, _EVENT_COLUMNS)


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


_READ_HEAD = "SELECT seq, hash FROM audit_chain_heads WHERE chain = $1"
_READ_HEAD_FOR_UPDATE = _READ_HEAD + " FOR UPDATE"


async def pg_read_head(conn: Any, chain: str, *, lock: bool = False) -> tuple[int, str]:
    """A chain's head (seq, hash), made at genesis when the chain has none yet; `lock` holds
    it for the rest of the caller's transaction."""
    read = _READ_HEAD_FOR_UPDATE if lock else _READ_HEAD
    head = await conn.fetchrow(read, chain)
    if head is None:
        await conn.execute(
            "INSERT INTO audit_chain_heads (chain, seq, hash) VALUES ($1, 0, $2) "
            "ON CONFLICT (chain) DO NOTHING",
            chain,
            GENESIS,
        )
        head = await conn.fetchrow(read, chain)
    return head[0], head[1]


def pg_append_sql(
    first: int,
    *,
    action: str = "",
    more: dict[str, str] | None = None,
    before: str = "",
    guard: str = "",
    result: str = "SELECT count(*) FROM head",
) -> str:
    """The statement of a compare-and-swap append whose event parameters start at $`first`.

    `action` is the action's own data-modifying statement (`more`: further ones, by CTE name);
    each must write only `WHERE EXISTS (SELECT 1 FROM head)`, so that it happens exactly when
    the event does.
    `before` are CTEs ahead of the append, `guard` a further condition for it to happen at all,
    `result` the final SELECT (`head` has a row when the append happened).
    """
    p = pg_params(_EVENT_COLUMNS, _EVENT_CASTS, first)
    ctes = [before] if before else []
    ctes.append(
        f"head AS (UPDATE audit_chain_heads SET seq = {p['seq']}, hash = {p['hash']} "  # noqa: S608
        f"WHERE chain = {p['chain']} AND seq = {p['seq']} - 1 AND hash = {p['prev_hash']} "
        f"{'AND ' + guard if guard else ''} RETURNING 1)"
    )
    if action:
        ctes.append(f"action_write AS ({action})")
    ctes.extend(f"{name} AS ({sql})" for name, sql in (more or {}).items())
    ctes.append(
        f"event AS (INSERT INTO audit_events ({', '.join(_EVENT_COLUMNS)}) "  # noqa: S608
        f"SELECT {', '.join(p.values())} WHERE EXISTS (SELECT 1 FROM head))"
    )
    return f"WITH {', '.join(ctes)} {result}"


def pg_params(names: tuple[str, ...], casts: list[str], first: int) -> dict[str, str]:
    """Each column's typed parameter, `$n::cast`, numbered from $`first`."""
    return {n: f"${first + i}::{c}" for i, (n, c) in enumerate(zip(names, casts, strict=True))}


def pg_event_params(event: dict[str, Any]) -> list[Any]:
    """The event's values in the order `pg_append_sql` numbers them."""
    return [dumps(event[c]) if c == "details" else event[c] for c in _EVENT_COLUMNS]


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

_SQLITE_EVENT = Codec(AuditEvent.__table__, _EVENT_COLUMNS)
_SQLITE_INSERT_EVENT = (
    f"INSERT INTO audit_events ({_SQLITE_EVENT.columns()}) "  # noqa: S608 (fixed names)
    f"VALUES ({_SQLITE_EVENT.placeholders()})"
)


def sqlite_append(conn: sqlite3.Connection, ctx: AuditContext, what: dict[str, Any]) -> None:
    """`record` in the write transaction of `conn`; `what` as `record` takes its keywords."""
    chain = what["chain"]
    head = conn.execute("SELECT seq, hash FROM audit_chain_heads WHERE chain = ?", (chain,))
    found = head.fetchone()
    if found is None:
        conn.execute(
            "INSERT INTO audit_chain_heads (chain, seq, hash) VALUES (?, 0, ?)", (chain, GENESIS)
        )
        found = (0, GENESIS)
    event = next_event(ctx, head=found, **what)
    conn.execute(_SQLITE_INSERT_EVENT, _SQLITE_EVENT.params(event))
    conn.execute(
        "UPDATE audit_chain_heads SET seq = ?, hash = ? WHERE chain = ?",
        (event["seq"], event["hash"], chain),
    )
