"""An exec's records on PostgreSQL: fixed SQL sent to asyncpg (service.db.pg), where an exec's
start and finish are each one statement appending to the audit chain by compare-and-swap."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from service.audit.recorder import (
    ChainHeads,
    next_event,
    pg_append_sql,
    pg_casts,
    pg_event_params,
    pg_params,
    pg_read_head,
)
from service.db.models import Exec as ExecRow
from service.db.pg import dumps
from service.execs.recording import (
    FINISH_COLUMNS,
    START_COLUMNS,
    Event,
    RecordTx,
    SandboxFacts,
    rate_oldest,
    rate_second,
)

# Each write is one atomic statement that appends its audit event by compare-and-swap
# (service.audit.recorder.pg_try_append).

# The head of the tenant's chain comes along, unlocked: the start's event extends it next.
_FACTS = """
SELECT s.id, s.state, s.runtime_id, s.failure_reason, s.env, s.network, t.quotas,
  r.recent, r.oldest, n.running, h.seq, h.hash
FROM sandboxes s JOIN tenants t ON t.id = s.tenant_id
CROSS JOIN LATERAL (
  SELECT coalesce(sum(b.starts), 0) AS recent, min(b.second) AS oldest FROM exec_start_buckets b
  WHERE b.tenant_id = $1 AND b.second >= $3
) r
CROSS JOIN LATERAL (
  SELECT count(*) AS running FROM execs e WHERE e.tenant_id = $1 AND e.state = 'running'
) n
LEFT JOIN audit_chain_heads h ON h.chain = s.tenant_id
WHERE s.tenant_id = $1 AND s.id = $2 AND ($4::varchar IS NULL OR s.id = $4)
"""

_REPLAY = """
SELECT id, request_hash FROM execs
WHERE tenant_id = $1 AND sandbox_id = $2 AND idempotency_key = $3
"""

_JSON_COLUMNS = frozenset({"cmd", "env", "secret_names"})
_QUOTED_START = ", ".join(f'"{c}"' for c in START_COLUMNS)  # "user" is a keyword
_START_CASTS = pg_casts(ExecRow.__table__, START_COLUMNS)


def _insert_start(first: int) -> str:
    """The start row's insert, its parameters from $`first`, made when the event is."""
    params = ", ".join(pg_params(START_COLUMNS, _START_CASTS, first).values())
    return (
        f"INSERT INTO execs ({_QUOTED_START}) "  # noqa: S608 (fixed names)
        f"SELECT {params} WHERE EXISTS (SELECT 1 FROM head)"
    )


_INSERT_START = _insert_start(1)


def _count_start(tenant: str, second: str) -> str:
    """The start counted into its tenant's bucket of `second` (recording.rate_second), when
    the start is written."""
    return (
        "INSERT INTO exec_start_buckets AS b (tenant_id, second, starts) "  # noqa: S608 (fixed)
        f"SELECT {tenant}, {second}::bigint, 1 WHERE EXISTS (SELECT 1 FROM head) "
        "ON CONFLICT (tenant_id, second) DO UPDATE SET starts = b.starts + 1"
    )


# With the chain's head known from an earlier append, the facts, the checks and the start row
# go in one statement: $1-$4 as in _FACTS, $5 the default rate, $6 the exec's timeout, $7 the
# default maximum timeout, $8 the default cap on running execs, $9 the start's rate bucket.
# When a check fails nothing is written and the caller checks the facts returned, which raises
# the refusal. When the head moved nothing is written either: the checks counted rows as of a
# head that is no longer the last, so the statement runs again with the head it read (and then
# with the head locked), never an insert without them. Every start of a tenant moves its head,
# so two starts racing for the last place cannot both be written.
_FACTS_AND_START = pg_append_sql(
    10 + len(START_COLUMNS),
    before=f"""facts AS ({_FACTS}), allowed AS (
      SELECT 1 FROM facts WHERE facts.state = 'running' AND facts.runtime_id IS NOT NULL
        AND facts.recent < coalesce((facts.quotas->>'execs_per_minute')::bigint, $5)
        AND $6::float8 <= coalesce((facts.quotas->>'max_exec_timeout_s')::float8, $7)
        AND facts.running < coalesce((facts.quotas->>'max_running_execs')::bigint, $8))""",  # noqa: S608
    guard="EXISTS (SELECT 1 FROM allowed)",
    action=_insert_start(10),
    more={"rate_write": _count_start("$1", "$9")},
    result="SELECT facts.*, (SELECT count(*) FROM head), (SELECT count(*) FROM allowed) FROM facts",
)

