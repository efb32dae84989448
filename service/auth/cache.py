"""Who a credential belongs to, kept for a few seconds so that most requests do not ask the
database again.

A cached answer is only as good as the news of a revocation, so the cache is on only while
that news is sure to reach this process:

- Every change that can refuse a caller accepted before (a key revoked, a token revoked, a
  tenant's status changed) calls `auth_changed` in its transaction. On PostgreSQL that sends a
  NOTIFY on `CHANNEL`, delivered to every process once the transaction commits; in this process
  the commit itself empties the caches.
- `AuthListener` holds a connection that LISTENs on the channel, and empties the caches on each
  notification. It turns the cache on once it listens, and off (emptied) the moment its
  connection fails or stops answering its pings, until it listens again.
- On SQLite the service is one process, whose own commits are the only changes: the cache is
  on from the start.

Each entry also lapses after `TTL_S`, and a token's entry at the token's expiry. Refusals are
never cached. An entry is stored only if no change was seen while its lookup ran, so a
lookup that raced a revocation is not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from service.auth.principal import Principal
from service.db.base import utcnow
from service.kept import Changes, Kept

log = logging.getLogger(__name__)

CHANNEL = "airlock_auth"
TTL_S = 10.0
MAX_ENTRIES = 10_000
# How often the listening connection is pinged, and how long a ping may take: a connection
# that stops answering (a network partition that does not close it) turns the cache off.
PING_S = 5.0
RETRY_S = (0.5, 1.0, 2.0, 5.0)
# How the listening connection shows in pg_stat_activity.
APPLICATION_NAME = "airlock-auth-listener"


# The auth changes this process has seen (commits here, notifications).
AUTH_CHANGES = Changes()
note_change = AUTH_CHANGES.note


async def auth_changed(session: AsyncSession) -> None:
    """Say, inside the transaction that makes it, that a change may refuse callers accepted
    before: every process forgets what it cached once the transaction commits."""
    if session.bind.dialect.name == "postgresql":
        await session.execute(text("SELECT pg_notify(:channel, '')"), {"channel": CHANNEL})
    event.listen(session.sync_session, "after_commit", lambda _session: note_change(), once=True)


class AuthCache:
    """Principals by their credential's digest, while `enabled` (service.kept.Kept, forgotten
    on every change this process sees)."""

    def __init__(self, ttl_s: float = TTL_S, max_entries: int = MAX_ENTRIES) -> None:
        self.enabled = False
        self._kept: Kept[bytes, Principal] = Kept(AUTH_CHANGES, ttl_s, max_entries)

    def mark(self) -> int:
        """Taken before a lookup, handed back to `put`."""
        return self._kept.mark()

    def get(self, digest: bytes) -> Principal | None:
        if not self.enabled:
            return None
        principal = self._kept.get(digest)
        if principal is not None and principal.expires_at is not None:
            if principal.expires_at <= utcnow():
                self._kept.discard(digest)
                return None
        return principal

    def put(self, digest: bytes, principal: Principal, mark: int) -> None:
        if self.enabled:
            self._kept.put(digest, principal, mark)

    def turn(self, on: bool) -> None:
        note_change()
        self._kept.clear()
        self.enabled = on


class AuthListener:
    """LISTENs on `CHANNEL` for `cache` (PostgreSQL only), reconnecting when it loses the
    connection; the cache is on exactly while it listens."""

    def __init__(self, engine: AsyncEngine, cache: AuthCache) -> None:
        self.dsn = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.cache = cache
        self.connects = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="auth-listener")

    async def stop(self) -> None:
        self.cache.turn(False)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                await self._listen()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.cache.turn(False)
                delay = RETRY_S[min(failures, len(RETRY_S) - 1)]
                failures += 1
                log.warning("auth cache off, listening for revocations failed (%s); retry in "
                            "%.1f s", exc or type(exc).__name__, delay)  # fmt: skip
                await asyncio.sleep(delay)
            else:
                failures = 0

    async def _listen(self) -> None:
        conn = await asyncpg.connect(
            self.dsn, timeout=PING_S, server_settings={"application_name": APPLICATION_NAME}
        )
        lost = asyncio.Event()
        try:
            conn.add_termination_listener(lambda _conn: self._lost(lost))
            await conn.add_listener(CHANNEL, self._notified)
            self.connects += 1
            self.cache.turn(True)
            while not lost.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), PING_S)
                if not lost.is_set():
                    await conn.fetchval("SELECT 1", timeout=PING_S)
            raise ConnectionError("the listening connection closed")
        finally:
            self.cache.turn(False)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), PING_S)

    def _lost(self, lost: asyncio.Event) -> None:
        self.cache.turn(False)
        lost.set()

    def _notified(self, *_: Any) -> None:
        note_change()
