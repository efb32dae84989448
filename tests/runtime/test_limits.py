"""Caps under hostile workloads: memory, processes, disk; the host and neighbours stay fine."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from service.runtime import ExecRequest, SandboxFailed, SandboxRuntime, SandboxSpec
from service.runtime.gvisor import GVisorRuntime, cgroups

from .conftest import SandboxFactory, init_name
from .helpers import MEMORY_HOG, sh


def files_named(root: Path, name: str) -> list[Path]:
    return [p for p in root.rglob(name) if p.is_file()]


async def test_memory_hog_ends_as_oom(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    """The exec says `oom` either way. Where the host's OOM killer ends the sandbox kernel
    (as measured under ptrace) the whole sandbox ends and is failed with that reason; where it
    ends only the hog's address space (as measured under systrap) the sandbox lives on and its
    next execs are not counted as OOM. Which one it picks is the host kernel's choice, so
    both are held to their own truth here rather than to the platform."""
    hog_box = await make_sandbox(memory_mib=64, disk_mib=16)
    result = await runtime.run(
        hog_box.id, ExecRequest(argv=["python3", "-c", MEMORY_HOG], timeout_s=60)
    )
    assert result.outcome == "oom"
    assert result.exit_code is None
    info = await runtime.get(hog_box.id)
    if info.state == "running":
        after = await sh(runtime, hog_box.id, "echo still here")
        if after.outcome != "exited":
            # The host's OOM killer may reach the sandbox kernel a moment after the hog's
            # exec ended: then the sandbox has ended since, and is held to that case below.
            info = await runtime.get(hog_box.id)
    if info.state == "running":
        assert (after.outcome, after.stdout) == ("exited", b"still here\n")
        # and the memory went back: the cap still holds a smaller allocation
        fits = await sh(runtime, hog_box.id, "python3 -c 'bytearray(16 << 20); print(1)'")
        assert (fits.outcome, fits.stdout) == ("exited", b"1\n")
        return
    assert info.state == "failed" and info.failure_reason == "oom"
    with pytest.raises(SandboxFailed) as failed:
        await sh(runtime, hog_box.id, "true")
    assert failed.value.reason == "oom"


async def test_an_oom_in_a_shell_child_is_the_execs_oom(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    """The hog under a shell that passes its failure on: still `oom`; an exec whose own
    process succeeds after its child was OOM-killed is `exited`."""
    box = await make_sandbox(memory_mib=64, disk_mib=16)
    hog = f"python3 -c '{MEMORY_HOG}'"
    under_shell = await sh(runtime, box.id, hog)
    assert under_shell.outcome == "oom"
    if (await runtime.get(box.id)).state != "running":
        return  # the whole sandbox went (ptrace): nothing runs after it, as above
    swallowed = await sh(runtime, box.id, f"{hog}; echo code $?")
    if swallowed.outcome in ("killed", "oom"):
        # The sandbox died of the first kill a moment after that exec ended (the one that
        # found it gone is `killed`), or the killer took the sandbox kernel this time (`oom`):
        # either way the sandbox failed `oom`.
        info = await runtime.get(box.id)
        assert (info.state, info.failure_reason) == ("failed", "oom")
        return
    assert (swallowed.outcome, swallowed.exit_code) == ("exited", 0)
    code = int(swallowed.stdout.removeprefix(b"code "))
    assert code != 0


async def test_huge_single_allocation_fails_inside(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    box = await make_sandbox(memory_mib=64, disk_mib=16)
    result = await runtime.run(
        box.id, ExecRequest(argv=["python3", "-c", "bytearray(8 << 30)"], timeout_s=60)
    )
    assert result.outcome == "exited"
    assert b"MemoryError" in result.stderr
    assert (await sh(runtime, box.id, "echo still here")).stdout == b"still here\n"


async def test_fork_bomb_stalls_at_the_process_cap(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    bomb_box, neighbour = await make_sandbox(pids=48), await make_sandbox()
    bomb = await runtime.exec(
        bomb_box.id, ExecRequest(argv=["sh", "-c", "f() { f | f & }; f; sleep 30"], timeout_s=60)
    )
    await asyncio.sleep(1.5)
    # the bomb's processes stay under the cap (counted by root, which the cap does not bind;
    # the sandbox kernel's own host tasks are capped too, so the count may have to wait for a
    # moment when the bomb holds them all)
    for _ in range(10):
        count = await sh(runtime, bomb_box.id, "ls -d /proc/[0-9]* 2>/dev/null | wc -l", user="0:0")
        if count.outcome == "exited" and count.exit_code == 0 and count.stdout.strip():
            break
        await asyncio.sleep(0.5)
    assert count.outcome == "exited" and count.exit_code == 0, count
    assert int(count.stdout) <= 48 + 4
    # a neighbour sandbox and the host still answer
    assert (await sh(runtime, neighbour.id, "echo fine")).stdout == b"fine\n"
    host = await asyncio.create_subprocess_exec("true")
    assert await host.wait() == 0
    await bomb.kill()
    assert (await bomb.wait()).outcome == "killed"
    info = await runtime.get(bomb_box.id)
    if info.state == "failed":
        # Fork churn can reach the host's task backstop before the kill lands (under ptrace a
        # guest process costs several host tasks): then the sandbox is ended as a whole, with
        # the reason given, and refuses further work with a typed error.
        assert info.failure_reason == "pids"
        with pytest.raises(SandboxFailed):
            await runtime.run(bomb_box.id, ExecRequest(argv=["true"]))
        return
    after = await runtime.run(bomb_box.id, ExecRequest(argv=["ps", "-e", "-o", "comm="]))
    assert set(after.stdout.decode().split()) == {init_name(runtime), "ps"}, after


async def test_disk_fill_gets_enospc_inside(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory, state_dir: Path
) -> None:
    box = await make_sandbox(disk_mib=16)
    fill = await sh(runtime, box.id, "dd if=/dev/zero of=/work/fill bs=1M count=64")
    assert fill.exit_code != 0
    assert b"No space left on device" in fill.stderr
    tmp_fill = await sh(runtime, box.id, "dd if=/dev/zero of=/tmp/fill bs=1M count=64")
    assert b"No space left on device" in tmp_fill.stderr
    # nothing reached the host's disk
    assert not await asyncio.to_thread(files_named, state_dir, "fill")
    # the sandbox survives and can free space again
    assert (await sh(runtime, box.id, "rm /work/fill && echo ok")).stdout == b"ok\n"


async def test_caps_are_set_on_the_host(gvisor: GVisorRuntime) -> None:
    spec = SandboxSpec(vcpus=0.5, memory_mib=200, disk_mib=40, pids=48)
    box = await gvisor.create("default", spec)
    try:
        stats = await gvisor.stats(box.id)
        assert stats.memory_limit_bytes >= 200 << 20
        assert stats.pids_limit >= 48
        quota = cgroups.Cgroup(gvisor.cgroup_path(box.id)).cpu_quota()
        assert quota == 0.5  # the sandbox kernel's own CPU counts inside the guest's quota
        limits = await sh(gvisor, box.id, "ulimit -n; ulimit -f")
        assert limits.stdout.split()[0] == b"4096"
        # exactly its memory, the sandbox kernel inside it; and its own CPU count
        assert stats.memory_limit_bytes == 200 << 20
        seen = await sh(gvisor, box.id, "grep MemTotal /proc/meminfo; nproc")
        assert seen.stdout.split()[1::2] == [b"204800", b"1"], seen
        # The cpuset it started on was widened once it ran: the quota is the cap.
        assert cgroups.Cgroup(gvisor.cgroup_path(box.id)).cpus() == cgroups.Cgroup("/").cpus()
    finally:
        await gvisor.destroy(box.id)


async def test_an_operator_may_trade_the_exact_cpu_count(gvisor: GVisorRuntime) -> None:
    """AIRLOCK_EXACT_NPROC=false: runsc's own count from the quota, at least 2."""
    gvisor.exact_nproc = False
    try:
        box = await gvisor.create("default", SandboxSpec(vcpus=1, memory_mib=128, disk_mib=16))
    finally:
        gvisor.exact_nproc = True
    try:
        seen = await sh(gvisor, box.id, "nproc")
        assert int(seen.stdout) == min(2, len(os.sched_getaffinity(0))), seen
    finally:
        await gvisor.destroy(box.id)