_UPDATE_FINISH = (
    "UPDATE execs SET "  # noqa: S608 (fixed names)
    + ", ".join(f"{c} = ${i + 2}" for i, c in enumerate(FINISH_COLUMNS))
    + " WHERE id = $1 AND state = 'running' AND EXISTS (SELECT 1 FROM head)"
    + " RETURNING tenant_id, stored_bytes"
)
# The exec's stored output is counted into its tenant's in the finish's own statement (and
# only when it stored some: an exec that printed nothing does not touch the usage row).
_COUNT_FINISH = (
    "INSERT INTO tenant_usage AS u (tenant_id, stored_output_bytes) "
    "SELECT tenant_id, stored_bytes FROM action_write WHERE stored_bytes > 0 "
    "ON CONFLICT (tenant_id) DO UPDATE "
    "SET stored_output_bytes = u.stored_output_bytes + excluded.stored_output_bytes "
    "RETURNING stored_output_bytes"
)
_FINISH = pg_append_sql(
    len(FINISH_COLUMNS) + 2,
    action=_UPDATE_FINISH,
    more={"usage_write": _COUNT_FINISH},
    result="SELECT (SELECT count(*) FROM head), (SELECT stored_output_bytes FROM usage_write)",
)
_START = pg_append_sql(
    len(START_COLUMNS) + 2,
    action=_INSERT_START,
    more={
        "rate_write": _count_start(
            pg_params(START_COLUMNS, _START_CASTS, 1)["tenant_id"], f"${len(START_COLUMNS) + 1}"
        )
    },
)

# Appends that lost the race this many times in a row take the head's lock instead.
CAS_ATTEMPTS = 4


