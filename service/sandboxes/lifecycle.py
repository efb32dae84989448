"""State changes of a sandbox row, each recorded as a transition (and checked against the table)."""

from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.base import utcnow
from service.db.models import Sandbox, SandboxTransition
from service.kept import Changes
from service.sandboxes.states import State, check

# State changes of sandboxes this process has made, counted when each is made and again when
# its transaction commits: what a cache of sandbox states compares, forgetting what it holds
# whenever the count moved (a pause, a stop, a failure). Every change of a sandbox's state is
# made by the process that runs it, through `transition`.
SANDBOX_CHANGES = Changes()


async def transition(
    session: AsyncSession, row: Sandbox, target: State, reason: str | None = None
) -> None:
    current = State(row.state) if row.state else None
    check(current, target)
    # Before the change is written and once more at its commit: a lookup that read the row
    # in between (the old state, still committed) is not kept.
    SANDBOX_CHANGES.note()
    event.listen(
        session.sync_session, "after_commit", lambda _session: SANDBOX_CHANGES.note(), once=True
    )
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
