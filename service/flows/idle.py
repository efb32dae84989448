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
from service.periodic import PeriodicJob
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
        execs = {
            row[0]: row[1:]
            for row in await session.execute(
                select(Exec.sandbox_id, func.max(Exec.created_at), func.max(Exec.finished_at))
                .where(Exec.sandbox_id.in_([s[0] for s in sandboxes]))
                .group_by(Exec.sandbox_id)
            )
        }
    rows = [(*s, *execs.get(s[0], (None, None))) for s in sandboxes]
    idle: list[tuple[str, str]] = []
    for sandbox_id, tenant_id, timeout_s, stored, started, ended in rows:
        last = max((t for t in (stored, started, ended) if t is not None), default=None)
        if last is not None and (stored is None or last > stored):
            await _note(db, sandbox_id, last)
        if last is None or now - last >= timedelta(seconds=timeout_s):
            idle.append((sandbox_id, tenant_id))
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


class IdleSleeper(PeriodicJob):
    name = "idle-sleeper"

    def __init__(
        self,
        db: async_sessionmaker[AsyncSession],
        holder: RuntimeHolder,
        interval_s: float,
        node_id: str | None = None,
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.holder = holder
        self.node_id = node_id

    async def run_once(self) -> bool:
        paused = await pause_idle(self.db, self.holder, self.node_id)
        if paused:
            log.info("paused idle sandboxes: %s", ", ".join(paused))
        return False
