"""A node never takes a sandbox past its capacity: the create that would is a 503
`no_capacity` with Retry-After, and nothing of it is recorded (real runtime, this host's node
registered with a small capacity)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db.models import Node
from service.errors import NODE_FULL_HEADER
from service.nodes.leases import Leases, NodeInfo
from service.nodes.local import local_node_id
from tests.conftest import Api


@pytest.fixture
async def small_node(
    files_api: Api, sessionmaker: async_sessionmaker[AsyncSession]
) -> AsyncIterator[str]:
    node_id = local_node_id(files_api.settings)
    info = NodeInfo(
        id=node_id, address="http://127.0.0.1:1", runtime="gvisor", platform=None,
        vcpus=1.0, memory_mib=1024, disk_mib=10240, pids=1000, version="test",
    )  # fmt: skip
    await Leases(sessionmaker, lease_s=300).register(info)
    yield node_id
    async with sessionmaker() as session, session.begin():
        await session.execute(delete(Node).where(Node.id == node_id))


async def test_a_node_refuses_what_it_has_no_room_for(files_api: Api, small_node: str) -> None:
    tenant = await files_api.tenant()
    http, headers = files_api.client, tenant.headers
    first = await http.post(
        "/v1/sandboxes", json={"cpus": 1, "memory_mib": 512, "disk_mib": 256}, headers=headers
    )
    assert first.status_code == 201, first.text
    try:
        r = await http.post(
            "/v1/sandboxes", json={"cpus": 1, "memory_mib": 768, "disk_mib": 256}, headers=headers
        )
        assert r.status_code == 503, r.text
        assert r.json()["code"] == "no_capacity"
        assert int(r.headers["Retry-After"]) >= 1 and r.headers[NODE_FULL_HEADER] == "1"
        assert small_node in r.json()["detail"] and "512 of 1024 MiB" in r.json()["detail"]
        listed = await http.get("/v1/sandboxes", headers=headers)
        assert [s["id"] for s in listed.json()["items"]] == [first.json()["id"]]
    finally:
        gone = await http.delete(f"/v1/sandboxes/{first.json()['id']}", headers=headers)
        assert gone.status_code == 204
    # The room came back with the delete.
    r = await http.post(
        "/v1/sandboxes", json={"cpus": 1, "memory_mib": 768, "disk_mib": 256}, headers=headers
    )
    assert r.status_code == 201, r.text
    await http.delete(f"/v1/sandboxes/{r.json()['id']}", headers=headers)