class PgTx(RecordTx):
    decides_start = True

    def __init__(self, conn: Any, heads: ChainHeads) -> None:
        self.conn = conn
        # The last head this process saw per chain: right unless another writer appended
        # since, and then the swap fails and the head is read again.
        self.heads = heads

    async def facts(
        self, tenant_id: str, sandbox_id: str, only_sandbox: str | None, since: datetime
    ) -> SandboxFacts | None:
        row = await self.conn.fetchrow(
            _FACTS, tenant_id, sandbox_id, rate_second(since), only_sandbox
        )
        return None if row is None else self._facts_of(tenant_id, row)

    def _facts_of(self, tenant_id: str, row: Any) -> SandboxFacts:
        """The facts of a `_FACTS` row; the chain head that came with it is remembered."""
        if row[10] is not None:
            self.heads[tenant_id] = (row[10], row[11])
        return _sandbox_facts(row)

    async def replay_of(
        self, tenant_id: str, sandbox_id: str, key: str
    ) -> tuple[str, str | None] | None:
        row = await self.conn.fetchrow(_REPLAY, tenant_id, sandbox_id, key)
        return None if row is None else (row[0], row[1])

    async def _append(self, event: Event, statement: str, params: list[Any]) -> Any:
        """Run `statement` (a `pg_append_sql` whose event parameters follow `params`) until
        its event is appended; returns its result row (the first column: appended or not)."""
        async with self.heads.turn(event.chain):
            return await self._append_in_turn(event, statement, params)

    async def _append_in_turn(self, event: Event, statement: str, params: list[Any]) -> Any:
        for _ in range(CAS_ATTEMPTS):
            head = self.heads.get(event.chain) or await pg_read_head(self.conn, event.chain)
            values = _event_values(event, head)
            row = await self.conn.fetchrow(statement, *params, *pg_event_params(values))
            if row[0]:
                self.heads[event.chain] = (values["seq"], values["hash"])
                return row
            self.heads.pop(event.chain, None)
        async with self.conn.transaction():
            head = await pg_read_head(self.conn, event.chain, lock=True)
            values = _event_values(event, head)
            row = await self.conn.fetchrow(statement, *params, *pg_event_params(values))
        assert row[0], "the head moved while locked"
        self.heads[event.chain] = (values["seq"], values["hash"])
        return row

    async def insert_started(self, values: dict[str, Any], event: Event) -> None:
        params = [*_start_params(values), rate_second(values["created_at"])]
        await self._append(event, _START, params)

    async def facts_and_start(
        self,
        facts: tuple[str, str, str | None, datetime],
        limits: tuple[float, int, float, int],
        values: dict[str, Any],
        event: Event,
    ) -> tuple[SandboxFacts | None, bool]:
        tenant_id, sandbox_id, only_sandbox, since = facts
        params = [tenant_id, sandbox_id, rate_second(since), only_sandbox, limits[1], limits[0]]
        params += [*limits[2:], rate_second(values["created_at"]), *_start_params(values)]
        async with self.heads.turn(event.chain):
            return await self._start_in_turn(tenant_id, event, params)

    async def _start_in_turn(
        self, tenant_id: str, event: Event, params: list[Any]
    ) -> tuple[SandboxFacts | None, bool]:
        for _ in range(CAS_ATTEMPTS):
            head = self.heads.get(event.chain) or await pg_read_head(self.conn, event.chain)
            row, appended = await self._try_start(event, head, params)
            if row is None or appended or not row[13]:
                return self._started(tenant_id, row, appended)
            # Allowed, but another process's append moved the head: again, with the head
            # this statement read.
            self._facts_of(tenant_id, row)
        async with self.conn.transaction():
            head = await pg_read_head(self.conn, event.chain, lock=True)
            row, appended = await self._try_start(event, head, params)
        assert row is None or appended or not row[13], "the head moved while locked"
        return self._started(tenant_id, row, appended)

    async def _try_start(
        self, event: Event, head: tuple[int, str], params: list[Any]
    ) -> tuple[Any, dict[str, Any] | None]:
        """One run of `_FACTS_AND_START` on `head`: its row, and the event if it was written."""
        appended = _event_values(event, head)
        row = await self.conn.fetchrow(_FACTS_AND_START, *params, *pg_event_params(appended))
        return row, (appended if row is not None and row[12] else None)

    def _started(
        self, tenant_id: str, row: Any, appended: dict[str, Any] | None
    ) -> tuple[SandboxFacts | None, bool]:
        if row is None:
            return None, False
        if appended is not None:
            self.heads[tenant_id] = (appended["seq"], appended["hash"])
            return _sandbox_facts(row), True
        return self._facts_of(tenant_id, row), False

    async def finish(self, exec_id: str, values: dict[str, Any], event: Event) -> int | None:
        params = [exec_id, *(values[c] for c in FINISH_COLUMNS)]
        row = await self._append(event, _FINISH, params)
        return row[1]

    async def insert_chunks(self, rows: list[dict[str, Any]]) -> None:
        async with self.conn.transaction():
            await self.conn.executemany(
                "INSERT INTO exec_chunks (exec_id, seq, stream, data) VALUES ($1, $2, $3, $4)",
                [(r["exec_id"], r["seq"], r["stream"], r["data"]) for r in rows],
            )

    def atomic(self, wanted: bool) -> contextlib.AbstractAsyncContextManager[object]:
        # Only an exec bringing new values pays for BEGIN and COMMIT.
        return self.conn.transaction() if wanted else contextlib.nullcontext()

    async def insert_secret_values(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            await self.conn.executemany(_INSERT_SECRET_VALUE, [_secret_params(r) for r in rows])


_SECRET_VALUE_COLUMNS = ("tenant_id", "sandbox_id", "key_id", "nonce", "ciphertext", "created_at")
_INSERT_SECRET_VALUE = (
    f"INSERT INTO sandbox_secret_values ({', '.join(_SECRET_VALUE_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join(f'${i + 1}' for i in range(len(_SECRET_VALUE_COLUMNS)))})"
)


def _secret_params(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[c] for c in _SECRET_VALUE_COLUMNS)


def _sandbox_facts(row: Any) -> SandboxFacts:
    """The facts of a row of `_FACTS` (or of a statement built on it)."""
    return SandboxFacts(*row[:8], rate_oldest(row[8]), row[9])


def _start_params(values: dict[str, Any]) -> list[Any]:
    return [dumps(values[c]) if c in _JSON_COLUMNS else values[c] for c in START_COLUMNS]


def _event_values(event: Event, head: tuple[int, str]) -> dict[str, Any]:
    return next_event(event.ctx, head=head, **event.what())
