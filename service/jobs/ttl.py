"""The TTL reaper: sandboxes past `expires_at` (and paused ones past `pause_expires_at`) are
stopped and destroyed with their checkpoints, whoever created them.

Rows are claimed with `FOR UPDATE SKIP LOCKED` (on PostgreSQL), so two replicas never stop the
same sandbox twice; a sandbox left `stopping` by a crash is picked up again after a grace time.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, record
from service.db.base import on_node, utcnow
from service.db.models import Sandbox
from service.periodic import PeriodicJob
from service.runtime.holder import RuntimeHolder
from service.sandboxes.lifecycle import transition
from service.sandboxes.service import stop_sandbox
from service.sandboxes.states import State

log = logging.getLogger("airlock.jobs.ttl")

SYSTEM = AuditContext(actor="system:ttl", request_id=None, client=None)
STUCK_STOPPING = timedelta(seconds=60)
BATCH = 20


async def reap_expired(
    db: async_sessionmaker[AsyncSession], holder: RuntimeHolder, node_id: str | None = None
) -> list[str]:
    """One pass over this node's sandboxes (every node's when `node_id` is None); returns the
    ids of the sandboxes it stopped."""
    now = utcnow()
    claimed: list[tuple[str, str]] = []
    async with db() as session, session.begin():
        rows = (
            await session.scalars(
                select(Sandbox)
                .where(
                    or_(
                        and_(
                            Sandbox.state.in_(
                                [State.RUNNING.value, State.FAILED.value, State.PAUSED.value]
                            ),
                            Sandbox.expires_at < now,
                        ),
                        # A paused sandbox also ends after the tenant's max_paused_s.
                        and_(Sandbox.state == State.PAUSED.value, Sandbox.pause_expires_at < now),
                        and_(
                            Sandbox.state == State.STOPPING.value,
                            Sandbox.updated_at < now - STUCK_STOPPING,
                        ),
                    )
                )
                .where(on_node(Sandbox.node_id, node_id))
                .order_by(Sandbox.expires_at)
                .limit(BATCH)
                .with_for_update(skip_locked=True)
            )
        ).all()
        for row in rows:
            if row.state != State.STOPPING:
                paused_out = row.expires_at >= now  # then it is its pause that ran out
                ended = row.pause_expires_at if paused_out else row.expires_at
                assert ended is not None
                await record(
                    session,
                    SYSTEM,
                    chain=row.tenant_id,
                    action="sandbox.expire",
                    target=row.id,
                    details={
                        "expires_at": ended.isoformat(),
                        "which": "pause_expires_at" if paused_out else "expires_at",
                    },
                )
                reason = "paused too long" if paused_out else "expired"
                await transition(session, row, State.STOPPING, reason)
            else:
                row.updated_at = now  # claim it for this pass
            claimed.append((row.id, row.tenant_id))
    if not claimed:
        return []
    runtime = await holder.get()
    for sandbox_id, tenant_id in claimed:
        try:
            await stop_sandbox(db, runtime, sandbox_id, tenant_id, reason="expired")
        except Exception:
            log.exception("could not stop expired sandbox %s; retrying later", sandbox_id)
    return [sandbox_id for sandbox_id, _ in claimed]


class TtlReaper(PeriodicJob):
    name = "ttl-reaper"

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
        stopped = await reap_expired(self.db, self.holder, self.node_id)
        if stopped:
            log.info("stopped expired sandboxes: %s", ", ".join(stopped))
        return False
