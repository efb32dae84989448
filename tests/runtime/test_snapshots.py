"""Snapshot a prepared sandbox and start new ones from it."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from service.runtime import (
    ExecRequest,
    NotSupported,
    SandboxBusy,
    SandboxRuntime,
    SnapshotNotFound,
)
from service.runtime.gvisor import GVisorRuntime

from .conftest import SandboxFactory, uses_agent
from .helpers import sh


async def test_snapshot_and_restore(runtime: SandboxRuntime, make_sandbox: SandboxFactory) -> None:
    source = await make_sandbox()
    prepared = "echo prepared > /work/state; (sleep 600 </dev/null >/dev/null 2>&1 &)"
    memory = runtime.snapshots_memory
    await sh(runtime, source.id, prepared)
    if drops_exec_processes(runtime):
        # runsc 0.0~20240729 restores PID 1's tree only: a daemon a `runsc exec` started
        # would be gone, from the source too; refused, naming it, until it ends
        with pytest.raises(SandboxBusy) as busy:
            await runtime.snapshot(source.id)
        assert "sleep" in str(busy.value)
        assert (await sh(runtime, source.id, "ps -e -o args=")).stdout.count(b"sleep 600") == 1
        ended = "pkill -x sleep; for i in $(seq 50); do pgrep -x sleep || exit 0; sleep 0.1; done"
        assert (await sh(runtime, source.id, ended + "; exit 1")).exit_code == 0
        memory = False  # nothing but PID 1 is left to carry over
    snapshot = await runtime.snapshot(source.id)
    try:
        # the source keeps running with its files and processes
        assert (await sh(runtime, source.id, "cat /work/state")).stdout == b"prepared\n"
        assert snapshot in await runtime.list_snapshots()
        clones = []
        for _ in range(2):
            clone = await runtime.create_from_snapshot(snapshot.id)
            clones.append(clone)
            assert clone.from_snapshot == snapshot.id
        randomness = set()
        hostnames = {(await sh(runtime, source.id, "hostname")).stdout}
        for clone in clones:
            hostnames.add((await sh(runtime, clone.id, "hostname")).stdout)
            state = await sh(runtime, clone.id, "cat /work/state; ps -e -o args=")
            assert state.stdout.startswith(b"prepared\n")
            # Processes come back only where a snapshot holds memory; files always do.
            assert (b"sleep 600" in state.stdout) is memory
            rand = await sh(runtime, clone.id, "head -c 16 /dev/urandom | od -An -tx1")
            randomness.add(rand.stdout)
            await sh(runtime, clone.id, "echo changed > /work/state")
        assert len(randomness) == 2  # fresh randomness in every sandbox from one snapshot
        assert len(hostnames) == 3  # and its own hostname, not the one it was checkpointed under
        # clones do not affect the source
        assert (await sh(runtime, source.id, "cat /work/state")).stdout == b"prepared\n"
        for clone in clones:
            await runtime.destroy(clone.id)
    finally:
        await runtime.delete_snapshot(snapshot.id)
    with pytest.raises(SnapshotNotFound):
        await runtime.create_from_snapshot(snapshot.id)


def drops_exec_processes(runtime: SandboxRuntime) -> bool:
    return (
        isinstance(runtime, GVisorRuntime)
        and not uses_agent(runtime)
        and not runtime.keeps_exec_processes
    )


async def test_a_snapshot_keeps_running_execs_or_refuses_them(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    """Through the exec agent a running exec goes on in the source and its process is in the
    sandboxes started from the snapshot; without it (`runsc exec`, BoxLite) the snapshot is
    refused while one runs."""
    box = await make_sandbox()
    running = await runtime.exec(box.id, ExecRequest(argv=["sleep", "30"]))
    if not uses_agent(runtime):
        with pytest.raises(SandboxBusy):
            await runtime.snapshot(box.id)
        await running.kill()
        await running.wait()
        return
    snapshot = await runtime.snapshot(box.id)
    try:
        clone = await runtime.create_from_snapshot(snapshot.id)
        try:
            assert b"sleep 30" in (await sh(runtime, clone.id, "ps -e -o args=")).stdout
        finally:
            await runtime.destroy(clone.id)
    finally:
        await runtime.delete_snapshot(snapshot.id)
    assert not running.done
    await running.kill()
    assert (await running.wait()).outcome == "killed"


async def test_snapshot_refuses_processes_holding_exec_output(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    """A process holding a `runsc exec` pipe (a host pipe) would make the checkpoint
    impossible to restore: refused. Execs through the agent have pipes inside the sandbox,
    which a checkpoint holds: the snapshot works and the process comes back."""
    if not runtime.snapshots_memory:
        pytest.skip(f"{runtime.name} snapshots hold files only: no process is restored")
    box = await make_sandbox()
    await sh(runtime, box.id, "sleep 600 & echo started")  # sleep keeps the exec's stdout
    if not uses_agent(runtime):
        with pytest.raises(SandboxBusy) as busy:
            await runtime.snapshot(box.id)
        assert "sleep" in str(busy.value)
        assert (await sh(runtime, box.id, "echo still fine")).stdout == b"still fine\n"
        return
    snapshot = await runtime.snapshot(box.id)
    try:
        clone = await runtime.create_from_snapshot(snapshot.id)
        try:
            for sandbox_id in (box.id, clone.id):
                after = await sh(runtime, sandbox_id, "ps -e -o args=")
                assert b"sleep 600" in after.stdout
        finally:
            await runtime.destroy(clone.id)
    finally:
        await runtime.delete_snapshot(snapshot.id)


async def test_work_arriving_during_a_snapshot_waits(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    box = await make_sandbox()
    snapshotting = asyncio.create_task(runtime.snapshot(box.id))
    await asyncio.sleep(0.05)  # the snapshot is under way
    during = await sh(runtime, box.id, "echo during")
    snapshot = await snapshotting
    try:
        assert (during.outcome, during.stdout) == ("exited", b"during\n")
        assert (await runtime.get(box.id)).state == "running"
    finally:
        await runtime.delete_snapshot(snapshot.id)


async def test_a_snapshot_moves_to_another_node(
    runtime: SandboxRuntime,
    make_sandbox: SandboxFactory,
    tmp_path_factory: pytest.TempPathFactory,
    state_dir: Path,
) -> None:
    """Exported from this runtime's state dir and imported into another's (another node on the
    same images): the same bytes on every export, and the files come back there."""
    if not runtime.supports("move_snapshots"):
        with pytest.raises(NotSupported):
            await runtime.import_snapshot("snap-000000000000000000000000", _chunks([b""]))
        return
    assert isinstance(runtime, GVisorRuntime)
    source = await make_sandbox()
    await sh(runtime, source.id, "echo carried > /work/state")
    snapshot = await runtime.snapshot(source.id)
    other_dir = tmp_path_factory.mktemp("other-node")
    (other_dir / "images").symlink_to(state_dir / "images")
    other = await GVisorRuntime.open(other_dir, runtime.platform, use_agent=runtime.use_agent)
    try:
        first = [chunk async for chunk in runtime.export_snapshot(snapshot.id)]
        again = b"".join([chunk async for chunk in runtime.export_snapshot(snapshot.id)])
        assert hashlib.sha256(b"".join(first)).digest() == hashlib.sha256(again).digest()

        # A stream that breaks half-way leaves nothing on the other node.
        async def broken() -> AsyncIterator[bytes]:
            yield first[0]
            raise ConnectionResetError("the connection broke")

        with pytest.raises(ConnectionResetError):
            await other.import_snapshot(snapshot.id, broken())
        with pytest.raises(SnapshotNotFound):
            await other.create_from_snapshot(snapshot.id)
        assert not [p for p in (other_dir / "gvisor" / "snapshots").iterdir()]

        moved = await other.import_snapshot(snapshot.id, _chunks(first))
        assert moved.id == snapshot.id and moved.image_digest == snapshot.image_digest
        clone = await other.create_from_snapshot(snapshot.id)
        try:
            assert (await sh(other, clone.id, "cat /work/state")).stdout == b"carried\n"
        finally:
            await other.destroy(clone.id)
    finally:
        await other.delete_snapshot(snapshot.id)
        await runtime.delete_snapshot(snapshot.id)
        await other.close()


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part
