"""Pause and resume of gVisor sandboxes: `runsc checkpoint` (which stops the sandbox) into the
sandbox's own directory, `runsc delete`, and later `runsc restore` of that image in place.

A paused sandbox keeps its record, bundle, network namespace and policy, and its checkpoint
(`<sandbox dir>/paused/`); it holds no process, cgroup or share of the host memory budget.
Its record says `paused` (with the checkpoint's size), so a restarted service finds it again
and the orphan reaper leaves it alone. Processes come back as they were (the agent's execs and
what they started; on this runsc not processes started through `runsc exec`, which is why a
pause is refused while any would be lost, as a snapshot is); open TCP connections do not.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

from ..errors import SandboxBusy, SandboxFailed, SandboxRuntimeError
from ..types import PauseInfo, SandboxInfo
from .snapshots import Snapshots
from .store import Sandbox

CHECKPOINT_DIR = "paused"


def checkpoint_dir(sandbox: Sandbox) -> Path:
    return sandbox.dir / CHECKPOINT_DIR


def size_of(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())


class Pauses(Snapshots):
    async def pause(self, sandbox_id: str) -> PauseInfo:
        sandbox = self.store.usable(sandbox_id)
        if not self.can_checkpoint(sandbox):
            raise SandboxBusy(
                f"sandbox {sandbox_id} has a network on the host stack of its namespace, "
                "which this runsc cannot checkpoint"
            )
        async with sandbox.lock:
            sandbox.ready.clear()
            try:
                await self._check_quiet(sandbox)
                return await self._checkpoint_and_stop(sandbox)
            finally:
                sandbox.ready.set()

    async def resume(self, sandbox_id: str) -> SandboxInfo:
        sandbox = self.store.load(sandbox_id)
        if sandbox.meta.get("failure_reason"):
            raise SandboxFailed(sandbox_id, sandbox.meta["failure_reason"])
        if not sandbox.meta.get("paused"):
            raise SandboxBusy(f"sandbox {sandbox_id} is not paused")
        async with sandbox.lock:
            self.store.adopt(sandbox)
            self.host_memory.admit(sandbox.id, int(sandbox.meta["memory_limit_mib"]))
            self.reaper.ensure()
            image = checkpoint_dir(sandbox)
            try:
                code, out = await self.restore_in_place(sandbox, image)
            except BaseException:
                self.host_memory.release(sandbox.id)
                raise
            if code != 0:
                self.host_memory.release(sandbox.id)
                sandbox.mark_failed("resume")
                raise SandboxFailed(sandbox_id, "resume", out.strip()[-500:])
            del sandbox.meta["paused"]
            sandbox.save()
            await asyncio.to_thread(shutil.rmtree, image, True)
            return sandbox.info()

    async def _checkpoint_and_stop(self, sandbox: Sandbox) -> PauseInfo:
        started = time.monotonic()
        image = checkpoint_dir(sandbox)
        await asyncio.to_thread(shutil.rmtree, image, True)
        image.mkdir(parents=True)
        code, out = await self.checkpoint_to_dir(sandbox, image)
        if code != 0:
            await asyncio.to_thread(shutil.rmtree, image, True)
            if await self._state(sandbox.id) != "running":
                sandbox.mark_failed("pause")
                raise SandboxFailed(sandbox.id, "pause", out.strip()[-500:])
            raise SandboxRuntimeError(f"checkpoint of {sandbox.id} failed: {out.strip()}")
        await asyncio.to_thread(sandbox.cgroup.remove)
        self.host_memory.release(sandbox.id)
        size = await asyncio.to_thread(size_of, image)
        sandbox.meta["paused"] = {"at": time.time(), "size_bytes": size}
        sandbox.save()
        return PauseInfo(size_bytes=size, seconds=time.monotonic() - started)
