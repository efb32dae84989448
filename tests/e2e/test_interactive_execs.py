"""Interactive execs on gVisor: stdin written to a running exec through the API, answered
while it is still open, then closed; execs under a terminal (`tty`), resized and interrupted
with Ctrl-C; and the refusals around them."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from airlock_sdk import AsyncSandbox, OutputEvent, Sandbox, errors

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


# Reports its terminal, then waits for a SIGWINCH and reports the size it reads after.
WATCH_SIZE = """
import os, signal, sys, time
changed = []
signal.signal(signal.SIGWINCH, lambda *_: changed.append(1))
size = os.get_terminal_size()
print("tty", *[os.isatty(fd) for fd in (0, 1, 2)], f"{size.columns}x{size.lines}", flush=True)
print("token", os.environ["API_TOKEN"], file=sys.stderr, flush=True)
for _ in range(600):
    if changed:
        break
    time.sleep(0.05)
size = os.get_terminal_size()
print("winch", bool(changed), f"{size.columns}x{size.lines}", flush=True)
"""


async def test_a_tty_exec_sees_a_terminal_and_its_resize(airlock: Airlock, tenant: Tenant) -> None:
    url, key = airlock.server.url, tenant.key
    async with await AsyncSandbox.create(url=url, api_key=key, ttl=600) as sandbox:
        exec_id = await sandbox.start(
            ["python3", "-c", WATCH_SIZE],
            tty=True,
            rows=33,
            cols=111,
            secrets={"API_TOKEN": "tok-4242-secret"},
        )
        seen: list[OutputEvent] = []

        async def follow() -> None:
            async for event in sandbox.events(exec_id):
                seen.append(event)

        reader = asyncio.create_task(follow())
        await until(seen, "tty True True True 111x33", reader)
        await until(seen, "token ***", reader)  # stderr comes on the terminal, masked
        await sandbox.resize(exec_id, 50, 150)
        await until(seen, "winch True 150x50", reader)
        await asyncio.wait_for(reader, 60)
        assert seen[-1].kind == "exit" and seen[-1].exit["exit_code"] == 0, seen[-1]
        assert {e.kind for e in seen} == {"stdout", "exit"}, seen

        async with airlock.http(key) as http:
            stored = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{exec_id}")).json()
            audit = (await http.get("/v1/audit", params={"action": "exec.resize"})).json()
        assert stored["tty"] is True and stored["stderr"] == "", stored
        assert "winch True 150x50\r\n" in stored["stdout"], stored
        assert "tok-4242" not in stored["stdout"], stored
        resizes = [e for e in audit["items"] if e["target"] == exec_id]
        assert [(e["details"]["rows"], e["details"]["cols"]) for e in resizes] == [(50, 150)]


async def test_ctrl_c_interrupts_a_sleep_under_the_tty(airlock: Airlock, tenant: Tenant) -> None:
    url, key = airlock.server.url, tenant.key
    async with await AsyncSandbox.create(url=url, api_key=key, ttl=600) as sandbox:
        script = "trap 'echo caught' INT; echo ready; sleep 120; echo after $?"
        exec_id = await sandbox.start(["sh", "-c", script], tty=True, stdin_open=True)
        seen: list[OutputEvent] = []

        async def follow() -> None:
            async for event in sandbox.events(exec_id):
                seen.append(event)

        reader = asyncio.create_task(follow())
        await until(seen, "ready", reader)
        # Ctrl-C until the sleep has it (the first may come before the sleep started).
        for _ in range(20):
            await sandbox.write_stdin(exec_id, "\x03")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), 1)
            if reader.done():
                break
        await asyncio.wait_for(reader, 10)
        out = "".join(e.text for e in seen if e.kind == "stdout")
        # The sleep ended by SIGINT (130), the shell's trap ran, and the shell went on.
        assert "caught" in out and "after 130" in out, out
        assert seen[-1].exit["exit_code"] == 0, seen[-1]


async def test_tty_refusals_and_limits(airlock: Airlock, tenant: Tenant) -> None:
    url, key = airlock.server.url, tenant.key
    async with await AsyncSandbox.create(url=url, api_key=key, ttl=600) as sandbox:
        plain = await sandbox.start(["sleep", "30"])
        with pytest.raises(errors.TtyNotEnabled):  # no terminal to resize
            await sandbox.resize(plain, 40, 100)
        with pytest.raises(errors.ValidationFailed):  # a size without a terminal
            await sandbox.start(["true"], rows=40)
        with pytest.raises(errors.NotFound):
            await sandbox.resize("exe_nope", 40, 100)

        # The deadline holds under a terminal; the ended exec cannot be resized.
        slow = await sandbox.start(["sleep", "60"], tty=True, timeout=1)
        events = [e async for e in sandbox.events(slow)]
        assert events[-1].exit["outcome"] == "timeout", events
        with pytest.raises(errors.ExecNotRunning):
            await sandbox.resize(slow, 40, 100)

        tty = await sandbox.start(["sleep", "30"], tty=True)
        async with airlock.http(key) as http:
            path = f"/v1/sandboxes/{sandbox.id}/execs/{tty}/resize"
            r = await http.post(path, json={"rows": 0, "cols": 80})
            assert (r.status_code, r.json()["code"]) == (422, "validation_failed"), r.text
            r = await http.post(path, json={"rows": 30, "cols": 90})
            assert (r.status_code, r.json()) == (200, {"rows": 30, "cols": 90}), r.text

        def resize_with_the_sync_sdk() -> None:
            with Sandbox.connect(sandbox.id, url=url, api_key=key) as same:
                same.resize(tty, 31, 91)

        await asyncio.to_thread(resize_with_the_sync_sdk)
        reader = await AsyncSandbox.connect(
            sandbox.id, url=url, api_key=await sandbox.token(scopes=["sandboxes:read"])
        )
        try:
            with pytest.raises(errors.MissingScope):
                await reader.resize(tty, 40, 100)
        finally:
            await reader.close()
        other = await airlock.tenant()
        async with airlock.http(other.key) as http:
            r = await http.post(
                f"/v1/sandboxes/{sandbox.id}/execs/{tty}/resize", json={"rows": 9, "cols": 9}
            )
        assert r.status_code == 404
        async with airlock.http(key) as http:
            audit = (await http.get("/v1/audit", params={"action": "exec.resize"})).json()
        sizes = [(e["details"]["rows"], e["details"]["cols"]) for e in audit["items"]]
        assert (30, 90) in sizes and (31, 91) in sizes, sizes  # refused ones are not recorded
        assert (40, 100) not in sizes and (9, 9) not in sizes, sizes
