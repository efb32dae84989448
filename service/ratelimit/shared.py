"""Token buckets shared by every process of a deployment, in PostgreSQL (`request_buckets`).

A bucket's row holds its tokens and the database time they were counted at. A process takes
tokens by claims: one statement that refills the row, takes up to the number asked for (at
least one, as many as are there) and says how many it took and how many are left. It then
spends them on its own requests without asking again, for at most LEASE_S (so tokens are not
banked for later). What a process holds is already taken from the row, so however many
processes claim at once, no more requests pass than the bucket allows.

How many a claim asks for follows what is left and what this process used: twice what the
last claim served here, at most a quarter of what the row had left, so that near the limit
one process does not hold what another needs (one token a claim: one statement a request),
and far below it one statement serves up to MAX_CLAIM requests. A claim that finds no whole
token refuses this process's requests for the bucket until one is due, without asking again.
Concurrent requests for one bucket wait on one claim rather than each sending their own.

While the database cannot be reached (or a claim takes over CLAIM_TIMEOUT_S), each process
counts in its own memory for DOWN_S at a time: the limits hold per process, and no request (a
liveness probe least of all) fails or hangs because the count is away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import NamedTuple

from prometheus_client import Counter
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.pg import driver_connection
from service.ratelimit.buckets import MemoryBuckets, Rate

log = logging.getLogger(__name__)

LEASE_S = 1.0
MAX_CLAIM = 32
# A claim asks for at most this share of what the row had left.
SHARE_OF_LEFT = 4
# Rows not refilled for this long hold a whole burst again (BURST_S is far below it): dropped.
IDLE_S = 60.0
MAX_SHARES = 50_000
DOWN_S = 5.0
# A claim slower than this is taken for the database being away (a partition does not refuse
# connections, it leaves them hanging).
CLAIM_TIMEOUT_S = 1.0
# The database away (lost connections come out of driver_connection as OperationalError).
UNREACHABLE = (OperationalError, InterfaceError, OSError, TimeoutError)

CLAIMS = Counter(
    "airlock_rate_limit_claims",
    "Statements that took tokens from a request bucket shared in PostgreSQL",
)

# Take up to $4 tokens from bucket $1 (rate $2 a second, burst $3): a new row starts with a
# whole burst; an old one is refilled to the database's now, capped at the burst.
CLAIM_SQL = """
INSERT INTO request_buckets AS b (key, tokens, refilled_at, granted)
VALUES ($1, $3::float8 - least($4::int, floor($3::float8)),
        extract(epoch FROM clock_timestamp())::float8, least($4::int, floor($3::float8)))
ON CONFLICT (key) DO UPDATE SET (granted, tokens, refilled_at) = (
    SELECT took, level - took, now FROM (
        SELECT least($4::int, floor(level)) AS took, level, now FROM (
            SELECT least($3::float8, b.tokens + (now - b.refilled_at) * $2::float8) AS level, now
            FROM (SELECT extract(epoch FROM clock_timestamp())::float8 AS now) AS clock
        ) AS refilled
    ) AS claim
)
RETURNING granted, tokens
"""
FORGET_IDLE_SQL = """
DELETE FROM request_buckets
WHERE refilled_at < extract(epoch FROM clock_timestamp())::float8 - $1::float8
"""


class Claimed(NamedTuple):
    granted: int  # tokens this claim took
    tokens: float  # what the row holds after it


@dataclass(slots=True)
class _Share:
    """What this process holds of one bucket."""

    stock: int = 0
    lapses: float = 0.0  # time.monotonic() past which the stock is not spent
    granted: int = 0  # the last claim's tokens
    want: int = 1
    refused_until: float = 0.0
    claim: asyncio.Future[None] | None = None

    def idle(self, now: float) -> bool:
        return self.claim is None and now >= self.refused_until and now >= self.lapses


class SharedBuckets:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._shares: dict[str, _Share] = {}
        self._alone = MemoryBuckets()
        self._alone_until = 0.0

    async def take(self, key: str, rate: Rate) -> float:
        share = self._share(key)
        while True:
            now = time.monotonic()
            if now < self._alone_until:
                return await self._alone.take(key, rate)
            if now < share.refused_until:
                return share.refused_until - now
            if share.stock > 0 and now < share.lapses:
                share.stock -= 1
                return 0.0
            if share.claim is not None:
                await asyncio.shield(share.claim)
                continue
            await self._claim(key, rate, share)

    def _share(self, key: str) -> _Share:
        share = self._shares.get(key)
        if share is None:
            if len(self._shares) >= MAX_SHARES:
                now = time.monotonic()
                self._shares = {k: s for k, s in self._shares.items() if not s.idle(now)}
            share = self._shares[key] = _Share()
        return share

    async def _claim(self, key: str, rate: Rate, share: _Share) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        share.claim = done
        used = share.granted - share.stock  # of the last claim, here
        try:
            claimed = await self._claim_sql(key, rate, share.want)
        except UNREACHABLE as exc:
            log.warning("request buckets: counted in this process for %g s: %s", DOWN_S, exc)
            self._alone_until = time.monotonic() + DOWN_S
            return
        finally:
            share.claim = None
            done.set_result(None)
        now = time.monotonic()
        share.granted, share.stock, share.lapses = claimed.granted, claimed.granted, now + LEASE_S
        share.want = max(1, min(MAX_CLAIM, 2 * max(used, 1), int(claimed.tokens // SHARE_OF_LEFT)))
        if claimed.granted == 0:
            share.refused_until = now + (1 - claimed.tokens) / rate.per_s

    async def _claim_sql(self, key: str, rate: Rate, want: int) -> Claimed:
        CLAIMS.inc()
        async with asyncio.timeout(CLAIM_TIMEOUT_S), driver_connection(self.engine) as conn:
            row = await conn.fetchrow(CLAIM_SQL, key, rate.per_s, rate.burst, want)
        return Claimed(granted=row["granted"], tokens=row["tokens"])

    async def forget_idle(self) -> int:
        async with driver_connection(self.engine) as conn:
            status = await conn.execute(FORGET_IDLE_SQL, IDLE_S)
        return int(status.rsplit(" ", 1)[-1])

    def sweeping(self, every_s: float = IDLE_S) -> contextlib.AbstractAsyncContextManager[None]:
        """For the length of the block, the rows of buckets idle past IDLE_S are deleted every
        `every_s` (by every process: a delete that finds nothing costs nothing)."""
        return repeating(every_s, self.forget_idle, "request buckets: idle rows not deleted")


@contextlib.asynccontextmanager
async def repeating(
    every_s: float, call: Callable[[], Awaitable[object]], failed: str
) -> AsyncIterator[None]:
    """For the length of the block, `call()` every `every_s`; a call that fails is logged as
    `failed` (the database away for a while) and the next one tries again."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await call()
            except Exception:
                log.warning(failed, exc_info=True)

    task = asyncio.create_task(loop(), name=failed)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
