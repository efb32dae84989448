"""Activity of a sandbox, for idle sleep: an exec starting or ending, a caller following a
running exec (waiting for it, streaming or polling it), a file call, or a resume. A running
exec nobody follows (`wait: false`, a client gone) is a background process: an idle sandbox is
paused with it, and it goes on when the sandbox wakes. `last_activity_at` is written at most
every `EVERY_S` per sandbox and process (a burst of calls costs one write); execs that started
or ended since are read from their own records by the idle sleeper, which brings the column up
to date as it goes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from sqlalchemy import update

from service.db.base import utcnow
from service.db.models import Sandbox
from service.db.session import Db

EVERY_S = 5.0
_MAX_REMEMBERED = 10_000

_last: dict[str, float] = {}
# Execs of this process on their way into the runtime (recorded, not started there yet), by
# sandbox. A pause keeps the execs that run, not one that arrives while the sandbox is stopped.
_arriving: dict[str, int] = {}


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


@contextlib.asynccontextmanager
async def following(db: Db, sandbox_id: str) -> AsyncIterator[None]:
    """While a caller follows a running exec, its sandbox is active (touched now and every
    `EVERY_S`): idle sleep never pauses it under someone waiting for it. A timer, not a task:
    most execs end before it fires."""
    loop = asyncio.get_running_loop()
    touches: set[asyncio.Task[None]] = set()

    def again() -> None:
        nonlocal timer
        task = loop.create_task(_touch_quietly(db, sandbox_id))
        touches.add(task)
        task.add_done_callback(touches.discard)
        timer = loop.call_later(EVERY_S, again)

    await _touch_quietly(db, sandbox_id)
    timer = loop.call_later(EVERY_S, again)
    try:
        yield
    finally:
        timer.cancel()
        for task in touches:
            task.cancel()


async def _touch_quietly(db: Db, sandbox_id: str) -> None:
    with contextlib.suppress(Exception):  # a missed touch only shortens the idle time
        await touch(db, sandbox_id)


class Arrival:
    """An exec on its way into the runtime: from before it is recorded until the runtime has
    it (or it never will). A pause that began meanwhile backs off (`exec_arriving`); an exec
    recorded after a pause began finds the sandbox not running."""

    def __init__(self, sandbox_id: str) -> None:
        self.sandbox_id = sandbox_id
        self.taken = False  # a task ends it once the runtime has the exec
        self._over = False
        _arriving[sandbox_id] = _arriving.get(sandbox_id, 0) + 1

    def end(self) -> None:
        if not self._over:
            self._over = True
            left = _arriving.pop(self.sandbox_id, 1) - 1
            if left:
                _arriving[self.sandbox_id] = left


def exec_arriving(sandbox_id: str) -> bool:
    return _arriving.get(sandbox_id, 0) > 0
