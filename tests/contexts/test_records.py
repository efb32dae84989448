"""What a context call reads and records (service.contexts.records) on the database under test:
the sandbox scoped to the caller's tenant and token, the tenant's own maximum timeout, and
events appended to the tenant's chain, among events appended the ORM's way, so that it
verifies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, ChainHeads, record
from service.auth.principal import Principal, PrincipalKind
from service.contexts.live import ContextFacts
from service.contexts.records import ContextRecords, Known
from service.db import models
from service.db.session import make_engine
from service.errors import NotFound, SandboxNotUsable
from service.execs.records import ExecRecords
from service.sandboxes.lifecycle import SANDBOX_CHANGES, transition
from service.sandboxes.states import State
from tests.conftest import Api, SandboxRecorder

CTX = AuditContext(actor="key_test", request_id="req-1", client="127.0.0.1")


@pytest.fixture
async def records(database_url: str) -> AsyncIterator[ContextRecords]:
    """The records of a process of its own (its own connections and chain heads)."""
    engine = make_engine(database_url)
    yield ContextRecords(ExecRecords(engine, ChainHeads()))
    await engine.dispose()


def caller(tenant_id: str, sandbox_id: str | None = None) -> Principal:
    return Principal(
        PrincipalKind.TOKEN if sandbox_id else PrincipalKind.API_KEY,
        actor="key_test",
        tenant_id=tenant_id,
        scopes=frozenset({"exec"}),
        sandbox_id=sandbox_id,
    )


@pytest.mark.sqlite
async def test_a_context_reads_the_callers_sandbox_and_records_on_its_chain(
    api: Api,
    sandbox_record: SandboxRecorder,
    records: ContextRecords,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    tenant, other = await api.tenant(max_exec_timeout_s=120), await api.tenant()
    sandbox_id, neighbour = await sandbox_record(tenant), await sandbox_record(tenant)
    me = caller(tenant.id)

    assert (await records.sandbox(me, sandbox_id)).id == sandbox_id
    for stranger, name in (
        (caller(other.id), sandbox_id),
        (caller(tenant.id, neighbour), sandbox_id),  # a token bound to another sandbox
        (me, "sbx_missing"),
    ):
        with pytest.raises(NotFound):
            await records.sandbox(stranger, name)
    with pytest.raises(SandboxNotUsable):  # stopped
        await records.running(None, me, sandbox_id)  # type: ignore[arg-type]

    async with sessionmaker() as session, session.begin():
        await session.execute(
            update(models.Sandbox)
            .where(models.Sandbox.id == sandbox_id)
            .values(state="running", runtime_id="rt-1")
        )
    target = await records.running(None, caller(tenant.id, sandbox_id), sandbox_id)  # type: ignore[arg-type]
    assert (target.sandbox_id, target.runtime_id, target.max_exec_timeout_s) == (
        sandbox_id,
        "rt-1",
        120,
    )

    facts = ContextFacts("ctx_1", tenant.id, sandbox_id, "rt-1", "python", datetime.now(UTC))
    await records.audit(CTX, facts, "context.create", context_id="ctx_1")
    async with sessionmaker() as session, session.begin():  # another writer in between
        await record(session, CTX, chain=tenant.id, action="file.read", target=sandbox_id)
    await records.audit(CTX, facts, "context.run", "error", context_id="ctx_1", error="E")

    r = await api.client.get("/v1/audit", params={"tenant_id": tenant.id}, headers=api.operator)
    assert r.status_code == 200, r.text
    shown = [(e["action"], e["target"], e["outcome"], e["details"]) for e in r.json()["items"]]
    assert ("context.create", sandbox_id, "ok", {"context_id": "ctx_1"}) in shown, shown
    assert ("context.run", sandbox_id, "error", {"context_id": "ctx_1", "error": "E"}) in shown
    r = await api.client.get(
        "/v1/audit/verify", params={"tenant_id": tenant.id}, headers=api.operator
    )
    assert r.status_code == 200 and r.json()["valid"] is True, r.text


@pytest.mark.sqlite
async def test_a_sandbox_found_running_is_asked_again_after_a_state_change(
    api: Api,
    sandbox_record: SandboxRecorder,
    records: ContextRecords,
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    tenant, other = await api.tenant(), await api.tenant()
    sandbox_id, neighbour = await sandbox_record(tenant), await sandbox_record(tenant)
    me = caller(tenant.id)

    async def set_row(**values: object) -> None:
        async with sessionmaker() as session, session.begin():
            await session.execute(
                update(models.Sandbox).where(models.Sandbox.id == sandbox_id).values(**values)
            )

    await set_row(state="running", runtime_id="rt-1")
    assert (await records.running(None, me, sandbox_id)).runtime_id == "rt-1"  # type: ignore[arg-type]
    # A row written behind this process's back is not read again at once: it was found
    # running a moment ago.
    await set_row(runtime_id="rt-2")
    assert (await records.running(None, me, sandbox_id)).runtime_id == "rt-1"  # type: ignore[arg-type]
    # The scope is still the caller's: another tenant, a token bound to another sandbox.
    for stranger in (caller(other.id), caller(tenant.id, neighbour)):
        with pytest.raises(NotFound):
            await records.running(None, stranger, sandbox_id)  # type: ignore[arg-type]

    # A state change made here (a pause) forgets it: the lookup answers from the row again.
    async with sessionmaker() as session, session.begin():
        row = await session.get(models.Sandbox, sandbox_id)
        assert row is not None
        await transition(session, row, State.PAUSING)
    with pytest.raises(SandboxNotUsable):
        await records.running(None, me, sandbox_id)  # type: ignore[arg-type]

    # A lookup that raced a change (its mark taken before the change) is not kept.
    await set_row(state="running", runtime_id="rt-3")
    target = await records.running(None, me, sandbox_id)  # type: ignore[arg-type]
    known, mark = Known(), SANDBOX_CHANGES.seen
    async with sessionmaker() as session, session.begin():
        row = await session.get(models.Sandbox, sandbox_id)
        assert row is not None
        await transition(session, row, State.PAUSING)
        await session.rollback()
    known.put(target, mark)
    assert known.get(me, sandbox_id) is None
    known.put(target, SANDBOX_CHANGES.seen)
    assert known.get(me, sandbox_id) == target
