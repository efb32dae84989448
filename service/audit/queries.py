"""Every statement that appends to an audit chain, by name (service.audit.recorder): the Core
ones of an append in the caller's session, `PG_*` sent to asyncpg (parameters `$n`) and the
compare-and-swap append they are built into, `LITE_*` run on the SQLite writer connection
(parameters `?`). Each result column has a name, and rows are read by it into a `ChainHead`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import Insert, Select, Update, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from service.audit.chain import GENESIS
from service.db.models import AuditChainHead, AuditEvent
from service.db.sqlite import Codec


class ChainHead(NamedTuple):
    """A chain's last event: its sequence number and hash."""

    seq: int
    hash: str

    @classmethod
    def read(cls, row: Any) -> ChainHead:
        """From a driver row's `seq` and `hash` (an asyncpg record or a sqlite3.Row)."""
        return cls(row["seq"], row["hash"])


# The columns of an event's row, in the order every form writes them.
EVENT_COLUMNS = (
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


# ---- Core, in the caller's session


def head_for_update(chain: str) -> Select[Any]:
    """The chain's head (`seq`, `hash`), locked for the rest of the transaction: appends to one
    chain are serialised, and two writers can never both extend the same link."""
    return (
        select(AuditChainHead.seq, AuditChainHead.hash)
        .where(AuditChainHead.chain == chain)
        .with_for_update()
    )


def genesis_head(dialect: str, chain: str) -> Insert:
    """The chain's head at genesis, unless another writer made it first."""
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    return (
        insert(AuditChainHead)
        .values(chain=chain, seq=0, hash=GENESIS)
        .on_conflict_do_nothing(index_elements=["chain"])
    )


# An event's row, EVENT_COLUMNS by name.
INSERT_EVENT: Insert = AuditEvent.__table__.insert()


def move_head(chain: str, head: ChainHead) -> Update:
    """The chain's head moved to the event just written."""
    return (
        update(AuditChainHead)
        .where(AuditChainHead.chain == chain)
        .values(seq=head.seq, hash=head.hash)
    )


# ---- PostgreSQL


def pg_casts(table: Any, columns: tuple[str, ...]) -> list[str]:
    """Each column's type without its length, for parameters in an INSERT ... SELECT (an
    explicit cast to varchar(n) would truncate; the column itself refuses what is too long)."""
    dialect = postgresql.dialect()
    return [table.c[name].type.compile(dialect=dialect).split("(")[0] for name in columns]


def pg_params(names: tuple[str, ...], casts: list[str], first: int) -> dict[str, str]:
    """Each column's typed parameter, `$n::cast`, numbered from $`first`."""
    return {n: f"${first + i}::{c}" for i, (n, c) in enumerate(zip(names, casts, strict=True))}


_EVENT_CASTS = pg_casts(AuditEvent.__table__, EVENT_COLUMNS)

# A chain's head (`seq`, `hash`): $1 the chain; the second holds it for the rest of the
# caller's transaction.
PG_READ_HEAD = "SELECT seq, hash FROM audit_chain_heads WHERE chain = $1"
PG_READ_HEAD_FOR_UPDATE = PG_READ_HEAD + " FOR UPDATE"

# A chain's head at genesis, unless it has one: $1 the chain, $2 the genesis hash.
PG_INSERT_HEAD = (
    "INSERT INTO audit_chain_heads (chain, seq, hash) VALUES ($1, 0, $2) "
    "ON CONFLICT (chain) DO NOTHING"
)


def pg_append_sql(
    first: int,
    *,
    action: str = "",
    more: dict[str, str] | None = None,
    before: str = "",
    guard: str = "",
    result: str = "SELECT count(*) FROM head",
) -> str:
    """The statement of a compare-and-swap append whose event parameters (EVENT_COLUMNS in
    order) start at $`first`: it moves the chain's head from the (seq, hash) the caller read to
    the new event's, writes the event and the action's own rows, or does nothing at all when
    another append got in first.

    `action` is the action's own data-modifying statement (`more`: further ones, by CTE name);
    each must write only `WHERE EXISTS (SELECT 1 FROM head)`, so that it happens exactly when
    the event does.
    `before` are CTEs ahead of the append, `guard` a further condition for it to happen at all,
    `result` the final SELECT (`head` has a row when the append happened).
    """
    p = pg_params(EVENT_COLUMNS, _EVENT_CASTS, first)
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
        f"event AS (INSERT INTO audit_events ({', '.join(EVENT_COLUMNS)}) "  # noqa: S608
        f"SELECT {', '.join(p.values())} WHERE EXISTS (SELECT 1 FROM head))"
    )
    return f"WITH {', '.join(ctes)} {result}"


# ---- SQLite

LITE_EVENT = Codec(AuditEvent.__table__, EVENT_COLUMNS)

# A chain's head (`seq`, `hash`): the chain.
LITE_READ_HEAD = "SELECT seq, hash FROM audit_chain_heads WHERE chain = ?"

# A chain's head at genesis: the chain, the genesis hash.
LITE_INSERT_HEAD = "INSERT INTO audit_chain_heads (chain, seq, hash) VALUES (?, 0, ?)"

# An event's row, EVENT_COLUMNS in order.
LITE_INSERT_EVENT = (
    f"INSERT INTO audit_events ({LITE_EVENT.columns()}) "  # noqa: S608 (fixed names)
    f"VALUES ({LITE_EVENT.placeholders()})"
)

# A chain's head moved to the event just written: its seq, its hash, the chain.
LITE_UPDATE_HEAD = "UPDATE audit_chain_heads SET seq = ?, hash = ? WHERE chain = ?"
