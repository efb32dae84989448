"""How the template builder and the review runner take their next job off a queue: the first
row a pick chooses, marked started on this node in one statement (`UPDATE ... WHERE id =
(SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)` on PostgreSQL; SQLite transactions take the
write lock up front), so two replicas never take the same job."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, update
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.base import utcnow


async def take_first(
    session: AsyncSession, table: Any, pick: Select[Any], state: str, node_id: str | None
) -> str | None:
    """The id of the first row of `table` that `pick` (selecting its id) chooses, now in
    `state` on `node_id` with its start and one more attempt; None when there is none."""
    if session.bind.dialect.name == "postgresql":
        pick = pick.with_for_update(of=table, skip_locked=True)
    taken: str | None = await session.scalar(
        update(table)
        .where(table.id == pick.scalar_subquery())
        .values(state=state, started_at=utcnow(), attempts=table.attempts + 1, node_id=node_id)
        .returning(table.id)
    )
    return taken
