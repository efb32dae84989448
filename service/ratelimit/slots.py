"""Slots of a tenant's work in flight: how many transfers or port connections it holds now.

`take` gives a slot when fewer than the limit are held, and a `release` to give it back; or
None when the limit is reached. Counted in this process's memory where one process serves the
API (SQLite: `MemorySlots`), in PostgreSQL where several do (`SharedSlots`, `running_slots`).

A shared slot is a row held by one process (`holder`, `seq`) with a lease. Taking one is one
transaction that takes an advisory lock on the tenant and kind (so takes of one tenant's kind
are serialised, and two processes cannot both see the last place free), deletes the rows whose
lease passed, counts the rest and inserts one only below the limit. Releasing deletes the row.
Every RENEW_S each process renews the leases of all it holds in one statement; a process that
crashed (or could not reach the database for LEASE_S) stops counting when its leases pass.

While the database cannot be reached, each process counts in its own memory for DOWN_S at a
time: the limit then holds per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.pg import driver_connection
from service.ratelimit.shared import UNREACHABLE, repeating

log = logging.getLogger(__name__)

Release = Callable[[], Awaitable[None]]

LEASE_S = 60.0
RENEW_S = 20.0
DOWN_S = 5.0
# A take waits its turn behind the tenant's other takes (a millisecond each); one slower than
# this is taken for the database being away.
TAKE_TIMEOUT_S = 5.0
# The advisory locks of slots, apart from every other (the two-key form, this first key).
LOCK_SPACE = int.from_bytes(b"slot")

# Serialises the takes of tenant $1's kind $2 until the transaction ends.
LOCK_SQL = "SELECT pg_advisory_xact_lock($3::int, hashtext($1::text || ':' || $2::text))"
# After LOCK_SQL, in its transaction: holder $3's slot $4 for tenant $1's kind $2, when fewer
# than $5 are held; its lease runs $6 seconds. Says how many were held and whether it was taken.
TAKE_SQL = """
WITH gone AS (
    DELETE FROM running_slots
    WHERE tenant_id = $1 AND kind = $2 AND lease_until <= statement_timestamp()
), live AS (
    SELECT count(*) AS held FROM running_slots
    WHERE tenant_id = $1 AND kind = $2 AND lease_until > statement_timestamp()
), taken AS (
    INSERT INTO running_slots (holder, seq, tenant_id, kind, lease_until)
    SELECT $3, $4, $1, $2, statement_timestamp() + make_interval(secs => $6::float8)
    FROM live WHERE live.held < $5::bigint
    RETURNING seq
)
SELECT live.held, EXISTS (SELECT 1 FROM taken) AS took FROM live
"""
RELEASE_SQL = "DELETE FROM running_slots WHERE holder = $1 AND seq = $2"
# Every slot holder $1 still holds ($2) runs another $3 seconds.
RENEW_SQL = """
UPDATE running_slots SET lease_until = statement_timestamp() + make_interval(secs => $3::float8)
WHERE holder = $1 AND seq = ANY($2::bigint[])
"""


class MemorySlots:
    """Every slot this process holds, counted by tenant and kind."""

    def __init__(self) -> None:
        self._held: Counter[tuple[str, str]] = Counter()

    async def take(self, tenant_id: str, kind: str, limit: int) -> Release | None:
        key = (tenant_id, kind)
        if self._held[key] >= limit:
            return None
        self._held[key] += 1
        return functools.partial(self._release, key)

    def held(self, tenant_id: str, kind: str) -> int:
        return self._held[(tenant_id, kind)]

    async def _release(self, key: tuple[str, str]) -> None:
        self._held[key] -= 1
        if self._held[key] <= 0:
            del self._held[key]


class SharedSlots:
    def __init__(self, engine: AsyncEngine, lease_s: float = LEASE_S) -> None:
        self.engine = engine
        self.lease_s = lease_s
        self.holder = secrets.token_hex(16)
        self._seq = itertools.count(1)
        self._held: set[int] = set()  # what this process renews
        self._alone = MemorySlots()
        self._alone_until = 0.0

    async def take(self, tenant_id: str, kind: str, limit: int) -> Release | None:
        if time.monotonic() < self._alone_until:
            return await self._alone.take(tenant_id, kind, limit)
        seq = next(self._seq)
        try:
            took = await self._take_sql(tenant_id, kind, seq, limit)
        except UNREACHABLE as exc:
            log.warning("running slots: counted in this process for %g s: %s", DOWN_S, exc)
            self._alone_until = time.monotonic() + DOWN_S
            return await self._alone.take(tenant_id, kind, limit)
        if not took:
            return None
        self._held.add(seq)
        return functools.partial(self._release, seq)

    async def _take_sql(self, tenant_id: str, kind: str, seq: int, limit: int) -> bool:
        async with asyncio.timeout(TAKE_TIMEOUT_S), driver_connection(self.engine) as conn:
            async with conn.transaction():
                await conn.execute(LOCK_SQL, tenant_id, kind, LOCK_SPACE)
                row = await conn.fetchrow(
                    TAKE_SQL, tenant_id, kind, self.holder, seq, limit, self.lease_s
                )
        return bool(row["took"])

    async def _release(self, seq: int) -> None:
        # Not renewed from now on, whatever the delete does: a slot whose row could not be
        # deleted stops counting when its lease passes.
        self._held.discard(seq)
        try:
            async with driver_connection(self.engine) as conn:
                await conn.execute(RELEASE_SQL, self.holder, seq)
        except UNREACHABLE as exc:
            log.warning("running slots: slot %d left to its lease: %s", seq, exc)

    async def renew(self) -> None:
        if not self._held:
            return
        async with driver_connection(self.engine) as conn:
            await conn.execute(RENEW_SQL, self.holder, list(self._held), self.lease_s)

    def renewing(self, every_s: float = RENEW_S) -> contextlib.AbstractAsyncContextManager[None]:
        """For the length of the block, the leases of this process's slots are renewed every
        `every_s`."""
        return repeating(every_s, self.renew, "running slots: leases not renewed")
