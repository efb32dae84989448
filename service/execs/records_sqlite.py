"""An exec's records on SQLite: fixed SQL on the database's writer connection
(service.db.sqlite.Direct), in one transaction per unit that holds the one write lock, so the
checks and the writes after them see no other writer in between."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from service.audit.recorder import sqlite_append
from service.db.models import Exec as ExecTable
from service.db.models import ExecChunk, SandboxSecretValue, Tenant
from service.db.models import Sandbox as SandboxTable
from service.db.sqlite import Codec
from service.execs.queries import (
    CHUNK_COLUMNS,
    LITE_COUNT_FINISH,
    LITE_COUNT_START,
    LITE_FACTS,
    LITE_INSERT_CHUNK,
    LITE_INSERT_SECRET_VALUE,
    LITE_INSERT_START,
    LITE_REPLAY,
    LITE_UPDATE_FINISH,
    SECRET_VALUE_COLUMNS,
)
from service.execs.recording import (
    FINISH_COLUMNS,
    START_COLUMNS,
    Event,
    ExecEnd,
    ExecRow,
    RecordTx,
    Replay,
    SandboxFacts,
    rate_oldest,
    rate_second,
)

# Values in and out of SQLite as SQLAlchemy's types write and read them, in the order the
# statements of service.execs.queries take them.
_SANDBOX = Codec(SandboxTable.__table__, ("env", "network"))
_TENANT = Codec(Tenant.__table__, ("quotas",))
_START = Codec(ExecTable.__table__, START_COLUMNS)
_FINISH = Codec(ExecTable.__table__, FINISH_COLUMNS)
_CHUNK = Codec(ExecChunk.__table__, CHUNK_COLUMNS)
_SECRET_VALUE = Codec(SandboxSecretValue.__table__, SECRET_VALUE_COLUMNS)


def _one(conn: sqlite3.Connection, sql: str, params: Any) -> sqlite3.Row | None:
    """The first row of `sql`, read by column name."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    row: sqlite3.Row | None = cursor.execute(sql, params).fetchone()
    return row


class LiteTx(RecordTx):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def facts(
        self, tenant_id: str, sandbox_id: str, only_sandbox: str | None, since: datetime
    ) -> SandboxFacts | None:
        first = rate_second(since)
        row = _one(
            self.conn,
            LITE_FACTS,
            {"tenant": tenant_id, "sandbox": sandbox_id, "only": only_sandbox, "since": first},
        )
        if row is None:
            return None
        env, network = _SANDBOX.row((row["env"], row["network"]))
        (quotas,) = _TENANT.row((row["quotas"],))
        return SandboxFacts(
            id=row["id"],
            state=row["state"],
            runtime_id=row["runtime_id"],
            failure_reason=row["failure_reason"],
            env=env,
            network=network,
            quotas=quotas,
            recent_execs=row["recent"],
            oldest_recent=rate_oldest(row["oldest"]),
            running_execs=row["running"],
        )

    async def replay_of(self, tenant_id: str, sandbox_id: str, key: str) -> Replay | None:
        row = _one(self.conn, LITE_REPLAY, (tenant_id, sandbox_id, key))
        return None if row is None else Replay(row["id"], row["request_hash"])

    async def insert_started(self, row: ExecRow, event: Event) -> None:
        self.conn.execute(LITE_INSERT_START, _START.params(row.values()))
        bucket = rate_second(row.created_at)
        self.conn.execute(LITE_COUNT_START, (row.tenant_id, bucket))
        sqlite_append(self.conn, event.ctx, event.what())

    async def finish(self, exec_id: str, end: ExecEnd, event: Event) -> int | None:
        ended = self.conn.execute(LITE_UPDATE_FINISH, [*_FINISH.params(end.values()), exec_id])
        sqlite_append(self.conn, event.ctx, event.what())
        added = end.stored_bytes
        if not ended.rowcount or not added:
            return None
        usage = _one(self.conn, LITE_COUNT_FINISH, (event.chain, added))
        assert usage is not None  # an upsert's RETURNING always has its row
        return int(usage["stored_output_bytes"])

    async def append(self, event: Event) -> None:
        sqlite_append(self.conn, event.ctx, event.what())

    async def insert_chunks(self, rows: list[dict[str, Any]]) -> None:
        self.conn.executemany(LITE_INSERT_CHUNK, [_CHUNK.params(r) for r in rows])

    async def insert_secret_values(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.conn.executemany(LITE_INSERT_SECRET_VALUE, [_SECRET_VALUE.params(r) for r in rows])
