"""Pause and resume on gVisor keep what runs in the sandbox, or refuse and say what they could
not keep: a process started by the very first exec (before the exec agent said hello), an exec
still running (its deadline stops while paused), a sandbox found again by a restarted service;
processes started through `runsc exec`, which runsc ends at a restore, are named in a refusal."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from service.runtime import ExecRequest, SandboxBusy, SandboxSpec
from service.runtime.gvisor import GVisorRuntime

from .conftest import REPO
from .helpers import sh

SMALL = SandboxSpec(memory_mib=128, disk_mib=16, pids=64)


@pytest.fixture
async def fresh(gvisor: GVisorRuntime) -> AsyncIterator[str]:
    """A sandbox just made: its agent may not have said hello yet."""
    info = await gvisor.create("default", SMALL)
    yield info.id
    await gvisor.destroy(info.id)


async def processes(runtime: GVisorRuntime, sandbox_id: str) -> str:
    return (await sh(runtime, sandbox_id, "ps -e -o args=")).stdout.decode()


async def pause_and_resume(runtime: GVisorRuntime, sandbox_id: str) -> None:
    await runtime.pause(sandbox_id)
    assert (await runtime.get(sandbox_id)).state == "paused"
    await runtime.resume(sandbox_id)


async def test_what_the_first_exec_starts_outlives_a_pause(
    gvisor: GVisorRuntime, fresh: str
) -> None:
    # Sent at once, as a user's first exec comes: it waits for the agent, whose processes a
    # restore keeps (runsc ends those a `runsc exec` started, `nohup` or not).
    started = await sh(gvisor, fresh, "nohup sleep 4601 >/dev/null 2>&1 &")
    assert started.exit_code == 0, started
    for _ in range(2):
        await pause_and_resume(gvisor, fresh)
        assert "sleep 4601" in await processes(gvisor, fresh)


async def test_a_running_exec_goes_on_and_its_deadline_stops_while_paused(
    gvisor: GVisorRuntime, fresh: str
) -> None:
    # Prints, waits for a file the test writes after the resume, prints again: with a 3 s
    # deadline and 4 s paused it ends by itself, with all its output.
    script = "echo before; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo after"
    running = await gvisor.exec(fresh, ExecRequest(argv=["sh", "-c", script], timeout_s=3))
    await asyncio.sleep(0.5)
    await gvisor.pause(fresh)
    await asyncio.sleep(4)
    await gvisor.resume(fresh)
    assert not running.done
    assert (await sh(gvisor, fresh, "touch /tmp/go")).exit_code == 0
    result = await running.wait()
    assert (result.outcome, result.exit_code, result.stdout) == ("exited", 0, b"before\nafter\n")
    assert await gvisor.agent_ready(fresh, 0)


async def test_a_killed_exec_of_a_paused_sandbox_ends_once_it_runs(
    gvisor: GVisorRuntime, fresh: str
) -> None:
    running = await gvisor.exec(fresh, ExecRequest(argv=["sleep", "4602"], timeout_s=60))
    await asyncio.sleep(0.3)
    await gvisor.pause(fresh)
    await running.kill()  # held for the sandbox, not lost
    await gvisor.resume(fresh)
    assert (await running.wait()).outcome == "killed"
    assert "sleep 4602" not in await processes(gvisor, fresh)


LEAVING_OWNER = """
import asyncio, os, sys
from service.runtime.gvisor import GVisorRuntime
from service.runtime import ExecRequest, SandboxSpec

async def main():
    rt = await GVisorRuntime.open(sys.argv[1])
    box = await rt.create("default", SandboxSpec(memory_mib=128, disk_mib=16))
    assert await rt.agent_ready(box.id)
    argv = ["sh", "-c", "nohup sleep 4701 >/dev/null 2>&1 &"]
    assert (await rt.run(box.id, ExecRequest(argv=argv))).exit_code == 0
    print(box.id, flush=True)
    os._exit(0)  # a crash: the agent's pipes close with this process

asyncio.run(main())
"""


PAUSED_OWNER = """
import asyncio, os, sys
from service.runtime.gvisor import GVisorRuntime
from service.runtime import ExecRequest, SandboxSpec

async def main():
    rt = await GVisorRuntime.open(sys.argv[1])
    box = await rt.create("default", SandboxSpec(memory_mib=128, disk_mib=16))
    background = ["sh", "-c", "nohup sleep 4801 >/dev/null 2>&1 &"]
    assert (await rt.run(box.id, ExecRequest(argv=background))).exit_code == 0
    await rt.exec(box.id, ExecRequest(argv=["sleep", "4802"], timeout_s=600))
    await asyncio.sleep(0.3)
    await rt.pause(box.id)
    print(box.id, flush=True)
    os._exit(0)  # a crash while it is paused with an exec running

asyncio.run(main())
"""


async def test_a_restarted_service_resumes_without_the_execs_it_lost(
    gvisor: GVisorRuntime,
) -> None:
    """The service stopped while the sandbox was paused with an exec running: nobody follows
    that exec any more (its record ended with the service), so it ends at the resume, as it
    would have in a running sandbox; the background process goes on."""
    box = await left_by_a_crash(gvisor, PAUSED_OWNER)
    try:
        assert (await gvisor.get(box)).state == "paused"
        await gvisor.resume(box)
        assert await gvisor.agent_ready(box, 5)
        left = await processes(gvisor, box)
        assert "sleep 4801" in left and "sleep 4802" not in left, left
    finally:
        await gvisor.destroy(box)


async def left_by_a_crash(runtime: GVisorRuntime, script: str = LEAVING_OWNER) -> str:
    """A sandbox whose service died after its agent started `sleep 4701` in the background
    (or what `script` did)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        str(runtime.state_dir),
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    out, _ = await proc.communicate()
    box = out.decode().strip()
    assert box.startswith("alk-")
    assert not await runtime.agent_ready(box, 0)  # this process never held its pipes
    return box


async def test_a_restarted_service_pauses_what_the_agent_started(gvisor: GVisorRuntime) -> None:
    """Idle sleep after a restart: nothing went through `runsc exec` since the sandbox started,
    so the pause loses nothing, and the resume hands the agent a link again."""
    box = await left_by_a_crash(gvisor)
    try:
        await pause_and_resume(gvisor, box)
        assert await gvisor.agent_ready(box, 5)
        assert "sleep 4701" in await processes(gvisor, box)
    finally:
        await gvisor.destroy(box)


async def test_a_pause_names_what_runsc_exec_started(gvisor: GVisorRuntime) -> None:
    """Without the agent's link execs go through `runsc exec`, and a restore would end what
    they started: the pause is refused, naming what runs."""
    box = await left_by_a_crash(gvisor)
    try:
        assert (await sh(gvisor, box, "nohup sleep 4702 >/dev/null 2>&1 &")).exit_code == 0
        with pytest.raises(SandboxBusy) as busy:
            await gvisor.pause(box)
        assert "sleep" in str(busy.value)
        assert "sleep 4702" in await processes(gvisor, box)
    finally:
        await gvisor.destroy(box)
