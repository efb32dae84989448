"""On PostgreSQL every API process counts a tenant's transfers and port connections in flight
in the same table (`running_slots`): processes taking slots at once never hold more than the
limit together; a slot given back is free to any process; a crashed process's slots stop
counting when their leases pass, and the leases of a live process are renewed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.session import make_engine
from service.ids import new_id
from service.ratelimit.slots import SharedSlots
from tests.conftest import database_kind

pytestmark = pytest.mark.skipif(
    database_kind() != "postgresql",
    reason="one process on SQLite: counted in its memory",
)


@pytest.fixture
async def engines(database_url: str) -> AsyncIterator[list[AsyncEngine]]:
    """Two processes' connection pools on one database."""
    made = [make_engine(database_url) for _ in range(2)]
    yield made
    for engine in made:
        await engine.dispose()


async def rows(database_url: str, tenant_id: str) -> int:
    conn = await asyncpg.connect(database_url.replace("postgresql+asyncpg", "postgresql", 1))
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM running_slots WHERE tenant_id = $1", tenant_id
            )
        )
    finally:
        await conn.close()


async def test_processes_taking_at_once_hold_no_more_than_the_limit(
    engines: list[AsyncEngine], database_url: str
) -> None:
    one, two = SharedSlots(engines[0]), SharedSlots(engines[1])
    tenant = new_id("ten")
    taken = await asyncio.gather(
        *(slots.take(tenant, "transfers", 5) for _ in range(20) for slots in (one, two))
    )
    held = [release for release in taken if release is not None]
    assert len(held) == 5
    assert await rows(database_url, tenant) == 5
    # Another kind, and another tenant, are counted apart.
    port = await one.take(tenant, "port_connections", 1)
    assert port is not None
    assert await two.take(new_id("ten"), "transfers", 1) is not None
    await port()

    await held.pop()()
    # The place one process gave back is the other's as much as its own.
    again = await two.take(tenant, "transfers", 5)
    assert again is not None
    assert await one.take(tenant, "transfers", 5) is None
    for release in [*held, again]:
        await release()
    assert await rows(database_url, tenant) == 0


async def test_a_crashed_process_stops_counting_when_its_leases_pass(
    engines: list[AsyncEngine],
) -> None:
    crashed, alive = SharedSlots(engines[0], lease_s=1.0), SharedSlots(engines[1])
    tenant = new_id("ten")
    assert await crashed.take(tenant, "transfers", 2) is not None
    assert await crashed.take(tenant, "transfers", 2) is not None
    assert await alive.take(tenant, "transfers", 2) is None
    # The process is gone: nothing releases or renews its slots.
    await asyncio.sleep(1.2)
    assert await alive.take(tenant, "transfers", 2) is not None
    assert await alive.take(tenant, "transfers", 2) is not None
    assert await alive.take(tenant, "transfers", 2) is None


async def test_renewed_leases_keep_counting(engines: list[AsyncEngine]) -> None:
    holder, other = SharedSlots(engines[0], lease_s=1.0), SharedSlots(engines[1])
    tenant = new_id("ten")
    release = await holder.take(tenant, "port_connections", 1)
    assert release is not None
    async with holder.renewing(every_s=0.3):
        await asyncio.sleep(1.5)  # past the first lease
        assert await other.take(tenant, "port_connections", 1) is None
    await release()
    assert await other.take(tenant, "port_connections", 1) is not None
