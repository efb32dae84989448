"""Idle sleep: a running sandbox with an `idle_timeout_s` that has seen no activity for that
long (no exec starting or ending, nobody following a running one, no file call, no resume:
service.sandboxes.activity) is paused, with its background processes and the running execs
nobody follows, which go on when it wakes. Each node pauses its own sandboxes (the checkpoint
goes to its disk); the next exec or file call wakes the sandbox
(service.flows.resume.Resumes.wake)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext
from service.db.base import on_node, utcnow
from service.db.models import Exec, Sandbox
from service.errors import AppError
from service.flows.pause import pause_sandbox
from service.jobs.passes import SandboxPass
from service.runtime import SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.sandboxes.states import State

log = logging.getLogger("airlock.jobs.idle")

SYSTEM = AuditContext(actor="system:idle", request_id=None, client=None)
BATCH = 200


async def pause_idle(
    db: async_sessionmaker[AsyncSession], holder: RuntimeHolder, node_id: str | None
) -> list[str]:
    """One pass: pause this node's idle sandboxes; returns their ids."""
    now = utcnow()
    candidates = (
        select(Sandbox.id, Sandbox.tenant_id, Sandbox.idle_timeout_s, Sandbox.last_activity_at)
        .where(Sandbox.state == State.RUNNING.value, Sandbox.idle_timeout_s.is_not(None))
        .where(on_node(Sandbox.node_id, node_id))
        .limit(BATCH)
    )
    async with db() as session:
        sandboxes = (await session.execute(candidates)).all()
        if not sandboxes:
            return []
        last_execs = {
            row.sandbox_id: row
            for row in await session.execute(
                select(
                    Exec.sandbox_id,
                    func.max(Exec.created_at).label("started"),
                    func.max(Exec.finished_at).label("ended"),
                )
                .where(Exec.sandbox_id.in_([s.id for s in sandboxes]))
                .group_by(Exec.sandbox_id)
            )
        }
    idle: list[tuple[str, str]] = []
    for s in sandboxes:
        execs = last_execs.get(s.id)
        times = (s.last_activity_at, *((execs.started, execs.ended) if execs else ()))
        last = max((t for t in times if t is not None), default=None)
        if last is not None and (s.last_activity_at is None or last > s.last_activity_at):
            await _note(db, s.id, last)
        if last is None or now - last >= timedelta(seconds=s.idle_timeout_s):
            idle.append((s.id, s.tenant_id))
    paused = []
    for sandbox_id, tenant_id in idle:
        try:
            await pause_sandbox(db, holder, tenant_id, None, SYSTEM, sandbox_id, reason="idle")
            paused.append(sandbox_id)
        except (AppError, SandboxRuntimeError) as exc:
            # Busy again (an exec began meanwhile), over the paused quota, or gone: next pass.
            log.info("idle sandbox %s not paused: %s", sandbox_id, exc)
    return paused


async def _note(db: async_sessionmaker[AsyncSession], sandbox_id: str, at: datetime) -> None:
    """An exec's start or end later than the recorded activity becomes `last_activity_at`."""
    async with db() as session, session.begin():
        await session.execute(
            update(Sandbox)
            .where(Sandbox.id == sandbox_id, Sandbox.state == State.RUNNING.value)
            .values(last_activity_at=at)
        )


class IdleSleeper(SandboxPass):
    name = "idle-sleeper"
    acted = "paused idle sandboxes"
    log = log

    async def one_pass(self) -> list[str]:
        return await pause_idle(self.db, self.holder, self.node_id)
