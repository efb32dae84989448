"""Execution contexts as an agent's client meets them, against a real server on gVisor:
`Sandbox.run_code` in the SDK (sync and async), `sbx code` from bash, and the `run_code` MCP
tool over stdio."""

from __future__ import annotations

import asyncio

from airlock_sdk import AsyncSandbox, Sandbox

from tests.e2e.conftest import Airlock, Tenant
from tests.e2e.test_mcp import call, stdio_client
from tests.e2e.test_sbx import bash


def sync_session(url: str, key: str) -> str:
    with Sandbox.create(ttl=600, url=url, api_key=key) as sandbox:
        first = sandbox.run_code("import math\nradius = 2\nprint('set')")
        assert first.ok and first.stdout == "set\n" and first.text is None, first
        area = sandbox.run_code("round(math.pi * radius ** 2, 3)")
        assert area.text == "12.566" and area.execution_count == 2, area
        assert area.context_id == first.context_id  # one context, kept by the object

        failed = sandbox.run_code("{}['missing']")
        assert not failed.ok and failed.error is not None, failed
        assert failed.error.name == "KeyError" and "'missing'" in str(failed.error), failed.error

        slow = sandbox.run_code("import time\ntime.sleep(30)", timeout=0.5)
        assert slow.timed_out and not slow.context_lost, slow
        assert sandbox.run_code("radius").text == "2"  # the deadline kept the context

        other = sandbox.create_context(env={"GREETING": "hi"})
        assert sandbox.run_code("import os; os.environ['GREETING']", context=other).text == "'hi'"
        assert not sandbox.run_code("radius", context=other).ok  # contexts share nothing
        states = {c["id"]: c["state"] for c in sandbox.contexts()}
        assert states == {first.context_id: "ready", other: "ready"}, states
        sandbox.delete_context(other)
        with Sandbox.connect(sandbox.id, url=url, api_key=key) as again:
            assert again.default_context() == (first.context_id, False)  # the live one
            assert again.run_code("radius").text == "2"
        return sandbox.id


async def test_the_sdk_runs_code_in_a_kept_context(airlock: Airlock, tenant: Tenant) -> None:
    await asyncio.to_thread(sync_session, airlock.server.url, tenant.key)
    url, key = airlock.server.url, tenant.key
    async with AsyncSandbox.create(ttl=600, url=url, api_key=key) as sandbox:
        context, made = await sandbox.default_context()
        assert made, context  # the sandbox had none
        await sandbox.run_code("total = sum(range(5))")
        done = await sandbox.run_code("total * 10")
        assert done.ok and done.text == "100" and done.context_id == context, done


async def test_sbx_code_keeps_variables_between_calls(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    script = f"""
set -u
sbx code {box.id} 'x = 5'
echo 'print(x * 2)' | sbx code {box.id}
sbx code {box.id} 'x + 1'
sbx code {box.id} '1/0'; echo "error=$?"
sbx code {box.id} --timeout 0.5 'import time; time.sleep(10)'; echo "timeout=$?"
sbx code {box.id} --json 'x' | jq -c '{{ok, text: .results[0]["text/plain"]}}'
sbx code {box.id} --new-context 'x'; echo "fresh=$?"
"""
    done = await bash(script, airlock, tenant)
    assert done.stdout.splitlines() == [
        "10",
        "6",
        "error=1",
        "timeout=124",
        '{"ok":true,"text":"5"}',
        "fresh=1",
    ], (done.stdout, done.stderr)
    assert "ZeroDivisionError: division by zero" in done.stderr, done.stderr
    assert "NameError: name 'x' is not defined" in done.stderr, done.stderr
    # A context was made by the first call and by --new-context, none by the others.
    assert done.stderr.count("sbx: new context ctx_") == 2, done.stderr


async def test_the_mcp_tool_runs_code_in_a_kept_context(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    async with stdio_client(airlock, tenant.key) as client:
        first = await call(client, "run_code", sandbox_id=box.id, code="answer = 6 * 7")
        assert first["ok"] and first["result"] is None, first
        again = await call(client, "run_code", sandbox_id=box.id, code="answer")
        assert again["result"] == "42" and again["context_id"] == first["context_id"], again
        broken = await call(client, "run_code", sandbox_id=box.id, code="raise ValueError('no')")
        assert not broken["ok"] and "ValueError: no" in broken["error"], broken
