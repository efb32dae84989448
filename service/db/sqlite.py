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

The hot paths (an exec's records, authentication) go further: fixed SQL on two connections of
their own (`Direct`), one that writes and one that reads, without SQLAlchemy's pool or statement
building, which cost ~0.3 ms a statement against ~0.02 ms for SQLite itself (README.md, "The
embedded database", for what a commit promises).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import aiosqlite
from sqlalchemy import Table
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util.concurrency import await_

# How long a transaction waits for the write lock before it fails (as SQLite's busy timeout
# did), and the pause between tries: short first, as most holders commit within milliseconds.
LOCK_WAIT_S = 30.0
_PAUSES_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02)

# Every connection's settings. WAL: readers and the writer do not block each other.
# synchronous=NORMAL: a commit is in the WAL file (the operating system's) when it returns,
# synced at each checkpoint; a crash of the process loses nothing committed, a power cut
# may lose the last commits before it (never the file's consistency).
PRAGMAS = (
    "PRAGMA foreign_keys=ON",
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
)


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

    @property
    def sqlite(self) -> sqlite3.Connection:
        """The sqlite3 connection beneath."""
        if self._connection is None:
            raise ValueError("Connection closed")
        return self._connection

    def stop(self) -> None:  # type: ignore[override]
        self._running = False
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def connect(path: str) -> sqlite3.Connection:
    # No implicit transactions (the caller says when one begins) and no busy handler (the
    # module docstring); check_same_thread off as aiosqlite has it.
    return sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)


def configure(conn: Any) -> None:
    """Every connection's PRAGMAS (`conn`: sqlite3's connection or SQLAlchemy's adapter)."""
    cur = conn.cursor()
    for pragma in PRAGMAS:
        cur.execute(pragma)
    cur.close()


def async_creator(path: str) -> Callable[[], Any]:
    """SQLAlchemy's `async_creator` for the database file at `path`."""

    async def create() -> InlineConnection:
        return await InlineConnection(lambda: connect(path))

    return create


def _busy(exc: BaseException) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY


def begin_immediate(conn: Any) -> None:
    """`BEGIN IMMEDIATE` on SQLAlchemy's connection `conn` (its "begin" event, under its
    greenlet): `take_write_lock` on the sqlite3 connection beneath, awaited there."""
    await_(take_write_lock(conn.connection.driver_connection.sqlite))


async def take_write_lock(conn: sqlite3.Connection) -> None:
    """`BEGIN IMMEDIATE`, retried while another connection holds the write lock, with asyncio
    sleeps between tries, so the loop serves the holder meanwhile."""
    deadline = time.monotonic() + LOCK_WAIT_S
    tries = 0
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= deadline:
                raise OperationalError("BEGIN IMMEDIATE", None, exc) from exc
        await asyncio.sleep(_PAUSES_S[min(tries, len(_PAUSES_S) - 1)])
        tries += 1


class Direct:
    """The hot paths' own connections to the database file. `write()` gives the one writer
    connection inside a transaction; units take turns, first come first served, so only the
    first of them ever retries the write lock (held by a transaction of another connection).
    `reader` reads alongside, each statement on its own (WAL: a read sees the last commit and
    never waits for the writer). Statements here finish before the loop moves on, so a unit
    that awaits nothing but its own statements holds the write lock for tens of microseconds.
    Commits are not grouped: with synchronous=NORMAL one costs ~0.02 ms here."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.writer = connect(path)
        self.reader = connect(path)
        for conn in (self.writer, self.reader):
            configure(conn)
        self._turn = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[sqlite3.Connection]:
        async with self._turn:
            await take_write_lock(self.writer)
            try:
                yield self.writer
            except BaseException as exc:
                self.writer.execute("ROLLBACK")
                # As the rest of the service sees database errors (SQLAlchemy's kinds).
                if isinstance(exc, sqlite3.IntegrityError):
                    raise IntegrityError(None, None, exc) from exc
                if isinstance(exc, sqlite3.OperationalError):
                    raise OperationalError(None, None, exc) from exc
                raise
            self.writer.execute("COMMIT")

    def close(self) -> None:
        self.writer.close()
        self.reader.close()


_DIRECT: weakref.WeakKeyDictionary[Any, Direct] = weakref.WeakKeyDictionary()


def direct(engine: AsyncEngine) -> Direct:
    """The `Direct` connections of a SQLite engine's database (made on first use, closed with
    the engine's last reference or `close_direct`)."""
    key = engine.sync_engine
    found = _DIRECT.get(key)
    if found is None:
        found = _DIRECT[key] = Direct(engine.url.database or ":memory:")
        weakref.finalize(key, found.close)
    return found


def close_direct(engine: AsyncEngine) -> None:
    found = _DIRECT.pop(engine.sync_engine, None)
    if found is not None:
        found.close()


class Codec:
    """Values of some columns of `table` in and out of SQLite exactly as SQLAlchemy's own types
    write and read them (times as text in UTC, JSON as text, booleans as 0 and 1), so rows
    written with fixed SQL read the same through the ORM, and the other way round."""

    def __init__(self, table: Table, names: Sequence[str]) -> None:
        dialect = sqlite_dialect.dialect()
        self.names = tuple(names)
        types = [table.c[name].type.dialect_impl(dialect) for name in self.names]
        self._in = [t.bind_processor(dialect) for t in types]
        self._out = [t.result_processor(dialect, None) for t in types]

    def params(self, values: Mapping[str, Any]) -> list[Any]:
        """`values`' columns, in order, as SQLite is given them."""
        return [
            v if f is None or v is None else f(v)
            for f, v in zip(self._in, (values[n] for n in self.names), strict=True)
        ]

    def one(self, name: str, value: Any) -> Any:
        """One value of column `name` (one of these), as SQLite is given it."""
        f = self._in[self.names.index(name)]
        return value if f is None or value is None else f(value)

    def row(self, row: Sequence[Any]) -> list[Any]:
        """A row of these columns, in order, as SQLAlchemy reads them."""
        return [v if f is None or v is None else f(v) for f, v in zip(self._out, row, strict=True)]

    def placeholders(self) -> str:
        return ", ".join("?" for _ in self.names)

    def columns(self) -> str:
        return ", ".join(f'"{n}"' for n in self.names)
