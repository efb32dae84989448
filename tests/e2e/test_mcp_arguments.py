"""What a misspelled tool argument and the servers' own logs look like, with the `mcp` package's
client: over stdio (`sbx mcp` as a subprocess) and over streamable HTTP (`/mcp` in the API)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import Airlock, Tenant
from tests.e2e.test_mcp import refusal

SBX = str(Path(sys.executable).with_name("sbx"))


def stdio_client_logging_to(airlock: Airlock, credential: str, errlog: IO[str]) -> Client:
    env = {
        "AIRLOCK_URL": airlock.server.url,
        "AIRLOCK_API_KEY": credential,
        "AIRLOCK_CONFIG": "/nonexistent/airlock.json",
        # The client of this checkout, where the tests run from one.
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }
    return Client(stdio_client(StdioServerParameters(command=SBX, args=["mcp"], env=env), errlog))


async def misspellings_are_refused(client: Client) -> None:
    """A wrong name is an error naming it and the name meant; nothing runs with the default."""
    refused = await refusal(client, "create_sandbox", ttl=600)
    assert "unknown argument 'ttl'" in refused and "did you mean 'ttl_s'" in refused, refused
    refused = await refusal(
        client, "run_command", sandbox_id="sbx_x", command="true", timeout=5, tty=True
    )
    assert "'timeout'" in refused and "'timeout_s'" in refused and "'tty'" in refused, refused
    assert "sandbox_id, command, cwd, timeout_s, env, stdin" in refused, refused
    # Right names still work (the sandbox does not exist: the API's answer comes back).
    missing = await refusal(client, "get_sandbox", sandbox_id="sbx_nope")
    assert "not_found" in missing, missing


async def test_over_stdio_without_request_lines(
    airlock: Airlock, tenant: Tenant, tmp_path: Path
) -> None:
    log = tmp_path / "sbx-mcp.stderr"
    with log.open("w") as errlog:
        async with stdio_client_logging_to(airlock, tenant.key, errlog) as client:
            await misspellings_are_refused(client)
    # The tool calls made HTTP requests; stderr does not list them.
    assert "HTTP Request" not in log.read_text(), log.read_text()
    async with airlock.http(tenant.key) as http:
        listed = (await http.get("/v1/sandboxes")).json()
    assert listed["items"] == [], listed


async def test_over_http_without_a_line_per_request(airlock: Airlock, tenant: Tenant) -> None:
    """With the initialize handshake, as the MCP Inspector and most clients still connect: the
    stateless transport's end of each request is not logged as a session's end."""
    before = airlock.server.log().count("Terminating session")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tenant.key}"})
    transport = streamable_http_client(f"{airlock.server.url}/mcp", http_client=http)
    async with Client(transport, mode="legacy") as client:
        await misspellings_are_refused(client)
    assert airlock.server.log().count("Terminating session") == before, airlock.server.log()
    async with airlock.http(tenant.key) as http:
        listed = (await http.get("/v1/sandboxes")).json()
    assert listed["items"] == [], listed
