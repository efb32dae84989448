"""A tenant's stored exec output is counted exactly (tenant_usage) by the paths that write
and delete it: an exec's finish, the age purge, the trim to the tenant's cap and the audit
retention that deletes old exec records. Runs on both databases, through the hot path's own
statements (service.execs.records)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, ChainHeads
from service.db import models
from service.db.session import make_engine
from service.execs import stored
from service.execs.records import Event, ExecEnd, ExecRecords, ExecRow
from service.ids import new_id
from service.jobs.output_retention import purge_outputs
from service.jobs.retention import purge_once
from tests.conftest import Api, SandboxRecorder, Tenant

CTX = AuditContext(actor="key_test", request_id="req-1", client="127.0.0.1")
KIB = 1024


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


def event(tenant_id: str, action: str, target: str) -> Event:
    return Event(CTX, chain=tenant_id, action=action, target=target, outcome="ok", details={})


async def finished_exec(
    records: ExecRecords, tenant_id: str, sandbox_id: str, output: bytes, *, age: timedelta
) -> tuple[str, int | None]:
    """An exec started, its output stored in two chunks and finished, as the runner does;
    returns its id and the tenant's stored output the finish reported."""
    exec_id, created = new_id("exe"), datetime.now(UTC) - age
    values: dict[str, Any] = {
        "id": exec_id,
        "tenant_id": tenant_id,
        "sandbox_id": sandbox_id,
        "state": "running",
        "cmd": ["cat"],
        "cwd": "/work",
        "user": None,
        "env": {},
        "secret_names": [],
        "timeout_s": 5.0,
        "has_stdin": False,
        "tty": False,
        "stdout_bytes": 0,
        "stderr_bytes": 0,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "idempotency_key": None,
        "request_hash": "h",
        "created_at": created,
        "started_at": created,
        "runtime_exec_id": None,
    }
    async with records.unit() as tx:
        await tx.insert_started(ExecRow(**values), event(tenant_id, "exec.start", exec_id))
    half = len(output) // 2
    async with records.unit() as tx:
        await tx.insert_chunks(
            [
                {"exec_id": exec_id, "seq": 1, "stream": "stdout", "data": output[:half]},
                {"exec_id": exec_id, "seq": 2, "stream": "stderr", "data": output[half:]},
            ]
        )
    finish = {
        "state": "finished",
        "finished_at": datetime.now(UTC),
        "duration_ms": 1,
        "error": None,
        "exit_code": 0,
        "outcome": "exited",
        "stdout_bytes": half,
        "stderr_bytes": len(output) - half,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "stored_bytes": len(output),
    }
    async with records.unit() as tx:
        total = await tx.finish(
            exec_id, ExecEnd(**finish), event(tenant_id, "exec.finish", exec_id)
        )
    return exec_id, total


async def usage(db: async_sessionmaker[AsyncSession], tenant_id: str) -> tuple[int, int]:
    """(the counter, the real sum of the tenant's chunk bytes)."""
    async with db() as session:
        counter = await stored.stored_output_bytes(session, tenant_id)
        real = await session.scalar(
            select(func.coalesce(func.sum(func.length(models.ExecChunk.data)), 0))
            .join(models.Exec, models.Exec.id == models.ExecChunk.exec_id)
            .where(models.Exec.tenant_id == tenant_id)
        )
    return counter, int(real or 0)


async def get_exec(api: Api, tenant: Tenant, sandbox_id: str, exec_id: str) -> dict[str, Any]:
    r = await api.client.get(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}", headers=tenant.headers)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.sqlite
async def test_counter_stays_exact_across_the_purges(
    api: Api,
    tenant: Tenant,
    sandbox_record: SandboxRecorder,
    engine: AsyncEngine,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    sandbox_id = await sandbox_record(tenant)
    records = ExecRecords(engine, ChainHeads())
    sizes = {"ancient": 5 * KIB, "old": 3 * KIB, "new": 7 * KIB}
    ancient, _ = await finished_exec(
        records, tenant.id, sandbox_id, b"a" * sizes["ancient"], age=timedelta(days=200)
    )
    old, _ = await finished_exec(
        records, tenant.id, sandbox_id, b"o" * sizes["old"], age=timedelta(days=10)
    )
    new, total = await finished_exec(
        records, tenant.id, sandbox_id, b"n" * sizes["new"], age=timedelta(0)
    )
    assert total == sum(sizes.values())
    assert await usage(sessionmaker, tenant.id) == (total, total)

    # The audit retention (90 days) deletes the ancient record, and its output with it.
    async with sessionmaker() as session, session.begin():
        await purge_once(session)
    async with sessionmaker() as session:
        assert await session.get(models.Exec, ancient) is None
    left = sizes["old"] + sizes["new"]
    assert await usage(sessionmaker, tenant.id) == (left, left)

    # The output retention (7 days) deletes the old exec's output; its record stays.
    async with sessionmaker() as session, session.begin():
        purged = await purge_outputs(session, datetime.now(UTC))
    assert purged[tenant.id] == 1
    assert await usage(sessionmaker, tenant.id) == (sizes["new"], sizes["new"])
    got = await get_exec(api, tenant, sandbox_id, old)
    assert (got["output_purged"], got["stdout"], got["stderr"]) == (True, "", "")
    assert got["exit_code"] == 0 and got["stdout_bytes"] == sizes["old"] // 2
    got = await get_exec(api, tenant, sandbox_id, new)
    assert got["output_purged"] is False
    assert got["stdout"] + got["stderr"] == "n" * sizes["new"]

    # A second run finds nothing more to do and the counter stays where it is.
    async with sessionmaker() as session, session.begin():
        assert tenant.id not in await purge_outputs(session, datetime.now(UTC))
    assert await usage(sessionmaker, tenant.id) == (sizes["new"], sizes["new"])

    r = await api.client.get(f"/v1/tenants/{tenant.id}", headers=api.operator)
    assert r.status_code == 200, r.text
    assert r.json()["usage"] == {"stored_output_bytes": sizes["new"]}


@pytest.mark.sqlite
async def test_trim_deletes_the_oldest_output_down_to_the_cap(
    api: Api,
    sandbox_record: SandboxRecorder,
    engine: AsyncEngine,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    tenant = await api.tenant(max_stored_output_mib=1)
    cap = stored.MIB
    sandbox_id = await sandbox_record(tenant)
    records = ExecRecords(engine, ChainHeads())
    each = 400 * KIB
    ids = []
    for n in range(5):
        exec_id, total = await finished_exec(
            records, tenant.id, sandbox_id, bytes([65 + n]) * each, age=timedelta(minutes=5 - n)
        )
        ids.append(exec_id)
    assert total == 5 * each  # the finish counts; it never refuses nor deletes
    async with engine.begin() as conn:
        assert await stored.trim(conn, tenant.id, cap) == 5 - cap // each
    kept = cap // each * each
    assert await usage(sessionmaker, tenant.id) == (kept, kept)
    for n, exec_id in enumerate(ids):
        got = await get_exec(api, tenant, sandbox_id, exec_id)
        intact = n >= 5 - cap // each
        assert got["output_purged"] is not intact
        assert got["stdout"] + got["stderr"] == (chr(65 + n) * each if intact else "")
    # Under the cap, a trim deletes nothing.
    async with engine.begin() as conn:
        assert await stored.trim(conn, tenant.id, cap) == 0
    assert await usage(sessionmaker, tenant.id) == (kept, kept)
