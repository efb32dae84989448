"""Execs cut off without an end from their runtime (the service stopped, or their node was
lost): their records end as `interrupted`, each audited on its tenant's chain."""

from __future__ import annotations

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.db.base import utcnow
from service.db.models import Exec, Sandbox
from service.execs import stored


async def interrupt_execs(
    session: AsyncSession, ctx: AuditContext, which: ColumnElement[bool], error: str
) -> tuple[int, list[tuple[str, str]]]:
    """Execs still pending or running among `which` become `interrupted` (audited, their
    stored output counted as a finish would). How many, and the (runtime sandbox, runtime
    exec) ids of their processes, for whoever can still kill them."""
    execs = (
        await session.scalars(
            select(Exec).where(Exec.state.in_(["pending", "running"]), which).with_for_update()
        )
    ).all()
    to_kill = []
    for ex in execs:
        ex.state = "interrupted"
        ex.finished_at = utcnow()
        ex.error = error
        sandbox = await session.get(Sandbox, ex.sandbox_id)
        if sandbox is not None and sandbox.runtime_id and ex.runtime_exec_id:
            to_kill.append((sandbox.runtime_id, ex.runtime_exec_id))
        await record(
            session,
            ctx,
            chain=ex.tenant_id,
            action="exec.interrupted",
            target=ex.id,
            outcome="interrupted",
            details={"sandbox_id": ex.sandbox_id},
        )
    await session.flush()
    await stored.count_ended(session, [ex.id for ex in execs])
    return len(execs), to_kill
