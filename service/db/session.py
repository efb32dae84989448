"""Engines and sessions: one transaction per request, owned by the `db_session` dependency."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from litestar.datastructures import State
from sqlalchemy import event, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from service.db import sqlite

# What services and jobs are given to open their own sessions.
Db = async_sessionmaker[AsyncSession]


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def make_engine(url: str, pool_size: int = 30) -> AsyncEngine:
    if is_sqlite(url):
        engine = create_async_engine(
            url, async_creator=sqlite.async_creator(make_url(url).database or ":memory:")
        )

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            sqlite.configure(dbapi_conn)

        @event.listens_for(engine.sync_engine, "begin")
        def _begin_immediate(conn: Any) -> None:
            # A deferred transaction that reads and then writes fails with SQLITE_BUSY when
            # another writer got in between; taking the write lock up front makes concurrent
            # requests wait their turn instead (SQLite has one writer at a time anyway).
            sqlite.begin_immediate(conn)

        return engine
    # No ping on checkout: it is a round trip on every request (~0.35 ms measured here, more
    # than a query). A connection the server dropped fails its request instead (a 503), and
    # that failure discards the whole pool, so the next request connects afresh.
    #
    # Generic plans: every statement here is parameterized and keyed by ids, and PostgreSQL's
    # default re-plans a statement with many parameters (the exec and pool-claim statements,
    # with their CTEs) on every execution. Planning once per connection took ~0.4 ms off the
    # claim's read, ~0.25 ms off its write and off an exec's start here.
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=10,
        # The connection used last goes out first: the few a quiet process needs have every
        # statement prepared (asyncpg prepares on each connection once), the rest wait.
        pool_use_lifo=True,
        pool_recycle=1800,
        connect_args={"server_settings": {"plan_cache_mode": "force_generic_plan"}},
    )


async def dispose(engine: AsyncEngine) -> None:
    """Close the engine's connections, SQLite's direct ones (service.db.sqlite) too."""
    if is_sqlite(engine.url.drivername):
        sqlite.close_direct(engine)
    await engine.dispose()


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


async def provide_db_session(state: State) -> AsyncIterator[AsyncSession]:
    """Litestar dependency: commit when the handler returns, roll back when it raises.

    The commit happens before the response is sent, so a failed commit is an error response,
    never a success for something that was not written.
    """
    async with state.sessionmaker() as session, session.begin():
        yield session
