"""State changes of a sandbox row, each recorded as a transition (and checked against the table)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from service.db.base import utcnow
from service.db.models import Sandbox, SandboxTransition
from service.sandboxes.states import State, check


async def transition(
    session: AsyncSession, row: Sandbox, target: State, reason: str | None = None
) -> None:
    current = State(row.state) if row.state else None
    check(current, target)
    now = utcnow()
    row.state = target.value
    row.updated_at = now
    if target is State.FAILED:
        row.failure_reason = (reason or "unknown")[:500]
    if target is State.STOPPED:
        row.stopped_at = now
    session.add(
        SandboxTransition(
            sandbox_id=row.id,
            from_state=current.value if current else None,
            to_state=target.value,
            reason=reason[:500] if reason else None,
            at=now,
        )
    )
    await session.flush()
