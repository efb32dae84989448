"""An exec's records on PostgreSQL: fixed SQL sent to asyncpg (service.db.pg), where an exec's
start and finish are each one statement appending to the audit chain by compare-and-swap."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from service.audit.recorder import (
    ChainHeads,
    next_event,
    pg_event_params,
    pg_read_head,
)
from service.db.pg import dumps
from service.execs.queries import (
    CHUNK_COLUMNS,
    PG_APPEND,
    PG_FACTS,
    PG_FACTS_AND_START,
    PG_FINISH,
    PG_INSERT_CHUNK,
    PG_INSERT_SECRET_VALUE,
    PG_REPLAY,
    PG_START,
    SECRET_VALUE_COLUMNS,
)
from service.execs.quotas import QUOTA_RULES
from service.execs.recording import (
    Event,
    ExecEnd,
    ExecRow,
    Limits,
    Lookup,
    RecordTx,
    Replay,
    SandboxFacts,
    rate_oldest,
    rate_second,
)

_JSON_COLUMNS = frozenset({"cmd", "env", "secret_names"})

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
            PG_FACTS, tenant_id, sandbox_id, rate_second(since), only_sandbox
        )
        return None if row is None else self._facts_of(tenant_id, row)

    def _facts_of(self, tenant_id: str, row: Any) -> SandboxFacts:
        """The facts of a `PG_FACTS` row; the chain head that came with it is remembered."""
        if row["head_seq"] is not None:
            self.heads[tenant_id] = (row["head_seq"], row["head_hash"])
        return _sandbox_facts(row)

    async def replay_of(self, tenant_id: str, sandbox_id: str, key: str) -> Replay | None:
        row = await self.conn.fetchrow(PG_REPLAY, tenant_id, sandbox_id, key)
        return None if row is None else Replay(row["id"], row["request_hash"])

    async def _append(self, event: Event, statement: str, params: list[Any]) -> Any:
        """Run `statement` (a `pg_append_sql` whose event parameters follow `params`) until
        its event is appended; returns its result row (`appended`: whether it was)."""
        async with self.heads.turn(event.chain):
            return await self._append_in_turn(event, statement, params)

    async def _append_in_turn(self, event: Event, statement: str, params: list[Any]) -> Any:
        for _ in range(CAS_ATTEMPTS):
            head = self.heads.get(event.chain) or await pg_read_head(self.conn, event.chain)
            values = _event_values(event, head)
            row = await self.conn.fetchrow(statement, *params, *pg_event_params(values))
            if row["appended"]:
                self.heads[event.chain] = (values["seq"], values["hash"])
                return row
            self.heads.pop(event.chain, None)
        async with self.conn.transaction():
            head = await pg_read_head(self.conn, event.chain, lock=True)
            values = _event_values(event, head)
            row = await self.conn.fetchrow(statement, *params, *pg_event_params(values))
        assert row["appended"], "the head moved while locked"
        self.heads[event.chain] = (values["seq"], values["hash"])
        return row

    async def insert_started(self, row: ExecRow, event: Event) -> None:
        params = [*_start_params(row), rate_second(row.created_at)]
        await self._append(event, PG_START, params)

    async def facts_and_start(
        self, facts: Lookup, limits: Limits, row: ExecRow, event: Event
    ) -> tuple[SandboxFacts | None, bool]:
        tenant_id, sandbox_id, only_sandbox, since = facts
        limits = Limits(*limits)
        # In the order PG_FACTS_AND_START numbers them: the lookup's, the exec's timeout and
        # each quota's default, the start's rate bucket, the start row.
        params = [tenant_id, sandbox_id, rate_second(since), only_sandbox, limits.timeout_s]
        params += [getattr(limits, rule.quota) for rule in QUOTA_RULES]
        params += [rate_second(row.created_at), *_start_params(row)]
        async with self.heads.turn(event.chain):
            return await self._start_in_turn(tenant_id, event, params)

    async def _start_in_turn(
        self, tenant_id: str, event: Event, params: list[Any]
    ) -> tuple[SandboxFacts | None, bool]:
        for _ in range(CAS_ATTEMPTS):
            head = self.heads.get(event.chain) or await pg_read_head(self.conn, event.chain)
            row, appended = await self._try_start(event, head, params)
            if row is None or appended or not row["allowed"]:
                return self._started(tenant_id, row, appended)
            # Allowed, but another process's append moved the head: again, with the head
            # this statement read.
            self._facts_of(tenant_id, row)
        async with self.conn.transaction():
            head = await pg_read_head(self.conn, event.chain, lock=True)
            row, appended = await self._try_start(event, head, params)
        assert row is None or appended or not row["allowed"], "the head moved while locked"
        return self._started(tenant_id, row, appended)

    async def _try_start(
        self, event: Event, head: tuple[int, str], params: list[Any]
    ) -> tuple[Any, dict[str, Any] | None]:
        """One run of `PG_FACTS_AND_START` on `head`: its row, and the event if it was
        written."""
        appended = _event_values(event, head)
        row = await self.conn.fetchrow(PG_FACTS_AND_START, *params, *pg_event_params(appended))
        return row, (appended if row is not None and row["appended"] else None)

    def _started(
        self, tenant_id: str, row: Any, appended: dict[str, Any] | None
    ) -> tuple[SandboxFacts | None, bool]:
        if row is None:
            return None, False
        if appended is not None:
            self.heads[tenant_id] = (appended["seq"], appended["hash"])
            return _sandbox_facts(row), True
        return self._facts_of(tenant_id, row), False

    async def finish(self, exec_id: str, end: ExecEnd, event: Event) -> int | None:
        params = [exec_id, *end.values().values()]
        row = await self._append(event, PG_FINISH, params)
        return row["stored_output_bytes"]

    async def append(self, event: Event) -> None:
        await self._append(event, PG_APPEND, [])

    async def insert_chunks(self, rows: list[dict[str, Any]]) -> None:
        async with self.conn.transaction():
            await self.conn.executemany(
                PG_INSERT_CHUNK, [tuple(r[c] for c in CHUNK_COLUMNS) for r in rows]
            )

    def atomic(self, wanted: bool) -> contextlib.AbstractAsyncContextManager[object]:
        # Only an exec bringing new values pays for BEGIN and COMMIT.
        return self.conn.transaction() if wanted else contextlib.nullcontext()

    async def insert_secret_values(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            await self.conn.executemany(
                PG_INSERT_SECRET_VALUE,
                [tuple(r[c] for c in SECRET_VALUE_COLUMNS) for r in rows],
            )


def _sandbox_facts(row: Any) -> SandboxFacts:
    """The facts of a row of `PG_FACTS` (or of a statement built on it)."""
    return SandboxFacts(
        id=row["id"],
        state=row["state"],
        runtime_id=row["runtime_id"],
        failure_reason=row["failure_reason"],
        env=row["env"],
        network=row["network"],
        quotas=row["quotas"],
        recent_execs=row["recent"],
        oldest_recent=rate_oldest(row["oldest"]),
        running_execs=row["running"],
    )


def _start_params(row: ExecRow) -> list[Any]:
    """The start row's values in the order of START_COLUMNS, JSON ones encoded."""
    return [dumps(v) if c in _JSON_COLUMNS else v for c, v in row.values().items()]


def _event_values(event: Event, head: tuple[int, str]) -> dict[str, Any]:
    return next_event(event.ctx, head=head, **event.what())
