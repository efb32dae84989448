"""An exec that prints nothing for a while keeps its event stream alive with SSE comments, which
the SDK's readers skip."""

from __future__ import annotations

import asyncio

import httpx
from airlock_sdk import AsyncSandbox, Sandbox

from service.execs.service import KEEPALIVE_S
from tests.e2e.conftest import Airlock, Tenant

SILENT_S = KEEPALIVE_S + 2


async def test_a_silent_exec_keeps_its_stream_alive(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    url = airlock.server.url
    box = await AsyncSandbox.connect(sandbox.id, url=url, api_key=tenant.key)
    exec_id = await box.start(["sh", "-c", f"sleep {SILENT_S:.0f}; echo done"])

    async def raw_lines() -> list[str]:
        # As through a proxy that cuts a connection silent for a little more than the interval.
        timeout = httpx.Timeout(10, read=KEEPALIVE_S + 1)
        async with airlock.http(tenant.key) as http:
            path = f"/v1/sandboxes/{sandbox.id}/execs/{exec_id}/events"
            async with http.stream("GET", path, timeout=timeout) as response:
                return [line async for line in response.aiter_lines()]

    async def read_async() -> list[tuple[str, str, int | None]]:
        return [(e.kind, e.text, e.exit.get("exit_code")) async for e in box.events(exec_id)]

    def read_sync() -> list[tuple[str, str, int | None]]:
        with Sandbox.connect(sandbox.id, url=url, api_key=tenant.key) as same:
            return [(e.kind, e.text, e.exit.get("exit_code")) for e in same.events(exec_id)]

    try:
        lines, from_async, from_sync = await asyncio.gather(
            raw_lines(), read_async(), asyncio.to_thread(read_sync)
        )
    finally:
        await box.close()
    comments = [line for line in lines if line.startswith(":")]
    assert comments and lines.index(comments[0]) < lines.index("event: stdout"), lines
    expected = [("stdout", "done\n", None), ("exit", "", 0)]
    assert from_async == expected and from_sync == expected, (from_async, from_sync)
