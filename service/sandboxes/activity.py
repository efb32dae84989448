"""Activity of a sandbox, for idle sleep: an exec starting, running or ending, a file call, or
a resume. `last_activity_at` is written at most every `EVERY_S` per sandbox and process (a
burst of calls costs one write); execs that ended since are read from their own records by the
idle sleeper, which brings the column up to date as it goes."""

from __future__ import annotations

import time

from sqlalchemy import update

from service.db.base import utcnow
from service.db.models import Sandbox
from service.db.session import Db

EVERY_S = 5.0
_MAX_REMEMBERED = 10_000

_last: dict[str, float] = {}


async def touch(db: Db, sandbox_id: str) -> None:
    now = time.monotonic()
    if now - _last.get(sandbox_id, -EVERY_S) < EVERY_S:
        return
    if len(_last) >= _MAX_REMEMBERED:
        _last.clear()
    _last[sandbox_id] = now
    async with db() as session, session.begin():
        await session.execute(
            update(Sandbox).where(Sandbox.id == sandbox_id).values(last_activity_at=utcnow())
        )
