"""The operator sees the nodes with what their sandboxes hold, and drains one; tenants see
nothing of them. The all-in-one server registers its own node."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import update

from service.app import create_app
from service.db import models
from service.ids import new_id
from service.nodes.leases import Leases
from service.nodes.local import describe
from service.runtime.holder import RuntimeHolder
from service.settings import Settings
from tests.conftest import Api, Tenant

pytestmark = pytest.mark.sqlite


async def node_of(api: Api, node_id: str) -> dict[str, Any]:
    r = await api.client.get("/v1/nodes", headers=api.operator)
    assert r.status_code == 200, r.text
    found = [n for n in r.json()["items"] if n["id"] == node_id]
    assert found, r.json()
    return found[0]


async def test_the_server_registers_its_node(settings: Settings, tmp_path: Path) -> None:
    own = msgspec.structs.replace(
        settings, node_id="test-node-a", node_heartbeat_s=0.2, node_lease_s=5
    )
    app = create_app(own, run_jobs=True)
    async with AsyncTestClient(app=app) as client:
        api = Api(client=client, settings=own)
        for _ in range(100):  # the heartbeat's first pass
            r = await client.get("/v1/nodes", headers=api.operator)
            if any(n["id"] == "test-node-a" for n in r.json()["items"]):
                break
            await asyncio.sleep(0.05)
        node = await node_of(api, "test-node-a")
    assert node["state"] == "ready"
    assert node["address"] == f"http://{own.host}:{own.port}"
    assert node["capacity"]["vcpus"] >= 1 and node["capacity"]["pids"] > 0
    assert node["lease_expires_at"] > node["registered_at"]


async def test_allocation_counts_the_nodes_live_sandboxes(
    api: Api, tenant: Tenant, sessionmaker: Any
) -> None:
    info = replace(
        describe(api.settings, RuntimeHolder.of(None), "test"),  # type: ignore[arg-type]
        id="busy-node",
    )
    await Leases(sessionmaker, 15).register(info)
    assert (await node_of(api, "busy-node"))["sandboxes"] == 0
    now = datetime.now(UTC)
    async with sessionmaker() as session, session.begin():
        for state, cpus, memory in (
            ("running", 2, 2048),
            ("creating", 1, 512),
            ("stopped", 4, 8192),
        ):
            session.add(
                models.Sandbox(
                    id=new_id("sbx"),
                    tenant_id=tenant.id,
                    node_id="busy-node",
                    state=state,
                    image="default",
                    size="small",
                    cpus=cpus,
                    memory_mib=memory,
                    disk_mib=1024,
                    network={"mode": "none"},
                    env={},
                    labels={},
                    ttl_s=60,
                    created_at=now,
                    updated_at=now,
                    expires_at=now,
                )
            )
    node = await node_of(api, "busy-node")
    assert node["sandboxes"] == 2  # the stopped one holds nothing
    assert node["allocated"] == {"vcpus": 3.0, "memory_mib": 2560, "disk_mib": 2048}


async def test_drain(api: Api, settings: Settings, sessionmaker: Any) -> None:
    info = replace(
        describe(settings, RuntimeHolder.of(None), "test"),  # type: ignore[arg-type]
        id="drain-me",
    )
    await Leases(sessionmaker, 15).register(info)
    r = await api.client.post("/v1/nodes/drain-me/drain", headers=api.operator)
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "draining"
    again = await api.client.post("/v1/nodes/drain-me/drain", headers=api.operator)
    assert again.status_code == 200 and again.json()["state"] == "draining"
    missing = await api.client.post("/v1/nodes/no-such-node/drain", headers=api.operator)
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"
    r = await api.client.get("/v1/audit", headers=api.operator, params={"limit": 5})
    assert any(e["action"] == "node.drain" and e["target"] == "drain-me" for e in r.json()["items"])
    # And back: placement may use it again.
    r = await api.client.post("/v1/nodes/drain-me/ready", headers=api.operator)
    assert (r.status_code, r.json()["state"]) == (200, "ready"), r.text
    r = await api.client.get("/v1/audit", headers=api.operator, params={"limit": 5})
    assert any(e["action"] == "node.ready" and e["target"] == "drain-me" for e in r.json()["items"])
    missing = await api.client.post("/v1/nodes/no-such-node/ready", headers=api.operator)
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/nodes"), ("POST", "/v1/nodes/any/drain"), ("POST", "/v1/nodes/any/ready")],
)
async def test_tenants_see_no_nodes(api: Api, tenant: Tenant, method: str, path: str) -> None:
    r = await api.client.request(method, path, headers=tenant.headers)
    assert r.status_code == 403, r.text


async def test_a_lost_node_is_not_drained(api: Api, sessionmaker: Any) -> None:
    info = replace(
        describe(api.settings, RuntimeHolder.of(None), "test"),  # type: ignore[arg-type]
        id="gone-node",
    )
    leases = Leases(sessionmaker, 15)
    await leases.register(info)
    async with sessionmaker() as session, session.begin():
        await session.execute(
            update(models.Node)
            .where(models.Node.id == "gone-node")
            .values(lease_expires_at=datetime.now(UTC) - timedelta(minutes=5))
        )
    assert "gone-node" in await leases.mark_lost()
    r = await api.client.post("/v1/nodes/gone-node/drain", headers=api.operator)
    assert r.status_code == 409, r.text
    r = await api.client.post("/v1/nodes/gone-node/ready", headers=api.operator)
    assert r.status_code == 409, r.text
    assert (await node_of(api, "gone-node"))["state"] == "lost"
