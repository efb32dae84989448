"""Exec: results as data, stdio, cwd/env/user, streaming, deadline, kill, output cap."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from service.runtime import ExecNotFound, ExecRequest, SandboxInfo, SandboxRuntime, SandboxSpec
from service.runtime.gvisor import GVisorRuntime

from .conftest import init_name
from .helpers import host_processes_mentioning, sh


async def test_non_zero_exit_is_data(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    result = await sh(runtime, sandbox.id, "echo out; echo err >&2; exit 7")
    assert result.outcome == "exited"
    assert result.exit_code == 7
    assert result.stdout == b"out\n"
    assert result.stderr == b"err\n"
    assert (result.stdout_bytes, result.stderr_bytes) == (4, 4)
    assert not result.stdout_truncated and not result.stderr_truncated


async def test_stdin_cwd_env_and_user(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    request = ExecRequest(
        argv=["sh", "-c", 'cat; echo "$GREETING"; pwd; id -u'],
        stdin=b"from stdin\n",
        env={"GREETING": "hello"},
        cwd="/tmp",
    )
    result = await runtime.run(sandbox.id, request)
    assert result.stdout == b"from stdin\nhello\n/tmp\n1000\n"
    as_root = await runtime.run(sandbox.id, ExecRequest(argv=["id", "-u"], user="0:0"))
    assert as_root.stdout == b"0\n"


async def test_coreutils_that_call_statx_work(
    runtime: SandboxRuntime, sandbox: SandboxInfo
) -> None:
    """`ls -l` and `stat` pass AT_NO_AUTOMOUNT to statx, which runsc refuses; the image's shim
    makes them work without being loaded into every other process."""
    result = await sh(
        runtime,
        sandbox.id,
        "touch /work/f && ls -l /work && stat -c %s /work/f && dir /work && vdir /work"
        " && ! grep -l statx /proc/self/maps",
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "total 0" and lines[1].endswith(" f") and lines[2] == "0"


async def test_output_streams_in_order(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    execution = await runtime.exec(
        sandbox.id, ExecRequest(argv=["sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.2; done"])
    )
    chunks = [chunk async for chunk in execution.output()]
    result = await execution.wait()
    assert b"".join(c.data for c in chunks if c.stream == "stdout") == b"1\n2\n3\n"
    assert len(chunks) >= 2  # arrived while the process ran, not in one piece at the end
    assert result.exit_code == 0


async def test_deadline_kills_the_whole_tree(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    # Durations no other process on the host would use: the host check below looks for them.
    tree = "sleep 30.0417 & sleep 31.0417 & sleep 32.0417"
    result = await sh(runtime, sandbox.id, tree, timeout_s=1)
    assert result.outcome == "timeout"
    assert result.exit_code is None
    left = await runtime.run(sandbox.id, ExecRequest(argv=["ps", "-e", "-o", "comm="]))
    assert "sleep" not in left.stdout.decode()
    assert [p for p in host_processes_mentioning(".0417") if "sleep" in p] == []
    assert not [p for p in host_processes_mentioning(sandbox.id) if " exec " in p]


async def test_infinite_loop_times_out(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    result = await sh(runtime, sandbox.id, "while :; do :; done", timeout_s=1)
    assert result.outcome == "timeout"
    after = await runtime.run(sandbox.id, ExecRequest(argv=["ps", "-e", "-o", "comm="]))
    assert set(after.stdout.decode().split()) == {init_name(runtime), "ps"}
    assert not [p for p in host_processes_mentioning(sandbox.id) if " exec " in p]


async def test_kill_exec(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    execution = await runtime.exec(sandbox.id, ExecRequest(argv=["sleep", "60"]))
    await asyncio.sleep(0.3)
    await runtime.kill_exec(sandbox.id, execution.id)
    result = await execution.wait()
    assert result.outcome == "killed"
    assert result.exit_code is None
    # the sandbox itself is fine
    assert (await sh(runtime, sandbox.id, "echo alive")).stdout == b"alive\n"


async def test_output_flood_is_capped(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    request = ExecRequest(
        argv=["sh", "-c", "head -c 5000000 /dev/zero; echo tail >&2"], output_cap=65536
    )
    result = await runtime.run(sandbox.id, request)
    assert result.outcome == "exited"
    assert len(result.stdout) == 65536
    assert result.stdout_bytes == 5_000_000
    assert result.stdout_truncated
    assert result.stderr == b"tail\n" and not result.stderr_truncated


async def test_endless_output_with_deadline(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    result = await runtime.run(sandbox.id, ExecRequest(argv=["yes"], timeout_s=1, output_cap=1024))
    assert result.outcome == "timeout"
    assert len(result.stdout) == 1024
    assert result.stdout_bytes > 1024 and result.stdout_truncated


async def test_concurrent_execs(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    results = await asyncio.gather(
        *(sh(runtime, sandbox.id, f"sleep 0.3; echo {i}") for i in range(4))
    )
    assert [r.stdout for r in results] == [f"{i}\n".encode() for i in range(4)]


async def test_missing_command_is_data(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    result = await sh(runtime, sandbox.id, "no-such-command")
    assert result.outcome == "exited"
    assert result.exit_code == 127


async def test_deadline_takes_escaped_children_but_not_other_work(
    runtime: SandboxRuntime, sandbox: SandboxInfo
) -> None:
    daemon = "(setsid sleep 4001 </dev/null >/dev/null 2>&1 &)"
    assert (await sh(runtime, sandbox.id, daemon)).exit_code == 0
    # a child that escapes with setsid but keeps the exec's output open is still taken
    result = await sh(runtime, sandbox.id, "(setsid sleep 4002 &); sleep 4003", timeout_s=1)
    assert result.outcome == "timeout"
    left = await runtime.run(sandbox.id, ExecRequest(argv=["ps", "-e", "-o", "args="]))
    assert b"sleep 4001" in left.stdout  # earlier, detached work survives
    assert b"sleep 4002" not in left.stdout and b"sleep 4003" not in left.stdout


async def test_kill_exec_after_a_restart(gvisor: GVisorRuntime, state_dir: Path) -> None:
    box = await gvisor.create("default", SandboxSpec(memory_mib=128, disk_mib=16))
    try:
        execution = await gvisor.exec(box.id, ExecRequest(argv=["sleep", "4100"]))
        await asyncio.sleep(0.3)
        restarted = await GVisorRuntime.open(state_dir)  # a new process would start like this
        await restarted.kill_exec(box.id, execution.id)
        assert (await execution.wait()).exit_code != 0
        left = await gvisor.run(box.id, ExecRequest(argv=["ps", "-e", "-o", "args="]))
        assert b"sleep 4100" not in left.stdout
        with pytest.raises(ExecNotFound):
            await restarted.kill_exec(box.id, execution.id)
        with pytest.raises(ExecNotFound):
            await restarted.kill_exec(box.id, "exec-../../../etc")
    finally:
        await gvisor.destroy(box.id)
