"""Execs under a pseudo-terminal on gVisor: the exec agent gives the process a terminal as its
stdin, stdout and stderr and as its controlling terminal, resizes it (with SIGWINCH), types
Ctrl-D when its input closes, and kills what still holds it; `runsc exec` gives none, which is
refused before anything starts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from service.runtime import (
    ExecNotFound,
    ExecRequest,
    Execution,
    SandboxSpec,
    TtySize,
    TtyUnsupported,
)
from service.runtime.gvisor import GVisorRuntime

from .helpers import sh

SMALL = SandboxSpec(memory_mib=128, disk_mib=16, pids=64)

# Reports its terminal, then waits for a SIGWINCH and reports the size it reads after.
WATCH_SIZE = """
import os, signal, sys, time
changed = []
signal.signal(signal.SIGWINCH, lambda *_: changed.append(1))
size = os.get_terminal_size()
print("tty", *[os.isatty(fd) for fd in (0, 1, 2)], f"{size.columns}x{size.lines}", flush=True)
print("to stderr", file=sys.stderr, flush=True)
for _ in range(400):
    if changed:
        break
    time.sleep(0.05)
size = os.get_terminal_size()
print("winch", bool(changed), f"{size.columns}x{size.lines}", flush=True)
"""


@pytest.fixture
async def box(gvisor: GVisorRuntime) -> AsyncIterator[str]:
    info = await gvisor.create("default", SMALL)
    yield info.id
    await gvisor.destroy(info.id)


async def until_output(execution: Execution, seen: bytearray, text: bytes) -> None:
    async for chunk in execution.output():
        seen += chunk.data
        if text in seen:
            return
    raise AssertionError(f"{text!r} never came: {bytes(seen)!r}")


async def test_a_terminal_exec_sees_its_terminal_and_its_resize(
    gvisor: GVisorRuntime, box: str
) -> None:
    assert await gvisor.tty_available(box)
    request = ExecRequest(
        argv=["python3", "-c", WATCH_SIZE],
        tty=TtySize(rows=33, cols=111),
        exec_id="exec-0000000000000001",
        timeout_s=60,
    )
    execution = await gvisor.exec(box, request)
    seen = bytearray()
    await asyncio.wait_for(until_output(execution, seen, b"to stderr"), 30)
    await gvisor.resize_exec(box, execution.id, TtySize(rows=50, cols=150))
    result = await execution.wait()
    assert (result.exit_code, result.stderr) == (0, b""), result
    # Everything came on the terminal: stderr too, lines ended the terminal's way.
    assert result.stdout.splitlines() == [
        b"tty True True True 111x33",
        b"to stderr",
        b"winch True 150x50",
    ], result.stdout
    assert b"\r\n" in result.stdout
    with pytest.raises(ExecNotFound):  # it has ended
        await gvisor.resize_exec(box, execution.id, TtySize(rows=10, cols=10))


async def test_closing_a_terminal_input_types_ctrl_d(gvisor: GVisorRuntime, box: str) -> None:
    request = ExecRequest(argv=["cat"], tty=TtySize(), stdin=b"one\n", timeout_s=30)
    result = await gvisor.run(box, request)
    # The terminal echoes what was typed, then cat writes it back; Ctrl-D ends cat's input.
    assert (result.outcome, result.exit_code, result.stdout) == ("exited", 0, b"one\r\none\r\n")


async def test_a_killed_terminal_exec_leaves_nothing_holding_it(
    gvisor: GVisorRuntime, box: str
) -> None:
    # One child in the exec's session, one in a session of its own, adopted by PID 1, that
    # only the terminal it holds ties to the exec.
    script = "(setsid sleep 301 &); sleep 300 & echo started; wait"
    execution = await gvisor.exec(box, ExecRequest(argv=["sh", "-c", script], tty=TtySize()))
    await asyncio.wait_for(until_output(execution, bytearray(), b"started"), 30)
    running = (await sh(gvisor, box, "ps -e -o args=")).stdout.decode()
    assert "sleep 300" in running and "sleep 301" in running, running
    await execution.kill()
    assert (await execution.wait()).outcome == "killed"
    left = await sh(gvisor, box, "ps -e -o args=")
    assert "sleep 30" not in left.stdout.decode(), left.stdout


async def test_a_pipe_exec_has_no_terminal_to_resize(gvisor: GVisorRuntime, box: str) -> None:
    execution = await gvisor.exec(box, ExecRequest(argv=["sleep", "30"]))
    try:
        with pytest.raises(TtyUnsupported):
            await gvisor.resize_exec(box, execution.id, TtySize(rows=10, cols=10))
    finally:
        await execution.kill()


async def test_without_the_agent_a_terminal_is_refused(gvisor_runsc: GVisorRuntime) -> None:
    info = await gvisor_runsc.create("default", SMALL)
    try:
        assert not await gvisor_runsc.tty_available(info.id)
        with pytest.raises(TtyUnsupported):
            await gvisor_runsc.exec(info.id, ExecRequest(argv=["true"], tty=TtySize()))
        left = await sh(gvisor_runsc, info.id, "ps -e -o args=")
        assert "true" not in left.stdout.decode().split(), left.stdout
    finally:
        await gvisor_runsc.destroy(info.id)
