"""The exec record's hot path (service.execs.records) on the database under test: on PostgreSQL
the fixed SQL sent to the driver, on SQLite the Core statements. Both must write the same rows
and extend the tenant's audit chain so that it verifies."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, ChainHeads, record
from service.db import models
from service.db.pg import driver_connection
from service.db.session import make_engine
from service.execs.records import Event, ExecEnd, ExecRecords, ExecRow
from service.ids import new_id
from service.jobs.retention import purge_once
from tests.conftest import Api, SandboxRecorder, Tenant, database_kind

CTX = AuditContext(actor="key_test", request_id="req-1", client="127.0.0.1")


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


def start_values(tenant_id: str, sandbox_id: str, key: str | None = None) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "id": new_id("exe"),
        "tenant_id": tenant_id,
        "sandbox_id": sandbox_id,
        "state": "running",
        "cmd": ["echo", "***"],
        "cwd": "/work",
        "user": None,
        "env": {"A": "1"},
        "secret_names": ["TOKEN"],
        "timeout_s": 5.0,
        "has_stdin": False,
        "tty": False,
        "stdout_bytes": 0,
        "stderr_bytes": 0,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "idempotency_key": key,
        "request_hash": "h1",
        "created_at": now,
        "started_at": now,
        "runtime_exec_id": None,
    }


def finish_values(**overrides: Any) -> dict[str, Any]:
    return {
        "state": "finished",
        "finished_at": datetime.now(UTC),
        "duration_ms": 12,
        "error": None,
        "exit_code": 3,
        "outcome": "exited",
        "stdout_bytes": 5,
        "stderr_bytes": 0,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "stored_bytes": 0,
        **overrides,
    }


def event(tenant_id: str, action: str, target: str) -> Event:
    return Event(CTX, chain=tenant_id, action=action, target=target, outcome="ok", details={})


async def verified(api: Api, tenant_id: str) -> dict[str, Any]:
    r = await api.client.get(
        "/v1/audit/verify", params={"tenant_id": tenant_id}, headers=api.operator
    )
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.sqlite
async def test_start_chunks_finish_write_rows_and_a_chain_that_verifies(
    api: Api,
    tenant: Tenant,
    sandbox_record: SandboxRecorder,
    engine: AsyncEngine,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    sandbox_id = await sandbox_record(tenant)
    records = ExecRecords(engine, ChainHeads())
    values = {**start_values(tenant.id, sandbox_id), "runtime_exec_id": "exec-0123"}
    async with records.unit() as tx:
        facts = await tx.facts(tenant.id, sandbox_id, None, datetime.now(UTC) - timedelta(60))
        assert facts is not None
        assert (facts.id, facts.state, facts.recent_execs) == (sandbox_id, "stopped", 0)
        assert isinstance(facts.quotas, dict) and facts.network == {"mode": "none"}
        await tx.insert_started(ExecRow(**values), event(tenant.id, "exec.start", values["id"]))
    async with records.unit() as tx:
        await tx.insert_chunks(
            [
                {"exec_id": values["id"], "seq": 1, "stream": "stdout", "data": b"hel"},
                {"exec_id": values["id"], "seq": 2, "stream": "stdout", "data": b"lo"},
            ]
        )
    async with records.unit() as tx:
        await tx.finish(
            values["id"], ExecEnd(**finish_values()), event(tenant.id, "exec.finish", "x")
        )
    # A second finish (a late kill, a reconciler) leaves the finished record as it was.
    async with records.unit() as tx:
        await tx.finish(
            values["id"],
            ExecEnd(**finish_values(state="interrupted", exit_code=None, outcome=None)),
            event(tenant.id, "exec.finish", "y"),
        )

    async with sessionmaker() as session:
        row = await session.get(models.Exec, values["id"])
        assert row is not None
        assert (row.state, row.exit_code, row.outcome) == ("finished", 3, "exited")
        assert (row.cmd, row.env, row.secret_names) == (["echo", "***"], {"A": "1"}, ["TOKEN"])
        assert row.runtime_exec_id == "exec-0123"
        assert row.created_at == values["created_at"]
        chunks = (
            await session.scalars(
                select(models.ExecChunk.data)
                .where(models.ExecChunk.exec_id == values["id"])
                .order_by(models.ExecChunk.seq)
            )
        ).all()
        assert b"".join(chunks) == b"hello"
        events = (
            await session.scalars(
                select(models.AuditEvent)
                .where(models.AuditEvent.chain == tenant.id)
                .order_by(models.AuditEvent.seq)
            )
        ).all()
    assert [e.action for e in events][-3:] == ["exec.start", "exec.finish", "exec.finish"]
    assert events[-3].target == values["id"] and events[-3].request_id == "req-1"
    result = await verified(api, tenant.id)
    assert result["valid"] is True, result
    assert result["events_checked"] == len(events)

    async with records.unit() as tx:
        facts = await tx.facts(tenant.id, sandbox_id, None, datetime.now(UTC) - timedelta(60))
    assert facts is not None and facts.recent_execs == 1
    # Counted by its second: the latest it can have started is the end of that second.
    second = math.floor(values["created_at"].timestamp())
    assert facts.oldest_recent == datetime.fromtimestamp(second + 1, UTC)


@pytest.mark.sqlite
async def test_a_start_counts_against_the_rate_for_a_whole_minute_and_no_longer(
    tenant: Tenant,
    sandbox_record: SandboxRecorder,
    engine: AsyncEngine,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    """`execs_per_minute` sums per-second counts written with each start: a start stays counted
    for at least 60 s (never less than a minute, at most one second more), the sum is over the
    window whatever the tenant ran before it, and the retention pass drops what no check sums."""
    sandbox_id = await sandbox_record(tenant)
    records = ExecRecords(engine, ChainHeads())
    now = datetime.now(UTC).replace(microsecond=500_000)
    for ago in (200, 30, 0, 0):
        values = {**start_values(tenant.id, sandbox_id), "created_at": now - timedelta(0, ago)}
        async with records.unit() as tx:
            await tx.insert_started(ExecRow(**values), event(tenant.id, "exec.start", values["id"]))

    async def counted(at: datetime) -> tuple[int, datetime | None]:
        async with records.unit() as tx:
            facts = await tx.facts(tenant.id, sandbox_id, None, at - timedelta(0, 60))
        assert facts is not None
        return facts.recent_execs, facts.oldest_recent

    earlier = now - timedelta(0, 30)
    assert await counted(now) == (3, earlier.replace(microsecond=0) + timedelta(0, 1))
    # 60.5 s after the earlier start (the end of its second, plus a minute) it still counts;
    # a second later it does not, and the next one to go is the pair of `now`.
    assert (await counted(earlier + timedelta(0, 60.49)))[0] == 3
    gone = await counted(earlier + timedelta(0, 60.51))
    assert gone == (2, now.replace(microsecond=0) + timedelta(0, 1))
    assert (await counted(now + timedelta(0, 61)))[0] == 0
    # The start of 200 s ago is in no window a check makes now; the retention pass drops it.
    async with sessionmaker() as session, session.begin():
        await purge_once(session)
    async with sessionmaker() as session:
        seconds = await session.scalars(
            select(models.ExecStartBucket.second)
            .where(models.ExecStartBucket.tenant_id == tenant.id)
            .order_by(models.ExecStartBucket.second)
        )
        starts = await session.scalars(
            select(models.ExecStartBucket.starts)
            .where(models.ExecStartBucket.tenant_id == tenant.id)
            .order_by(models.ExecStartBucket.second)
        )
        assert list(seconds) == [math.floor(earlier.timestamp()), math.floor(now.timestamp())]
        assert list(starts) == [1, 2]


@pytest.mark.sqlite
async def test_facts_are_scoped_to_the_tenant_and_the_bound_sandbox(
    api: Api, tenant: Tenant, sandbox_record: SandboxRecorder, engine: AsyncEngine
) -> None:
    other = await api.tenant()
    sandbox_id = await sandbox_record(tenant)
    since = datetime.now(UTC) - timedelta(60)
    async with ExecRecords(engine, ChainHeads()).unit() as tx:
        assert await tx.facts(other.id, sandbox_id, None, since) is None
        assert await tx.facts(tenant.id, sandbox_id, "sbx_another", since) is None
        assert await tx.facts(tenant.id, sandbox_id, sandbox_id, since) is not None


@pytest.mark.sqlite
async def test_an_idempotency_key_replays_and_cannot_be_inserted_twice(
    tenant: Tenant, sandbox_record: SandboxRecorder, engine: AsyncEngine
) -> None:
    sandbox_id = await sandbox_record(tenant)
    records = ExecRecords(engine, ChainHeads())
    first = start_values(tenant.id, sandbox_id, key="k-1")
    async with records.unit() as tx:
        await tx.insert_started(ExecRow(**first), event(tenant.id, "exec.start", first["id"]))
    async with records.unit() as tx:
        assert await tx.replay_of(tenant.id, sandbox_id, "k-1") == (first["id"], "h1")
        assert await tx.replay_of(tenant.id, sandbox_id, "k-2") is None
    second = start_values(tenant.id, sandbox_id, key="k-1")
    with pytest.raises(IntegrityError):
        async with records.unit() as tx:
            await tx.insert_started(ExecRow(**second), event(tenant.id, "exec.start", second["id"]))
    # Nothing of the refused start was kept, the audit event included.
    async with records.unit() as tx:
        assert await tx.replay_of(tenant.id, sandbox_id, "k-1") == (first["id"], "h1")


@pytest.mark.skipif(database_kind() != "postgresql", reason="PostgreSQL's driver path")
async def test_a_connection_the_server_dropped_fails_once_then_the_pool_recovers(
    tenant: Tenant, sandbox_record: SandboxRecorder, engine: AsyncEngine, database_url: str
) -> None:
    sandbox_id = await sandbox_record(tenant)
    records = ExecRecords(engine, ChainHeads())
    since = datetime.now(UTC) - timedelta(60)
    async with records.unit() as tx:
        assert await tx.facts(tenant.id, sandbox_id, None, since) is not None
    # The server ends the pooled connection (as a restart or a failover would).
    async with driver_connection(engine) as conn:
        pid = await conn.fetchval("SELECT pg_backend_pid()")
    admin = await asyncpg.connect(database_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid) is True
    finally:
        await admin.close()
    with pytest.raises(OperationalError):
        async with records.unit() as tx:
            await tx.facts(tenant.id, sandbox_id, None, since)
    async with records.unit() as tx:
        assert await tx.facts(tenant.id, sandbox_id, None, since) is not None


@pytest.mark.sqlite
async def test_concurrent_appends_to_one_chain_all_land_and_the_chain_verifies(
    api: Api,
    tenant: Tenant,
    sandbox_record: SandboxRecorder,
    engine: AsyncEngine,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    sandbox_id = await sandbox_record(tenant)
    # Two processes' worth of records (each with its own idea of the chain's head), plus the
    # locking append the rest of the service uses, all racing on the same tenant's chain.
    first, second = ExecRecords(engine, ChainHeads()), ExecRecords(engine, ChainHeads())

    async def start(records: ExecRecords) -> str:
        values = start_values(tenant.id, sandbox_id)
        async with records.unit() as tx:
            await tx.insert_started(ExecRow(**values), event(tenant.id, "exec.start", values["id"]))
        async with records.unit() as tx:
            await tx.finish(
                values["id"], ExecEnd(**finish_values()), event(tenant.id, "exec.finish", "f")
            )
        return values["id"]

    async def locked_append(n: int) -> None:
        async with sessionmaker() as session, session.begin():
            await record(session, CTX, chain=tenant.id, action="test.locked", target=str(n))

    results = await asyncio.gather(
        *(start(first if n % 2 else second) for n in range(16)),
        *(locked_append(n) for n in range(8)),
    )
    exec_ids = [r for r in results if r is not None]
    async with sessionmaker() as session:
        events = (
            await session.scalars(
                select(models.AuditEvent)
                .where(models.AuditEvent.chain == tenant.id)
                .order_by(models.AuditEvent.seq)
            )
        ).all()
        finished = (
            await session.scalars(select(models.Exec.state).where(models.Exec.id.in_(exec_ids)))
        ).all()
    assert finished == ["finished"] * 16
    actions = [e.action for e in events]
    assert actions.count("exec.start") == 16 and actions.count("exec.finish") == 16
    assert actions.count("test.locked") == 8
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    result = await verified(api, tenant.id)
    assert result["valid"] is True, result


async def test_facts_and_start_write_only_what_the_checks_allow(
    api: Api,
    tenant: Tenant,
    sandbox_record: SandboxRecorder,
    engine: AsyncEngine,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    stopped = await sandbox_record(tenant)
    async with sessionmaker() as session, session.begin():
        running = await sandbox_record(tenant)
        row = await session.get(models.Sandbox, running)
        assert row is not None
        row.state, row.runtime_id, row.stopped_at = "running", "alk-test", None
    records = ExecRecords(engine, ChainHeads())
    since = datetime.now(UTC) - timedelta(60)
    # The tenant allows 3 execs a minute and 30 s per exec (stored); defaults are passed in.
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}",
        json={"quotas": {"execs_per_minute": 3, "max_exec_timeout_s": 30}},
        headers=api.operator,
    )
    assert r.status_code == 200, r.text

    async def attempt(sandbox_id: str, timeout_s: float) -> tuple[bool, str]:
        values = start_values(tenant.id, sandbox_id)
        async with records.unit() as tx:
            facts, started = await tx.facts_and_start(
                (tenant.id, sandbox_id, None, since),
                (timeout_s, 120, 300.0, 16),
                ExecRow(**values),
                event(tenant.id, "exec.start", values["id"]),
            )
        assert facts is not None
        return started, values["id"]

    async def exists(exec_id: str) -> bool:
        async with sessionmaker() as session:
            return await session.get(models.Exec, exec_id) is not None

    postgres = database_kind() == "postgresql"
    # On PostgreSQL the statement checks and writes at once, also with no head known to this
    # engine yet (it reads one); in the plain form the caller checks and writes.
    started, first = await attempt(running, 5)
    assert started is postgres and await exists(first) is postgres
    if not postgres:
        values = start_values(tenant.id, running)
        async with records.unit() as tx:
            await tx.insert_started(ExecRow(**values), event(tenant.id, "exec.start", values["id"]))
    started, second = await attempt(running, 5)
    assert started is postgres and await exists(second) is postgres
    for sandbox_id, timeout_s in ((stopped, 5), (running, 31)):
        started, exec_id = await attempt(sandbox_id, timeout_s)
        assert not started and not await exists(exec_id)
    if postgres:
        # A third exec within the minute is allowed, a fourth is not.
        started, third = await attempt(running, 5)
        assert started and await exists(third)
        started, fourth = await attempt(running, 5)
        assert not started and not await exists(fourth)
        # Another writer moved the head: the statement runs again, checks included, with the
        # head it read; never an insert without the checks.
        async with sessionmaker() as session, session.begin():
            await record(session, CTX, chain=tenant.id, action="test.other", target="x")
        r = await api.client.patch(
            f"/v1/tenants/{tenant.id}",
            json={"quotas": {"execs_per_minute": 100, "max_running_execs": 4}},
            headers=api.operator,
        )
        assert r.status_code == 200, r.text
        started, fifth = await attempt(running, 5)
        assert started and await exists(fifth)
        # The same after the head moved, when the checks refuse: nothing is written.
        async with sessionmaker() as session, session.begin():
            await record(session, CTX, chain=tenant.id, action="test.other", target="y")
        started, sixth = await attempt(running, 5)
        assert not started and not await exists(sixth)
    assert (await verified(api, tenant.id))["valid"] is True
