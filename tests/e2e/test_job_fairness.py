"""The template builder (one slot for every tenant) takes tenants in turns: a tenant that
queued several slow builds does not hold back another tenant's build behind all of them."""

from __future__ import annotations

import asyncio
import secrets
from datetime import datetime

import httpx

from tests.e2e.conftest import Airlock

BOUND_S = 240.0  # only keeps a broken build finite


async def post_build(http: httpx.AsyncClient, setup: list[list[str]]) -> str:
    name = f"f{secrets.token_hex(4)}"
    r = await http.post("/v1/templates", json={"name": name, "setup": setup})
    assert r.status_code == 202, r.text
    return name


async def started_at(http: httpx.AsyncClient, name: str) -> datetime:
    """When the build of `name` started, once it has ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BOUND_S
    while True:
        version = (await http.get(f"/v1/templates/{name}")).json()["versions"][-1]
        if version["state"] in ("ready", "failed"):
            assert version["state"] == "ready", version
            return datetime.fromisoformat(version["started_at"])
        assert loop.time() < deadline, version
        await asyncio.sleep(0.3)


async def test_one_tenants_backlog_does_not_hold_back_anothers_build(airlock: Airlock) -> None:
    a, b = await airlock.tenant(), await airlock.tenant()
    async with airlock.http(a.key) as http_a, airlock.http(b.key) as http_b:
        backlog = [await post_build(http_a, [["sleep", "3"]]) for _ in range(3)]
        other = await post_build(http_b, [["true"]])
        a_starts = [await started_at(http_a, name) for name in backlog]
        b_start = await started_at(http_b, other)
    print(f"\nA's builds started {[t.time() for t in a_starts]}, B's {b_start.time()}")
    assert a_starts[0] < b_start < a_starts[1] < a_starts[2]
