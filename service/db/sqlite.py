"""SQLite on the event loop's own thread, waiting for the write lock without blocking it.

aiosqlite runs every call on a worker thread, and SQLAlchemy's adapter makes three or four
calls per statement (cursor, execute, fetch, close): each a hand-over between threads. On a
busy 2-core host that cost ~1 ms per statement, ~18 ms per exec through the API (its
authentication, start and finish are eleven statements in three transactions), against well
under 0.1 ms for the statements themselves. Here every call runs where it is made.

What may wait is taken apart instead: every transaction starts with `BEGIN IMMEDIATE` (see
session.py), the one statement that waits for another connection (the write lock), and that
wait is an asyncio sleep between tries, never a blocking one. Other statements do not wait in
WAL mode: readers never block, and a connection holds the write lock from its BEGIN to its
commit. So the busy timeout of a connection is 0; SQLite's own busy handler would sleep on the
loop's thread, while the lock's holder waits for that very loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import aiosqlite
from sqlalchemy.exc import OperationalError
from sqlalchemy.util.concurrency import await_

# How long a transaction waits for the write lock before it fails (as SQLite's busy timeout
# did), and the pause between tries: short first, as most holders commit within milliseconds.
LOCK_WAIT_S = 30.0
_PAUSES_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02)


class InlineConnection(aiosqlite.Connection):
    """aiosqlite's connection with its calls made in place, on the caller's thread."""

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, iter_chunk_size=64)

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)

    async def _connect(self) -> InlineConnection:
        if self._connection is None:
            self._connection = self._connector()
        return self

    def __await__(self) -> Any:
        return self._connect().__await__()  # no worker thread to start

    def stop(self) -> None:  # type: ignore[override]
        self._running = False
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def async_creator(path: str) -> Callable[[], Any]:
    """SQLAlchemy's `async_creator` for the database file at `path`."""

    def connect() -> sqlite3.Connection:
        # No implicit transactions (SQLAlchemy says when one begins) and no busy handler
        # (the module docstring); check_same_thread off as aiosqlite has it.
        return sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)

    async def create() -> InlineConnection:
        return await InlineConnection(connect)

    return create


def begin_immediate(conn: Any) -> None:
    """`BEGIN IMMEDIATE`, retried while another connection holds the write lock; the pauses
    are awaited (we run under SQLAlchemy's greenlet), so the loop serves the holder."""
    deadline = time.monotonic() + LOCK_WAIT_S
    tries = 0
    while True:
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except OperationalError as exc:
            busy = getattr(exc.orig, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() >= deadline:
                raise
        await_(asyncio.sleep(_PAUSES_S[min(tries, len(_PAUSES_S) - 1)]))
        tries += 1
