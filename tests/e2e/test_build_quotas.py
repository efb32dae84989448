"""A template build runs in a sandbox of the tenant's: it must fit the tenant's sandbox quotas
and holds its share of them while it runs."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import httpx

from tests.e2e.conftest import Airlock

BOUND_S = 180.0  # only keeps a broken build finite


async def build(http: httpx.AsyncClient, setup: list[list[str]]) -> str:
    name = f"b{secrets.token_hex(4)}"
    r = await http.post("/v1/templates", json={"name": name, "setup": setup})
    assert r.status_code == 202, r.text
    return name


async def wait_state(http: httpx.AsyncClient, name: str, states: set[str]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BOUND_S
    while True:
        r = await http.get(f"/v1/templates/{name}")
        assert r.status_code == 200, r.text
        version = r.json()["versions"][-1]
        if version["state"] in states:
            return dict(version)
        assert loop.time() < deadline, version
        await asyncio.sleep(0.2)


async def test_a_build_without_room_in_the_quotas_fails_and_says_why(airlock: Airlock) -> None:
    tenant = await airlock.tenant(max_sandboxes=1)
    await airlock.sandbox(tenant)  # the one sandbox the tenant may have
    async with airlock.http(tenant.key) as http:
        name = await build(http, [["true"]])
        version = await wait_state(http, name, {"ready", "failed"})
    assert version["state"] == "failed", version
    assert "max_sandboxes" in (version["error"] or ""), version


async def test_a_running_build_holds_its_share_of_the_quotas(airlock: Airlock) -> None:
    tenant = await airlock.tenant(max_sandboxes=1)
    async with airlock.http(tenant.key) as http:
        name = await build(http, [["sleep", "8"]])
        await wait_state(http, name, {"building"})
        r = await http.post("/v1/sandboxes", json={"ttl_s": 300})
        if r.status_code == 201:
            tenant.sandboxes.append(r.json()["id"])
        assert r.status_code == 429, r.text
        assert r.json()["quota"] == "max_sandboxes"
        assert int(r.headers["Retry-After"]) >= 1
        assert (await wait_state(http, name, {"ready", "failed"}))["state"] == "ready"
        # The build's sandbox is gone with it: the room is the tenant's again.
        r = await http.post("/v1/sandboxes", json={"ttl_s": 300})
        assert r.status_code == 201, r.text
        tenant.sandboxes.append(r.json()["id"])
