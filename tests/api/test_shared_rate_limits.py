"""On PostgreSQL every API process counts a tenant's requests in the same buckets: two
processes together let through what one bucket allows, not twice that; far below the limit a
process claims tokens in batches instead of asking the database on every request."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.session import make_engine
from service.ids import new_id
from service.ratelimit.buckets import BURST_S, Rate
from service.ratelimit.shared import CLAIMS, MAX_CLAIM, SharedBuckets
from tests.conftest import Api, database_kind, served_over_tcp

pytestmark = pytest.mark.skipif(
    database_kind() != "postgresql", reason="one process on SQLite: counted in its memory"
)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


def claims() -> float:
    return CLAIMS._value.get()


async def test_two_api_processes_share_one_count(api: Api) -> None:
    tenant = await api.tenant(reads_per_s=2)
    async with served_over_tcp(api) as one, served_over_tcp(api) as two:
        started = time.monotonic()
        answers = await asyncio.gather(
            *(
                server.client.get("/v1/sandboxes", headers=tenant.headers)
                for _ in range(20)
                for server in (one, two)
            )
        )
        elapsed = time.monotonic() - started
    passed = sum(r.status_code == 200 for r in answers)
    assert {r.status_code for r in answers} == {200, 429}
    # One bucket's burst and rate for both processes (each alone would pass a burst: 20).
    assert 2 * BURST_S <= passed <= 2 * BURST_S + 2 * elapsed + 1


async def test_far_below_the_limit_a_statement_serves_many_requests(engine: AsyncEngine) -> None:
    buckets = SharedBuckets(engine)
    key, before = f"t:{new_id('ten')}:reads", claims()
    waits = [await buckets.take(key, Rate(1000)) for _ in range(400)]
    assert waits == [0.0] * 400
    made = claims() - before
    # Batches grow to MAX_CLAIM: a few statements to get there, then one per MAX_CLAIM.
    assert made <= 400 / MAX_CLAIM + 8, made


async def test_processes_claiming_at_once_pass_no_more_than_the_bucket(
    engine: AsyncEngine,
) -> None:
    processes = [SharedBuckets(engine) for _ in range(3)]
    key, rate = f"t:{new_id('ten')}:writes", Rate(10)
    started = time.monotonic()
    waits = await asyncio.gather(
        *(processes[n % 3].take(key, rate) for n in range(300)), return_exceptions=False
    )
    elapsed = time.monotonic() - started
    passed = waits.count(0.0)
    assert rate.burst <= passed <= rate.burst + rate.per_s * elapsed + 1, (passed, elapsed)
    # A refused request is told when a token is due (at 10 a second: within 0.1 s).
    assert all(0 < w <= 1 / rate.per_s + 0.01 for w in waits if w)


async def test_with_the_database_away_each_process_counts_alone(unused_tcp_port: int) -> None:
    engine = make_engine(f"postgresql+asyncpg://airlock@127.0.0.1:{unused_tcp_port}/airlock")
    try:
        buckets, rate = SharedBuckets(engine), Rate(2)
        waits = [await buckets.take("a:203.0.113.5", rate) for _ in range(int(rate.burst) + 3)]
    finally:
        await engine.dispose()
    # No error, no wait for the database: the process's own bucket.
    assert waits[: int(rate.burst)] == [0.0] * int(rate.burst)
    assert all(w > 0 for w in waits[int(rate.burst) :])
