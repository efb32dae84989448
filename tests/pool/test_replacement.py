"""Two replicas on one database never hand out one member twice; stale and dead members are
replaced."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from litestar.testing import AsyncTestClient

from service.app import create_app
from tests.conftest import Api, Tenant
from tests.templates.conftest import BIG_QUOTAS, build_template, delete_sandbox, eventually

from .conftest import set_target, shared_template, sql, wait_ready

TARGET = 6


async def members(url: str, template: str) -> list[Any]:
    return await sql(
        url,
        "SELECT m.id, m.runtime_id, m.version_id, v.version FROM pool_members m "
        "JOIN pool_targets p ON p.id = m.pool_id JOIN templates t ON t.id = p.template_id "
        "JOIN template_versions v ON v.id = m.version_id "
        "WHERE t.name = :name AND m.state = 'ready'",
        name=template,
    )


async def test_two_replicas_never_share_a_member(
    papi: Api, pool_state: Path, own_database: str
) -> None:
    name = await shared_template(papi, setup=[["true"]])
    await set_target(papi, name, TARGET)
    await wait_ready(papi, name, TARGET)
    # a second API process on the same database and runtime host, without jobs
    replica_app = create_app(papi.settings, run_jobs=False)
    async with AsyncTestClient(app=replica_app, timeout=180) as other:
        replica = Api(client=other, settings=papi.settings)
        tenants = [await papi.tenant(**BIG_QUOTAS) for _ in range(4)]

        async def create(api: Api, tenant: Tenant) -> dict[str, Any]:
            r = await api.client.post(
                "/v1/sandboxes", json={"template": name}, headers=tenant.headers
            )
            assert r.status_code == 201, r.text
            return {"tenant": tenant, **r.json()}

        boxes = await asyncio.gather(
            *(create(api, t) for t in tenants for api in (papi, replica) for _ in range(3))
        )
        rows = await sql(
            own_database,
            "SELECT runtime_id, started_from FROM sandboxes WHERE id IN :ids",
            ids=[b["id"] for b in boxes],
        )
        assert len({r.runtime_id for r in rows}) == len(boxes) == 24
        assert any(r.started_from == "pool" for r in rows)
        for box in boxes:
            await delete_sandbox(papi, box["tenant"], box["id"])


async def test_members_of_an_older_version_are_replaced(papi: Api, own_database: str) -> None:
    name = await shared_template(papi, setup=[["true"]])
    await set_target(papi, name, 2)
    await wait_ready(papi, name, 2)
    old = {m.runtime_id for m in await members(own_database, name)}
    rebuilt = await build_template(papi, papi.operator, name, setup=[["echo", "v2"]])
    assert rebuilt["version"] == 2

    async def replaced() -> bool:
        now = await members(own_database, name)
        return len(now) == 2 and all(m.version == 2 for m in now)

    await eventually(replaced)
    alive = {s.id for s in await papi.app.state.runtimes.current.list_sandboxes()}
    assert not (old & alive)  # the stale members were destroyed, not leaked


async def test_a_member_that_dies_is_replaced(papi: Api, own_database: str) -> None:
    name = await shared_template(papi, setup=[["true"]])
    await set_target(papi, name, 2)
    await wait_ready(papi, name, 2)
    victim = (await members(own_database, name))[0]
    await papi.app.state.runtimes.current.destroy(victim.runtime_id)

    async def replaced() -> bool:
        now = await members(own_database, name)
        return len(now) == 2 and victim.id not in {m.id for m in now}

    await eventually(replaced)
