"""An exec's records on SQLite: fixed SQL on the database's writer connection
(service.db.sqlite.Direct), in one transaction per unit that holds the one write lock, so the
checks and the writes after them see no other writer in between."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from service.audit.recorder import sqlite_append
from service.db.models import Exec as ExecRow
from service.db.models import ExecChunk, SandboxSecretValue, Tenant
from service.db.models import Sandbox as SandboxRow
from service.db.sqlite import Codec
from service.execs.recording import (
    FINISH_COLUMNS,
    START_COLUMNS,
    Event,
    RecordTx,
    SandboxFacts,
    rate_oldest,
    rate_second,
)

_SANDBOX = Codec(SandboxRow.__table__, ("env", "network"))
_TENANT = Codec(Tenant.__table__, ("quotas",))

_FACTS = """
SELECT s.id, s.state, s.runtime_id, s.failure_reason, s.env, s.network, t.quotas,
  (SELECT coalesce(sum(b.starts), 0) FROM exec_start_buckets b
    WHERE b.tenant_id = :tenant AND b.second >= :since),
  (SELECT min(b.second) FROM exec_start_buckets b
    WHERE b.tenant_id = :tenant AND b.second >= :since),
  (SELECT count(*) FROM execs e WHERE e.tenant_id = :tenant AND e.state = 'running')
FROM sandboxes s JOIN tenants t ON t.id = s.tenant_id
WHERE s.tenant_id = :tenant AND s.id = :sandbox AND (:only IS NULL OR s.id = :only)
"""

_REPLAY = """
SELECT id, request_hash FROM execs
WHERE tenant_id = ? AND sandbox_id = ? AND idempotency_key = ?
"""

_START = Codec(ExecRow.__table__, START_COLUMNS)
_INSERT_START = f"INSERT INTO execs ({_START.columns()}) VALUES ({_START.placeholders()})"  # noqa: S608
_COUNT_START = """
INSERT INTO exec_start_buckets (tenant_id, second, starts) VALUES (?, ?, 1)
ON CONFLICT (tenant_id, second) DO UPDATE SET starts = starts + 1
"""

_FINISH = Codec(ExecRow.__table__, FINISH_COLUMNS)
_UPDATE_FINISH = (
    "UPDATE execs SET "  # noqa: S608 (fixed names)
    + ", ".join(f'"{c}" = ?' for c in _FINISH.names)
    + " WHERE id = ? AND state = 'running'"
)
# The exec's stored output counted into its tenant's, in the finish's transaction.
_COUNT_FINISH = """
INSERT INTO tenant_usage (tenant_id, stored_output_bytes) VALUES (?, ?)
ON CONFLICT (tenant_id) DO UPDATE
SET stored_output_bytes = stored_output_bytes + excluded.stored_output_bytes
RETURNING stored_output_bytes
"""

_CHUNK = Codec(ExecChunk.__table__, ("exec_id", "seq", "stream", "data"))
_INSERT_CHUNK = f"INSERT INTO exec_chunks ({_CHUNK.columns()}) VALUES ({_CHUNK.placeholders()})"  # noqa: S608
_SECRET_VALUE = Codec(
    SandboxSecretValue.__table__,
    ("tenant_id", "sandbox_id", "key_id", "nonce", "ciphertext", "created_at"),
)
_INSERT_SECRET_VALUE = (
    f"INSERT INTO sandbox_secret_values ({_SECRET_VALUE.columns()}) "  # noqa: S608
    f"VALUES ({_SECRET_VALUE.placeholders()})"
)


class LiteTx(RecordTx):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def facts(
        self, tenant_id: str, sandbox_id: str, only_sandbox: str | None, since: datetime
    ) -> SandboxFacts | None:
        first = rate_second(since)
        row = self.conn.execute(
            _FACTS,
            {"tenant": tenant_id, "sandbox": sandbox_id, "only": only_sandbox, "since": first},
        ).fetchone()
        if row is None:
            return None
        env, network = _SANDBOX.row(row[4:6])
        (quotas,) = _TENANT.row(row[6:7])
        return SandboxFacts(*row[:4], env, network, quotas, row[7], rate_oldest(row[8]), row[9])

    async def replay_of(
        self, tenant_id: str, sandbox_id: str, key: str
    ) -> tuple[str, str | None] | None:
        row = self.conn.execute(_REPLAY, (tenant_id, sandbox_id, key)).fetchone()
        return None if row is None else (row[0], row[1])

    async def insert_started(self, values: dict[str, Any], event: Event) -> None:
        self.conn.execute(_INSERT_START, _START.params(values))
        self.conn.execute(_COUNT_START, (values["tenant_id"], rate_second(values["created_at"])))
        sqlite_append(self.conn, event.ctx, event.what())

    async def finish(self, exec_id: str, values: dict[str, Any], event: Event) -> int | None:
        ended = self.conn.execute(_UPDATE_FINISH, [*_FINISH.params(values), exec_id])
        sqlite_append(self.conn, event.ctx, event.what())
        added = values["stored_bytes"]
        if not ended.rowcount or not added:
            return None
        return self.conn.execute(_COUNT_FINISH, (event.chain, added)).fetchone()[0]

    async def insert_chunks(self, rows: list[dict[str, Any]]) -> None:
        self.conn.executemany(_INSERT_CHUNK, [_CHUNK.params(r) for r in rows])

    async def insert_secret_values(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.conn.executemany(_INSERT_SECRET_VALUE, [_SECRET_VALUE.params(r) for r in rows])
