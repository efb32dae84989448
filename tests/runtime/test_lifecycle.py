"""Create, list, stats, destroy (leaving nothing behind), and reaping a crashed run's sandboxes."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import get_args

import pytest

from service.runtime import (
    Capability,
    InvalidSpec,
    SandboxNotFound,
    SandboxRuntime,
    SandboxSpec,
)
from service.runtime.gvisor import GVisorRuntime, cgroups, disk

from .conftest import REPO, SandboxFactory
from .helpers import host_processes_mentioning, sh


async def test_create_list_get_stats(runtime: SandboxRuntime, make_sandbox: SandboxFactory) -> None:
    box = await make_sandbox(labels={"tenant": "t1"})
    assert box.state == "running"
    assert box.spec.labels == {"tenant": "t1"}
    assert box.id in {s.id for s in await runtime.list_sandboxes()}
    assert (await runtime.get(box.id)).state == "running"
    stats = await runtime.stats(box.id)
    assert stats.memory_bytes > 0 and stats.pids >= 1
    assert stats.processes_limit == box.spec.pids


async def test_stats_see_processes_and_writable_space(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    """Processes are counted inside the sandbox (by its agent, or `runsc ps` without one);
    writable space only where an agent can look (None otherwise, never a guess)."""
    box = await make_sandbox()
    before = await runtime.stats(box.id)
    assert before.processes == 0, before
    await sh(
        runtime,
        box.id,
        "head -c 8388608 /dev/zero > /work/eight; "
        "(sleep 60 >/dev/null 2>&1 &); sleep 60 >/dev/null 2>&1 &",
    )
    after = await runtime.stats(box.id)
    assert after.processes is not None and after.processes >= 2, after
    if after.writable_bytes is None:
        assert isinstance(runtime, GVisorRuntime) and not runtime.use_agent
    else:
        assert before.writable_bytes is not None
        assert after.writable_bytes - before.writable_bytes >= 8 << 20, (before, after)
        assert after.writable_limit_bytes is not None
        assert after.writable_limit_bytes >= box.spec.disk_mib << 20


async def test_invalid_spec_is_rejected(runtime: SandboxRuntime) -> None:
    with pytest.raises(InvalidSpec):
        await runtime.create("default", SandboxSpec(memory_mib=1))
    with pytest.raises(InvalidSpec):
        await runtime.create("default", SandboxSpec(user="nobody"))


async def test_unknown_sandbox(runtime: SandboxRuntime) -> None:
    with pytest.raises(SandboxNotFound):
        await runtime.get("alk-000000000000000000000000")
    with pytest.raises(SandboxNotFound):
        await sh(runtime, "not-a-sandbox", "true")
    await runtime.destroy("alk-000000000000000000000000")  # idempotent


def test_gvisor_has_every_optional_capability(gvisor: GVisorRuntime) -> None:
    assert isinstance(gvisor, SandboxRuntime)
    assert all(gvisor.supports(capability) for capability in get_args(Capability))


async def test_destroy_leaves_nothing(gvisor: GVisorRuntime) -> None:
    box = await gvisor.create("default", SandboxSpec(memory_mib=128, disk_mib=32))
    await sh(gvisor, box.id, "(sleep 600 </dev/null >/dev/null 2>&1 &); echo x > /work/f")
    assert host_processes_mentioning(box.id)
    await gvisor.destroy(box.id)
    assert host_processes_mentioning(box.id) == []
    assert not (gvisor.root / "sandboxes" / box.id).exists()
    assert not cgroups.Cgroup(gvisor.cgroup_path(box.id)).exists()
    assert box.id not in {s.id for s in await gvisor.list_sandboxes()}
    with pytest.raises(SandboxNotFound):
        await gvisor.get(box.id)


CRASHING_OWNER = """
import asyncio, os, sys
from service.runtime.gvisor import GVisorRuntime
from service.runtime import SandboxSpec

async def main():
    rt = await GVisorRuntime.open(sys.argv[1])
    box = await rt.create("default", SandboxSpec(memory_mib=128, disk_mib=32))
    print(box.id, flush=True)
    os._exit(0)  # a crash: no destroy, no clean-up

