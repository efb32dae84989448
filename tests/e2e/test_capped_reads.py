"""Reads that are held whole stop at their cap, whatever sandbox code planted at the path: a link
to a file larger than the cap is refused by the target's own size, and a link to a device that
never ends (or a pipe) is cut at the cap, over the MCP tool `read_file` (served inside the API,
where its answer is gathered whole) and over `GET …/files/{path}?max_bytes=`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import Airlock, Tenant, run_exec

BIG = 3 << 20  # 3 MiB, past read_file's 1 MiB
# A 3 MiB file in /tmp with a link to it in /work, a link to a device that never ends, and a
# pipe a background writer keeps full.
PLANT = (
    f"head -c {BIG} /dev/zero | tr '\\0' a > /tmp/big && ln -s /tmp/big /work/link.txt && "
    "ln -s /dev/zero /work/zero && mkfifo /work/pipe"
)


async def planted(airlock: Airlock, tenant: Tenant) -> str:
    box = await airlock.sandbox(tenant)
    _, done = await run_exec(tenant.client, box.id, cmd=["sh", "-c", PLANT])
    assert done is not None and done.exit_code == 0, done
    return box.id


def mcp_client(airlock: Airlock, key: str) -> Client:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(120)
    )
    return Client(streamable_http_client(f"{airlock.server.url}/mcp", http_client=http))


async def tool_refusal(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    size = sum(len(getattr(part, "text", "")) for part in result.content)
    assert result.is_error, f"{tool} answered {size} characters instead of refusing"
    return "".join(part.text for part in result.content)


async def test_mcp_read_file_of_a_link_to_a_3_mib_file_is_refused_by_the_targets_size(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox_id = await planted(airlock, tenant)
    async with mcp_client(airlock, tenant.key) as client:
        refused = await tool_refusal(client, "read_file", sandbox_id=sandbox_id, path="link.txt")
        # The size is the target's, not the link's (8 bytes: "/tmp/big").
        assert "file_too_large" in refused and str(BIG) in refused, refused

        # A link to a device that never ends: cut at the cap, and answered, not held open.
        endless = await asyncio.wait_for(
            tool_refusal(client, "read_file", sandbox_id=sandbox_id, path="zero"), 60
        )
        assert "file_too_large" in endless, endless

        # What fits is read as before.
        await run_exec(
            tenant.client, sandbox_id, cmd=["sh", "-c", "echo small > /tmp/s; ln -s /tmp/s l2"]
        )
        result = await client.call_tool("read_file", {"sandbox_id": sandbox_id, "path": "l2"})
        assert not result.is_error, result.content
        assert result.structured_content["content"] == "small\n", result.structured_content


async def test_download_with_max_bytes_stops_at_the_cap_for_a_link_a_device_and_a_pipe(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox_id = await planted(airlock, tenant)
    # A writer that keeps the pipe full for as long as anyone reads it.
    await run_exec(
        tenant.client, sandbox_id, expect=202, cmd=["sh", "-c", "yes > /work/pipe"], wait=False
    )
    files = f"/v1/sandboxes/{sandbox_id}/files"
    async with airlock.http(tenant.key) as http:
        for path, size in (("link.txt", BIG), ("zero", None), ("pipe", None)):
            async with http.stream(
                "GET", f"{files}/work/{path}", params={"max_bytes": 1 << 20}
            ) as answer:
                assert answer.status_code == 413, (path, answer.status_code, answer.headers)
                problem = json.loads(await answer.aread())
            assert problem["code"] == "file_too_large", problem
            assert (problem.get("size"), problem["limit_bytes"]) == (size, 1 << 20), problem

        # Within the cap, the whole file with its length; without one, a stream as before.
        whole = await http.get(f"{files}/work/link.txt", params={"max_bytes": 4 << 20})
        assert whole.status_code == 200 and whole.headers["content-length"] == str(BIG)
        assert whole.content == b"a" * BIG
        streamed = await http.get(f"{files}/work/link.txt")
        assert streamed.status_code == 200 and len(streamed.content) == BIG
        too_much = await http.get(f"{files}/work/link.txt", params={"max_bytes": (16 << 20) + 1})
        assert too_much.status_code == 422, too_much.text
