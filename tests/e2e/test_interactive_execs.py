"""Interactive execs on gVisor: stdin written to a running exec through the API, answered
while it is still open, then closed; and the refusals around it."""

from __future__ import annotations

import asyncio

import pytest
from airlock_sdk import AsyncSandbox, OutputEvent, errors

from tests.e2e.conftest import Airlock, Tenant


async def until(events: list[OutputEvent], text: str, done: asyncio.Task[None]) -> None:
    """Wait until the stdout seen so far contains `text`."""
    for _ in range(300):
        if text in "".join(e.text for e in events if e.kind == "stdout"):
            return
        assert not done.done(), f"the exec ended before printing {text!r}: {events}"
        await asyncio.sleep(0.05)
    raise AssertionError(f"{text!r} never came: {events}")


async def test_a_python_repl_fed_through_stdin_answers_each_line(
    airlock: Airlock, tenant: Tenant
) -> None:
    url, key = airlock.server.url, tenant.key
    async with await AsyncSandbox.create(url=url, api_key=key, ttl=600) as sandbox:
        exec_id = await sandbox.start(["python3", "-i", "-q", "-u"], stdin_open=True)
        seen: list[OutputEvent] = []

        async def follow() -> None:
            async for event in sandbox.events(exec_id):
                seen.append(event)

        reader = asyncio.create_task(follow())
        await sandbox.write_stdin(exec_id, "x = 6 * 7\nprint('answer', x)\n")
        await until(seen, "answer 42", reader)  # answered while stdin is still open
        await sandbox.write_stdin(exec_id, "import os\nprint('pid', os.getpid() > 1)\n")
        await until(seen, "pid True", reader)
        await sandbox.write_stdin(exec_id, "", close=True)  # EOF: the REPL exits
        await asyncio.wait_for(reader, 60)
        end = seen[-1]
        assert end.kind == "exit" and end.exit["exit_code"] == 0, end
        with pytest.raises(errors.Conflict):  # the exec is over
            await sandbox.write_stdin(exec_id, "print(1)\n")

        async with airlock.http(key) as http:
            audit = (await http.get("/v1/audit", params={"action": "exec.stdin"})).json()
        writes = [e for e in audit["items"] if e["target"] == exec_id]
        assert sorted(e["details"]["bytes"] for e in writes)[-1] > 0
        assert any(e["details"]["close"] for e in writes)


async def test_stdin_writes_that_are_refused(airlock: Airlock, tenant: Tenant) -> None:
    url, key = airlock.server.url, tenant.key
    async with await AsyncSandbox.create(url=url, api_key=key, ttl=600) as sandbox:
        # Started without stdin_open: its stdin cannot be written.
        plain = await sandbox.start(["sleep", "5"])
        with pytest.raises(errors.StdinNotOpen):
            await sandbox.write_stdin(plain, "hello\n")

        # Closed once: no more writes.
        cat = await sandbox.start(["cat"], stdin_open=True)
        await sandbox.write_stdin(cat, "one\n", close=True)
        with pytest.raises(errors.Conflict):
            await sandbox.write_stdin(cat, "two\n")
        events = [e async for e in sandbox.events(cat)]
        assert "".join(e.text for e in events if e.kind == "stdout") == "one\n"

        # Stdin is bytes: a NUL goes through as it is.
        od = await sandbox.start(["od", "-An", "-c"], stdin_open=True)
        await sandbox.write_stdin(od, b"a\x00b", close=True)
        dumped = "".join([e.text async for e in sandbox.events(od) if e.kind == "stdout"])
        assert dumped.split() == ["a", "\\0", "b"], dumped

        # Another exec id, a token without `exec`, another tenant: refused before anything.
        with pytest.raises(errors.NotFound):
            await sandbox.write_stdin("exe_nope", "x")
        reader = await AsyncSandbox.connect(
            sandbox.id, url=url, api_key=await sandbox.token(scopes=["sandboxes:read"])
        )
        try:
            with pytest.raises(errors.MissingScope):
                await reader.write_stdin(plain, "x")
        finally:
            await reader.close()
        other = await airlock.tenant()
        async with airlock.http(other.key) as http:
            r = await http.post(f"/v1/sandboxes/{sandbox.id}/execs/{plain}/stdin", content=b"x")
        assert r.status_code == 404