asyncio.run(main())
"""


async def crashed_run(state_dir: Path) -> str:
    """The id of a sandbox created by a process that then died without cleaning up."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASHING_OWNER,
        str(state_dir),
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    out, _ = await proc.communicate()
    return out.decode().strip()


async def test_a_used_sandbox_of_a_previous_run_is_adopted(
    gvisor: GVisorRuntime, state_dir: Path
) -> None:
    survivor = await crashed_run(state_dir)
    try:
        assert (await gvisor.get(survivor)).state == "running"  # the new run claims it
        assert survivor not in await gvisor.reap_orphans()
        assert (await sh(gvisor, survivor, "echo kept")).stdout == b"kept\n"
    finally:
        await gvisor.destroy(survivor)


async def test_a_sandbox_of_a_previous_run_with_a_noexec_disk_runs_what_it_wrote(
    gvisor: GVisorRuntime, state_dir: Path
) -> None:
    """Disks were mounted `noexec`, where every program or library a sandbox wrote itself died
    with SIGSEGV (disk.py): one still running when its sandbox is adopted is remounted."""
    survivor = await crashed_run(state_dir)
    try:
        mount_point = gvisor.root / "sandboxes" / survivor / disk.MOUNT
        remount = await asyncio.create_subprocess_exec(
            "mount", "-o", "remount,noexec", str(mount_point)
        )
        assert await remount.wait() == 0
        assert os.statvfs(mount_point).f_flag & os.ST_NOEXEC
        wrote = await sh(gvisor, survivor, "cp /bin/true /work/true && /work/true && echo ran")
        assert wrote.stdout == b"ran\n", wrote
        assert not os.statvfs(mount_point).f_flag & os.ST_NOEXEC
    finally:
        await gvisor.destroy(survivor)


async def test_reap_orphans_of_a_previous_run(gvisor: GVisorRuntime, state_dir: Path) -> None:
    orphan = await crashed_run(state_dir)
    assert orphan.startswith("alk-")
    assert host_processes_mentioning(orphan)  # still running after its owner died
    mine = await gvisor.create("default", SandboxSpec(memory_mib=128, disk_mib=32))
    try:
        removed = await gvisor.reap_orphans()
        assert orphan in removed
        assert mine.id not in removed  # sandboxes of a live owner are left alone
        assert host_processes_mentioning(orphan) == []
        assert not cgroups.Cgroup(gvisor.cgroup_path(orphan)).exists()
        assert (await sh(gvisor, mine.id, "echo ok")).stdout == b"ok\n"
    finally:
        await gvisor.destroy(mine.id)


@pytest.mark.parametrize("stage", ["record", "bundle"])
async def test_a_create_cancelled_midway_leaves_nothing(gvisor: GVisorRuntime, stage: str) -> None:
    """A create cancelled while it is under way (a build stopped by its tenant's suspension, a
    caller gone) leaves no sandbox behind: once its record is saved (`record`), and once its
    bundle is written and runsc is starting it (`bundle`)."""
    sandboxes = gvisor.root / "sandboxes"
    before = set(sandboxes.iterdir()) if sandboxes.exists() else set()
    task = asyncio.create_task(gvisor.create("default", SandboxSpec(memory_mib=128, disk_mib=32)))
    marker = {"record": "sandbox.json", "bundle": "bundle/config.json"}[stage]
    made: set[Path] = set()
    while not task.done():
        made = set(sandboxes.iterdir()) - before if sandboxes.exists() else set()
        if any((d / marker).exists() for d in made):
            break
        await asyncio.sleep(0.005)
    assert not task.done(), "the create ended before the stage was reached"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (directory,) = made
    assert not directory.exists()
    assert host_processes_mentioning(directory.name) == []
    assert not cgroups.Cgroup(gvisor.cgroup_path(directory.name)).exists()
    assert directory.name not in {s.id for s in await gvisor.list_sandboxes()}
