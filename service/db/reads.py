"""Reads a periodic job makes before it takes the write lock, on the driver, in no transaction."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from service.db import sqlite
from service.db.pg import driver_connection, is_postgres


async def finds_a_row(engine: AsyncEngine, sql: str) -> bool:
    """Whether the fixed SELECT `sql` (no parameters) finds a row. A queue polled every second
    is empty nearly always, and a claim's write transaction takes the database's write lock on
    SQLite and a round trip of ORM statements on both: this read answers the empty case
    alone."""
    if is_postgres(engine):
        async with driver_connection(engine) as conn:
            return await conn.fetchval(sql) is not None
    return sqlite.direct(engine).reader.execute(sql).fetchone() is not None
