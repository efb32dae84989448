"""A suspended tenant's build work stops, on the real gVisor runtime with the jobs running: a
build it queued never starts, one under way is stopped (its sandbox destroyed), each says why,
and making the tenant active again brings none of them back; its templates' pools keep no
members while it is suspended.

The attack this answers: a tenant queued a build, the operator suspended the tenant, and the
build started a second later and finished `ready`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from service.tenants.suspension import REASON
from tests.conftest import Api, Tenant

from .conftest import build_template, eventually, unique


@pytest.fixture
async def versions(own_database: str) -> AsyncIterator[asyncpg.Connection]:
    """The database, read directly: a suspended tenant cannot ask for its own templates."""
    conn = await asyncpg.connect(own_database.replace("postgresql+asyncpg://", "postgresql://"))
    yield conn
    await conn.close()


async def version_of(conn: asyncpg.Connection, tenant: Tenant, name: str) -> dict[str, Any]:
    row = await conn.fetchrow(
        "SELECT v.state, v.error, v.started_at, v.build_log FROM template_versions v "
        "JOIN templates t ON t.id = v.template_id WHERE t.owner = $1 AND t.name = $2 "
        "ORDER BY v.version DESC LIMIT 1",
        tenant.id,
        name,
    )
    assert row is not None
    return dict(row)


async def queue_build(api: Api, tenant: Tenant, name: str, setup: list[list[str]]) -> None:
    r = await api.client.post(
        "/v1/templates", json={"name": name, "setup": setup}, headers=tenant.headers
    )
    assert r.status_code == 202, r.text


async def set_status(api: Api, tenant: Tenant, status: str) -> None:
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"status": status}, headers=api.operator
    )
    assert r.status_code == 200, r.text


async def test_a_build_queued_before_the_suspension_never_runs(
    tapi: Api, versions: asyncpg.Connection
) -> None:
    # Another tenant's build holds the builder's one slot meanwhile.
    other, tenant = await tapi.tenant(), await tapi.tenant()
    busy = unique("busy")
    await queue_build(tapi, other, busy, [["sleep", "6"]])

    async def building() -> bool:
        return (await version_of(versions, other, busy))["state"] == "building"

    await eventually(building)
    name = unique("queued")
    await queue_build(tapi, tenant, name, [["true"]])
    await set_status(tapi, tenant, "suspended")
    cancelled = await version_of(versions, tenant, name)
    assert (cancelled["state"], cancelled["error"]) == ("failed", REASON), cancelled

    async def other_done() -> bool:
        return (await version_of(versions, other, busy))["state"] in ("ready", "failed")

    await eventually(other_done)
    await set_status(tapi, tenant, "active")
    await asyncio.sleep(3)  # the builder, idle, polls every second
    after = await version_of(versions, tenant, name)
    assert (after["state"], after["error"], after["started_at"]) == ("failed", REASON, None)
    r = await tapi.client.get(f"/v1/templates/{name}", headers=tenant.headers)
    assert r.json()["versions"][0]["error"] == REASON, r.text


async def test_a_running_build_stops_when_its_tenant_is_suspended(
    tapi: Api, versions: asyncpg.Connection, template_state: Path
) -> None:
    tenant = await tapi.tenant()
    name = unique("long")
    await queue_build(tapi, tenant, name, [["sleep", "90"]])

    async def building() -> bool:
        return (await version_of(versions, tenant, name))["state"] == "building"

    await eventually(building)
    await eventually(lambda: _runsc(template_state), 30)  # its sandbox is up
    await set_status(tapi, tenant, "suspended")

    async def stopped() -> dict[str, Any] | None:
        row = await version_of(versions, tenant, name)
        return row if row["state"] != "building" else None

    # Far sooner than the 90 s step would end.
    ended = await eventually(stopped, 30)
    assert (ended["state"], ended["error"]) == ("failed", REASON), ended
    assert REASON in ended["build_log"]

    async def gone() -> bool:
        return not await _runsc(template_state)

    await eventually(gone, 30)  # the build's sandbox went with it
    await set_status(tapi, tenant, "active")
    await asyncio.sleep(3)
    assert (await version_of(versions, tenant, name))["state"] == "failed"
    assert not await _runsc(template_state)


async def test_a_suspended_tenants_pool_keeps_no_members(tapi: Api) -> None:
    tenant = await tapi.tenant()
    name = unique("pooled")
    built = await build_template(tapi, tenant.headers, name, setup=[["true"]])
    assert built["state"] == "ready", built
    r = await tapi.client.put(
        f"/v1/pool/{name}",
        params={"tenant": tenant.id},
        json={"size": "small", "target": 1},
        headers=tapi.operator,
    )
    assert r.status_code == 200, r.text

    async def ready(count: int) -> bool:
        overview = (await tapi.client.get("/v1/pool", headers=tapi.operator)).json()
        pool = next(p for p in overview["pools"] if p["template"] == name)
        return bool(pool["ready"] == count and pool["starting"] == 0)

    await eventually(lambda: ready(1))
    await set_status(tapi, tenant, "suspended")
    await eventually(lambda: ready(0), 30)
    await asyncio.sleep(2)  # several refill passes
    assert await ready(0)
    # The pool is the operator's standing order, not work that was cancelled: it fills again.
    await set_status(tapi, tenant, "active")
    await eventually(lambda: ready(1), 60)
    r = await tapi.client.put(
        f"/v1/pool/{name}",
        params={"tenant": tenant.id},
        json={"size": "small", "target": 0},
        headers=tapi.operator,
    )
    assert r.status_code == 200, r.text


async def _runsc(state: Path) -> bool:
    """Whether the runtime holds a sandbox of this module's server (one dir per sandbox)."""
    sandboxes = state / "gvisor" / "sandboxes"
    return sandboxes.exists() and any(sandboxes.iterdir())
