"""After a restart the pool is rebuilt from the database and no member leaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.runtime.gvisor import GVisorRuntime, destroy_left
from tests.templates.conftest import (
    BIG_QUOTAS,
    PROBE,
    eventually,
    new_state,
    run,
    serve,
)

from .conftest import set_target, shared_template, sql, wait_ready


async def runtime_ids(state: Path) -> set[str]:
    runtime = await GVisorRuntime.open(state)
    try:
        return {s.id for s in await runtime.list_sandboxes() if s.state == "running"}
    finally:
        await runtime.close()


async def recorded_ids(url: str) -> set[str]:
    rows = await sql(
        url,
        "SELECT runtime_id FROM sandboxes WHERE state = 'running' AND runtime_id IS NOT NULL "
        "UNION ALL SELECT runtime_id FROM pool_members WHERE state IN ('starting', 'ready')",
    )
    return {r.runtime_id for r in rows}


async def test_the_pool_is_rebuilt_from_the_database_after_a_restart(
    tmp_path_factory: pytest.TempPathFactory, own_database: str
) -> None:
    state = new_state(tmp_path_factory, "pool-restart")
    try:
        async with serve(state, own_database) as api:
            name = await shared_template(api)
            await set_target(api, name, 3)
            await wait_ready(api, name, 3)
            tenant = await api.tenant(**BIG_QUOTAS)
            r = await api.client.post(
                "/v1/sandboxes", json={"template": name, "ttl_s": 900}, headers=tenant.headers
            )
            assert r.json()["started_from"] == "pool"
            claimed = r.json()["id"]
            await wait_ready(api, name, 3)
        before = await recorded_ids(own_database)
        assert len(before) == 4 and await runtime_ids(state) == before

        async with serve(state, own_database) as api:
            status = await wait_ready(api, name, 3)
            assert status["ready"] == 3
            # the members that survived are the same ones, not three new ones beside them
            after = await recorded_ids(own_database)
            assert after == before
            assert await runtime_ids(state) == after
            assert (await run(api, tenant, claimed, PROBE))["stdout"] == "42\n"

            # a member that dies while the service is down is replaced, and not leaked
            victim = next(iter(before - {await _runtime_of(own_database, claimed)}))
        runtime = await GVisorRuntime.open(state)
        try:
            await runtime.destroy(victim)
        finally:
            await runtime.close()
        async with serve(state, own_database) as api:
            await wait_ready(api, name, 3)

            async def settled() -> bool:
                recorded = await recorded_ids(own_database)
                return victim not in recorded and await runtime_ids(state) == recorded

            await eventually(settled)
    finally:
        await destroy_left(state, snapshots=True, strict=True)


async def _runtime_of(url: str, sandbox_id: str) -> str:
    rows = await sql(url, "SELECT runtime_id FROM sandboxes WHERE id = :id", id=sandbox_id)
    return str(rows[0].runtime_id)
