"""The TTL reaper: sandboxes past `expires_at` (and paused ones past `pause_expires_at`) are
stopped and destroyed with their checkpoints, whoever created them.

Rows are claimed with `FOR UPDATE SKIP LOCKED` (on PostgreSQL), so two replicas never stop the
same sandbox twice; a sandbox left `stopping` by a crash is picked up again after a grace time.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, record
from service.db.base import utcnow
from service.jobs.passes import SandboxPass
from service.jobs.queries import expired_sandboxes
from service.runtime.holder import RuntimeHolder
from service.sandboxes.lifecycle import transition
from service.sandboxes.service import stop_sandbox
from service.sandboxes.states import State

log = logging.getLogger("airlock.jobs.ttl")

SYSTEM = AuditContext(actor="system:ttl", request_id=None, client=None)
BATCH = 20


async def reap_expired(
    db: async_sessionmaker[AsyncSession], holder: RuntimeHolder, node_id: str | None = None
) -> list[str]:
    """One pass over this node's sandboxes (every node's when `node_id` is None); returns the
    ids of the sandboxes it stopped."""
    now = utcnow()
    claimed: list[tuple[str, str]] = []
    async with db() as session, session.begin():
        rows = (await session.scalars(expired_sandboxes(now, node_id, BATCH))).all()
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


class TtlReaper(SandboxPass):
    name = "ttl-reaper"
    acted = "stopped expired sandboxes"
    log = log

    async def one_pass(self) -> list[str]:
        return await reap_expired(self.db, self.holder, self.node_id)
