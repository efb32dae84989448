"""The MCP tools driven by the `mcp` package's own client, against a real server on gVisor:
over stdio (`sbx mcp` as a subprocess) and over streamable HTTP (`/mcp` in the API)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import Airlock, Tenant, audit_events

SBX = str(Path(sys.executable).with_name("sbx"))
TOOLS = {
    "create_sandbox",
    "delete_sandbox",
    "get_sandbox",
    "run_command",
    "run_python",
    "write_file",
    "read_file",
    "list_files",
    "start_review",
    "get_review",
}


def http_client(airlock: Airlock, credential: str | None) -> Client:
    headers = {"Authorization": f"Bearer {credential}"} if credential else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120))
    return Client(streamable_http_client(f"{airlock.server.url}/mcp", http_client=http))


def stdio_client(airlock: Airlock, credential: str) -> Client:
    env = {
        "AIRLOCK_URL": airlock.server.url,
        "AIRLOCK_API_KEY": credential,
        "AIRLOCK_CONFIG": "/nonexistent/airlock.json",
    }
    return Client(StdioServerParameters(command=SBX, args=["mcp"], env=env))


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """The tool's structured answer; a tool error fails the test with its text."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    content = result.structured_content
    # A tool answering a list is wrapped as {"result": [...]}.
    return content["result"] if set(content) == {"result"} else content


async def refusal(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    return "".join(part.text for part in result.content)


async def round_trip(client: Client) -> str:
    """List the tools, make a sandbox, run code in it, write and read a file back, delete it."""
    tools = await client.list_tools()
    assert TOOLS <= {t.name for t in tools.tools}, [t.name for t in tools.tools]

    box = await call(client, "create_sandbox", ttl_s=300)
    assert box["state"] == "running" and box["id"].startswith("sbx_"), box
    sid = box["id"]

    ran = await call(
        client, "run_python", sandbox_id=sid, code="import sys; print(sum(range(10))); sys.exit(3)"
    )
    assert (ran["exit_code"], ran["outcome"], ran["stdout"]) == (3, "exited", "45\n"), ran

    written = await call(
        client, "write_file", sandbox_id=sid, path="notes/plan.txt", content="ünï\nline 2\n"
    )
    assert written == {"path": "/work/notes/plan.txt", "size": len("ünï\nline 2\n".encode())}
    shell = await call(client, "run_command", sandbox_id=sid, command="wc -l < notes/plan.txt")
    assert shell["stdout"].strip() == "2", shell
    back = await call(client, "read_file", sandbox_id=sid, path="/work/notes/plan.txt")
    assert (back["content"], back["encoding"]) == ("ünï\nline 2\n", "utf-8")
    binary = await call(
        client,
        "run_command",
        sandbox_id=sid,
        command=["python3", "-c", "open('b','wb').write(bytes(range(256)))"],
    )
    assert binary["exit_code"] == 0, binary
    raw = await call(client, "read_file", sandbox_id=sid, path="b")
    assert raw["encoding"] == "base64" and raw["size"] == 256, raw
    listed = await call(client, "list_files", sandbox_id=sid, dir="/work/notes")
    assert [entry["name"] for entry in listed] == ["plan.txt"], listed

    missing = await refusal(client, "read_file", sandbox_id=sid, path="nope.txt")
    assert "not_found" in missing, missing
    await call(client, "run_command", sandbox_id=sid, command="head -c 1100000 /dev/zero > big")
    too_big = await refusal(client, "read_file", sandbox_id=sid, path="big")
    assert "file_too_large" in too_big and "1100000" in too_big, too_big
    await call(client, "delete_sandbox", sandbox_id=sid)
    gone = await call(client, "get_sandbox", sandbox_id=sid)
    assert gone["state"] == "stopped", gone
    return sid


async def test_over_stdio(airlock: Airlock, tenant: Tenant) -> None:
    async with stdio_client(airlock, tenant.key) as client:
        await round_trip(client)


async def test_over_http_with_the_callers_credential_audited_like_rest(
    airlock: Airlock, tenant: Tenant
) -> None:
    async with http_client(airlock, tenant.key) as client:
        sid = await round_trip(client)
    events = [
        e
        for e in await audit_events(airlock, tenant)
        if sid in (e["target"], e["details"].get("sandbox_id"))
    ]
    actions = [e["action"] for e in events]
    assert {"sandbox.create", "exec.start", "file.write", "file.read", "sandbox.delete"} <= set(
        actions
    ), actions
    # Under the caller's key, from the caller's address, one request id per tool call.
    assert {e["actor"] for e in events} == {events[0]["actor"]}, events
    assert events[0]["actor"].startswith("key_") and {e["client"] for e in events} == {"127.0.0.1"}
    started = [e for e in events if e["action"] == "exec.start"]
    assert len({e["request_id"] for e in started}) == len(started) == 4, started


async def test_a_token_without_exec_is_refused(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post(
            "/v1/tokens", json={"scopes": ["sandboxes:read", "files:read"], "sandbox_id": box.id}
        )
        assert r.status_code == 201, r.text
        reader = r.json()["token"]
    async with http_client(airlock, reader) as client:
        refused = await refusal(client, "run_command", sandbox_id=box.id, command="touch /work/x")
        assert "missing_scope" in refused and "exec" in refused, refused
        # What the token may do, it does.
        listed = await call(client, "list_files", sandbox_id=box.id)
        assert listed == [], listed
    execs = await airlock.db.count("SELECT count(*) FROM execs WHERE sandbox_id = $1", box.id)
    assert execs == 0


async def test_the_endpoint_needs_a_credential(airlock: Airlock) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    async with httpx.AsyncClient(base_url=airlock.server.url) as http:
        r = await http.post(
            "/mcp", json=initialize, headers={"Accept": "application/json, text/event-stream"}
        )
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert json.loads(r.text)["code"] == "unauthenticated"
