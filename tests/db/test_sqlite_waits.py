"""SQLite: a transaction that finds the write lock taken waits for it without stopping the
event loop, so the holder (on the same loop) can finish and the waiter then goes ahead."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from service.db.session import make_engine

pytestmark = pytest.mark.sqlite


async def test_a_writer_waits_for_the_lock_while_the_loop_runs_on(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'waits.db'}"
    holder_engine, waiter_engine = make_engine(url), make_engine(url)
    try:
        async with holder_engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (who TEXT, at REAL)"))
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        locked = asyncio.Event()

        async def holder() -> None:
            async with holder_engine.begin() as conn:
                await conn.execute(text("INSERT INTO t VALUES ('holder', :at)"), {"at": 0})
                locked.set()
                await asyncio.sleep(0.3)  # holds the write lock across awaits

        async def waiter() -> float:
            await locked.wait()
            started = time.monotonic()
            async with waiter_engine.begin() as conn:
                await conn.execute(text("INSERT INTO t VALUES ('waiter', :at)"), {"at": 1})
            return time.monotonic() - started

        tick_task = asyncio.create_task(ticker())
        try:
            ticks_before = ticks
            _, waited = await asyncio.gather(holder(), waiter())
            ticks_during = ticks - ticks_before
        finally:
            tick_task.cancel()
        async with waiter_engine.connect() as conn:
            rows = (await conn.execute(text("SELECT who FROM t ORDER BY rowid"))).scalars().all()
        assert rows == ["holder", "waiter"]  # the waiter went in after the holder committed
        assert waited >= 0.2  # it did wait for the lock rather than failing at once
        assert ticks_during >= 10  # and the loop went on meanwhile (~30 ticks of 10 ms)
    finally:
        await holder_engine.dispose()
        await waiter_engine.dispose()
