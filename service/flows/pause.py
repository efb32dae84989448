"""Pause: a sandbox checkpointed to its node's disk (its resume and wake: flows/resume.py).

Like the rest of the lifecycle, no transaction is held across the runtime call: the intent is
committed (`pausing`, `resuming`), the runtime is called, and the outcome is recorded. A
pause keeps what runs in the sandbox: background processes, and running execs, which go on
(their deadlines stopped) once it resumes. A pause the runtime refuses, because it could not
keep something (it names it), leaves the sandbox running; a resume the host has no room for
leaves it paused. A paused sandbox counts against the tenant's paused quotas, not its running
ones; resuming it counts it against those again.
"""

from __future__ import annotations

import time
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.db.models import Tenant
from service.db.session import Db
from service.errors import Conflict, Unprocessable
from service.runtime import SandboxBusy, SandboxFailed, SandboxRuntime
from service.runtime.holder import RuntimeHolder
from service.sandboxes.activity import exec_arriving
from service.sandboxes.lifecycle import transition
from service.sandboxes.quotas import over
from service.sandboxes.schemas import Sandbox
from service.sandboxes.service import get_row_scoped, to_schema
from service.sandboxes.states import State
from service.tenants.repository import lock_tenant
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of


class SandboxBusyConflict(Conflict):
    code, title = "sandbox_busy", "The sandbox is busy"


class PauseUnsupported(Unprocessable):
    code, title = "pause_unsupported", "This sandbox cannot be paused"


async def pause_sandbox(
    db: Db,
    holder: RuntimeHolder,
    tenant_id: str,
    only_sandbox: str | None,
    ctx: AuditContext,
    sandbox_id: str,
    *,
    reason: str = "requested",
) -> Sandbox:
    runtime = await holder.get()
    async with db() as session, session.begin():
        # The tenant first (as creates take it), so concurrent pauses count one after another.
        quotas = quotas_of(await lock_tenant(session, tenant_id))
        row = await get_row_scoped(session, tenant_id, only_sandbox, sandbox_id, for_update=True)
        if row.state == State.PAUSED:
            return to_schema(row)
        if row.state != State.RUNNING or row.runtime_id is None:
            raise Conflict(f"a {row.state} sandbox cannot be paused", extra={"state": row.state})
        if not runtime.supports("pause"):
            raise PauseUnsupported(f"the {runtime.name} runtime cannot pause a sandbox")
        await _check_paused_quota(session, tenant_id, quotas)
        await transition(session, row, State.PAUSING, reason)
        runtime_id = row.runtime_id
    if exec_arriving(sandbox_id):
        # Recorded before the pause began, not in the runtime yet: it would find the sandbox
        # stopped. Execs recorded from now on find it pausing.
        why = "not paused: an exec is starting"
        await back(db, tenant_id, sandbox_id, State.PAUSING, State.RUNNING, why, active=True)
        raise SandboxBusyConflict(f"sandbox {sandbox_id} has an exec starting: try again")
    started = time.monotonic()
    try:
        paused = await runtime.pause(runtime_id)
    except SandboxBusy as exc:
        # An idle sandbox the runtime cannot pause now counts as active: not asked every pass.
        await back(
            db, tenant_id, sandbox_id, State.PAUSING, State.RUNNING, f"not paused: {exc}",
            active=reason == "idle",
        )  # fmt: skip
        raise SandboxBusyConflict(str(exc)) from exc
    except SandboxFailed as exc:
        await back(db, tenant_id, sandbox_id, State.PAUSING, State.FAILED, exc.reason)
        raise
    except BaseException:
        info_state = await runtime_state(runtime, runtime_id)
        target = State.RUNNING if info_state == "running" else State.FAILED
        await back(db, tenant_id, sandbox_id, State.PAUSING, target, "pause failed")
        raise
    took_ms = round((time.monotonic() - started) * 1000)
    async with db() as session, session.begin():
        row = await get_row_scoped(session, tenant_id, None, sandbox_id, for_update=True)
        if row.state != State.PAUSING:  # deleted meanwhile: the delete has it
            return to_schema(row)
        quotas = quotas_of(await _tenant(session, tenant_id))
        now = utcnow()
        row.paused_at = now
        row.pause_bytes = paused.size_bytes
        row.pause_snapshot_id, row.pause_digest = paused.snapshot_id, None
        row.pause_node_id = row.node_id if paused.snapshot_id is not None else None
        row.pause_cut = list(paused.connections_cut)
        row.pause_expires_at = min(row.expires_at, now + timedelta(seconds=quotas.max_paused_s))
        await transition(session, row, State.PAUSED, reason)
        await record(
            session,
            ctx,
            chain=tenant_id,
            action="sandbox.pause",
            target=row.id,
            details={
                "reason": reason,
                "duration_ms": took_ms,
                "size_bytes": paused.size_bytes,
                "connections_cut": list(paused.connections_cut),
            },
        )
        return to_schema(row)


async def back(
    db: Db,
    tenant_id: str,
    sandbox_id: str,
    was: State,
    target: State,
    reason: str,
    *,
    active: bool = False,
) -> None:
    """Record where a pause or resume that did not happen left the sandbox (`active`: and
    count the attempt as its activity)."""
    async with db() as session, session.begin():
        row = await get_row_scoped(session, tenant_id, None, sandbox_id, for_update=True)
        if row.state == was:
            await transition(session, row, target, reason)
            if active:
                row.last_activity_at = utcnow()


async def runtime_state(runtime: SandboxRuntime, runtime_id: str) -> str | None:
    try:
        return (await runtime.get(runtime_id)).state
    except Exception:
        return None


async def _check_paused_quota(session: AsyncSession, tenant_id: str, quotas: Quotas) -> None:
    """One more paused sandbox fits (those being paused count already)."""
    paused = [State.PAUSED.value, State.PAUSING.value]
    count, stored = (
        await session.execute(
            select(
                func.count(SandboxRow.id), func.coalesce(func.sum(SandboxRow.pause_bytes), 0)
            ).where(SandboxRow.tenant_id == tenant_id, SandboxRow.state.in_(paused))
        )
    ).one()
    if count + 1 > quotas.max_paused_sandboxes:
        raise over(
            "max_paused_sandboxes",
            quotas.max_paused_sandboxes,
            count,
            f"the tenant has {count} of {quotas.max_paused_sandboxes} paused sandboxes",
        )
    stored_mib = int(stored) // (1 << 20)
    if stored_mib >= quotas.max_paused_mib:
        raise over(
            "max_paused_mib",
            quotas.max_paused_mib,
            stored_mib,
            f"the tenant's paused sandboxes hold {stored_mib} of {quotas.max_paused_mib} MiB",
        )


async def _tenant(session: AsyncSession, tenant_id: str) -> Tenant:
    tenant = await session.get(Tenant, tenant_id)
    assert tenant is not None
    return tenant
