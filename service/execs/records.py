"""The exec record's hot path: the start row with its audit event, the runtime's exec id, the
finish row with its audit event.

Two forms of the same statements, each fixed SQL on the database's own driver, since
SQLAlchemy spends more building a statement than the database spends running it:
`records_sqlite` on the SQLite writer connection (service.db.sqlite.Direct), one transaction
per unit, and `records_pg` on asyncpg (service.db.pg), where an exec's start and finish are
each one statement appending to the audit chain by compare-and-swap. The statements are named
in `queries`, and both forms hold a start to the same rules (`quotas`); tests run on both
databases.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncEngine

from service.audit.recorder import CHAIN_HEADS, ChainHeads
from service.db import sqlite
from service.db.pg import driver_connection, is_postgres
from service.execs.recording import Event, ExecEnd, ExecRow, RecordTx, SandboxFacts
from service.execs.records_pg import PgTx
from service.execs.records_sqlite import LiteTx

__all__ = ["Event", "ExecEnd", "ExecRecords", "ExecRow", "RecordTx", "SandboxFacts"]


class ExecRecords:
    """Opens units of work of the right form for the engine's database.

    On SQLite a unit is one transaction of the writer connection. On PostgreSQL every write is a
    single atomic statement, so a unit is a connection in autocommit: no BEGIN and COMMIT round
    trips.
    """

    def __init__(self, engine: AsyncEngine, heads: ChainHeads = CHAIN_HEADS) -> None:
        self.engine = engine
        self.postgres = is_postgres(engine)
        self.heads = heads

    @contextlib.asynccontextmanager
    async def unit(self, *, reads_only: bool = False) -> AsyncIterator[RecordTx]:
        """`reads_only`: on SQLite the reader connection, which never waits for the writer
        nor holds its lock (a lookup before a call that records its event afterwards)."""
        if self.postgres:
            async with driver_connection(self.engine) as conn:
                yield PgTx(conn, self.heads)
        elif reads_only:
            yield LiteTx(sqlite.direct(self.engine).reader)
        else:
            async with sqlite.direct(self.engine).write() as conn:
                yield LiteTx(conn)
