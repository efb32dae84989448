"""Pause and resume of gVisor sandboxes: `runsc checkpoint` (which stops the sandbox) into a
snapshot of this runtime, `runsc delete`, and later `runsc restore` of that image in place.

The checkpoint is an ordinary snapshot (`<root>/snapshots/<id>/`, named in the sandbox's record
as `paused.snapshot`): in place it is restored into the same sandbox (same id, namespace and
policy) and then deleted, and since it is a snapshot it can also be exported to another node
and started there with `create_from_snapshot` when this node cannot take the sandbox back.
A paused sandbox keeps its record, bundle, network namespace and policy; it holds no process,
cgroup or share of the host memory budget. Its record says `paused` (with the checkpoint's
size), so a restarted service finds it again and the orphan reaper leaves it alone; destroying
it deletes its checkpoint. Processes come back as they were: background ones (`&`, `nohup`,
`setsid`, double forks), what execs still running started, and those execs themselves (the
agent's link is held across, and their deadlines stop meanwhile). On this runsc processes
started through `runsc exec` do not come back, so a pause is refused while any may run (as a
snapshot is); open TCP connections to outside are reset, and the pause names them
(`PauseInfo.connections_cut`, read from the sandbox's own tables just before: connections.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import records
from ..errors import SandboxBusy, SandboxFailed, SandboxRuntimeError
from ..types import PauseInfo, SandboxInfo
from .core import Core
from .execs import Execs
from .lifecycle import Lifecycle
from .snapshots import Snapshots, snapshot_meta
from .store import Sandbox

LEGACY_DIR = "paused"


def size_of(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())


@dataclass
class Pauses:
    """Pause and resume of `core`'s sandboxes: a checkpoint into a snapshot of their own."""

    core: Core
    lifecycle: Lifecycle
    snapshots: Snapshots
    execs: Execs

    async def pause(self, sandbox_id: str) -> PauseInfo:
        sandbox = self.core.store.usable(sandbox_id)
        if not self.lifecycle.can_checkpoint(sandbox):
            raise SandboxBusy(
                f"sandbox {sandbox_id} has a network on the host stack of its namespace, "
                "which this runsc cannot checkpoint"
            )
        async with sandbox.lock:
            sandbox.ready.clear()
            try:
                await self.snapshots.check_quiet(sandbox)
                return await self._checkpoint_and_stop(sandbox)
            finally:
                sandbox.ready.set()

    async def resume(self, sandbox_id: str) -> SandboxInfo:
        sandbox = self.core.store.load(sandbox_id)
        if sandbox.meta.failure_reason:
            raise SandboxFailed(sandbox_id, sandbox.meta.failure_reason)
        if not sandbox.meta.paused:
            raise SandboxBusy(f"sandbox {sandbox_id} is not paused")
        async with sandbox.lock:
            self.core.store.adopt(sandbox)
            await asyncio.to_thread(self._rehome_cgroup, sandbox)
            self.core.host_memory.admit(sandbox.id, int(sandbox.meta.memory_limit_mib))
            with contextlib.ExitStack() as undo:  # a resume that fails gives the room back
                undo.callback(self.core.host_memory.release, sandbox.id)
                snapshot_id = sandbox.meta.paused.get("snapshot")
                # (a sandbox paused by an earlier version has its image in its own directory)
                image = sandbox.dir / LEGACY_DIR
                if snapshot_id:
                    image = self.snapshots.load_snapshot(snapshot_id)[1] / "image"
                code, out = await self.lifecycle.restore_in_place(sandbox, image)
                if code != 0:
                    sandbox.mark_failed("resume")
                    raise SandboxFailed(sandbox_id, "resume", out.strip()[-500:])
                undo.pop_all()
            sandbox.meta.paused = None
            sandbox.save()
            if snapshot_id:
                await self.snapshots.delete_snapshot(snapshot_id)
            else:
                await asyncio.to_thread(shutil.rmtree, image, True)
            return sandbox.info()

    def _rehome_cgroup(self, sandbox: Sandbox) -> None:
        """A paused sandbox has no cgroup: it comes back where this process puts its
        sandboxes. With AIRLOCK_CGROUP_PARENT=self that is below this process's own cgroup,
        which a node started again in a new pod or container does not share with the one
        that paused it."""
        wanted = self.core.store.cgroup_path(sandbox.id)
        if sandbox.cgroup_path == wanted:
            return
        config_file = sandbox.bundle / "config.json"
        config = json.loads(config_file.read_text())
        config["linux"]["cgroupsPath"] = wanted
        config_file.write_text(json.dumps(config, indent=1))
        sandbox.cgroup_path = sandbox.meta.cgroup = wanted
        sandbox.save()

    async def _checkpoint_and_stop(self, sandbox: Sandbox) -> PauseInfo:
        started = time.monotonic()
        cut = await self.snapshots.connections_cut(sandbox)
        snapshot_id = records.new_snapshot_id()
        directory = self.core.snapshot_dir(snapshot_id)
        (directory / "image").mkdir(parents=True)
        code, out = await self.lifecycle.checkpoint_to_dir(sandbox, directory / "image")
        if code != 0:
            await asyncio.to_thread(shutil.rmtree, directory, True)
            if await self.execs.state(sandbox.id) != "running":
                sandbox.mark_failed("pause")
                raise SandboxFailed(sandbox.id, "pause", out.strip()[-500:])
            raise SandboxRuntimeError(f"checkpoint of {sandbox.id} failed: {out.strip()}")
        records.write_json(directory / "snapshot.json", snapshot_meta(sandbox, snapshot_id))
        await asyncio.to_thread(sandbox.cgroup.remove)
        self.core.host_memory.release(sandbox.id)
        size = await asyncio.to_thread(size_of, directory / "image")
        sandbox.meta.paused = {"at": time.time(), "size_bytes": size, "snapshot": snapshot_id}
        sandbox.save()
        return PauseInfo(
            size_bytes=size,
            seconds=time.monotonic() - started,
            snapshot_id=snapshot_id,
            connections_cut=cut,
        )
