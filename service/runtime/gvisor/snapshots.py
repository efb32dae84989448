"""Snapshots of gVisor sandboxes: `runsc checkpoint --leave-running` where it works (the
2024 build), else `checkpoint` then `restore` in place so the sandbox keeps running;
`create_from_snapshot` restores the image into a new sandbox.

Images live in `<root>/snapshots/<id>/image/` beside `snapshot.json`. A sandbox with a network
on netstack is checkpointed like any other (its open TCP connections are reset), and a
sandbox restored from it gets a namespace, addresses and rules of its own; one on hostinet is
refused (see README.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .. import images, records, snapshot_files
from ..errors import InvalidSpec, SandboxBusy, SandboxFailed, SandboxRuntimeError, SnapshotNotFound
from ..execution import ExecutionBase
from ..specs import validate
from ..types import SandboxInfo, SandboxSpec, SnapshotInfo
from . import agent_boot, bundle, connections, netstack
from .agent_execution import AgentExecution
from .core import NAME, Core
from .execs import Execs
from .inside import HELD_PIPES_SCRIPT, LIVE_PROCESSES_SCRIPT
from .lifecycle import Birth, Lifecycle
from .store import Sandbox

log = logging.getLogger(__name__)


@dataclass
class Snapshots:
    """Snapshots of `core`'s sandboxes: taken through `lifecycle`, checked through `execs`."""

    core: Core
    lifecycle: Lifecycle
    execs: Execs

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        """Checkpoint the sandbox; it keeps running (left running, or restored in place)."""
        sandbox = self.core.store.usable(sandbox_id)
        if not self.lifecycle.can_checkpoint(sandbox):
            # runsc: "checkpoint not supported when using hostinet" (see README.md).
            raise InvalidSpec(
                "this gVisor sandbox with a network cannot be snapshotted: it runs on the "
                "host network stack of its namespace, which runsc cannot checkpoint"
            )
        async with sandbox.lock:
            # New work waits from here until the sandbox runs again.
            sandbox.ready.clear()
            try:
                await self.check_quiet(sandbox)
                return await self._checkpoint_and_resume(sandbox)
            finally:
                sandbox.ready.set()

    async def create_from_snapshot(
        self, snapshot_id: str, private: list[str] | None = None
    ) -> SandboxInfo:
        meta, directory = self.load_snapshot(snapshot_id)
        # Restore on the very root filesystem the checkpoint was taken on, when it is this
        # state dir's (a snapshot from another node names that node's: this node's unpacking
        # of the same image digest is used).
        own = images.rootfs_dir(self.core.state_dir, meta["image_digest"])
        taken = meta.get("rootfs")
        rootfs = Path(taken) if taken and Path(taken).is_relative_to(self.core.state_dir) else own
        if not (rootfs.parent / f"{rootfs.name}.complete").exists():
            info, rootfs = await asyncio.to_thread(
                images.ensure_rootfs, self.core.state_dir, meta["image"]
            )
            if info.digest != meta["image_digest"]:
                raise SnapshotNotFound(f"{snapshot_id} (its image {meta['image']} changed)")
        image = images.ImageInfo(
            name=meta["image"], digest=meta["image_digest"], size_bytes=0, created_at=0, path=""
        )
        spec = msgspec.convert(meta["spec"], SandboxSpec)
        if private is not None:
            # Grants the tenant lost since the snapshot was taken do not come back with it.
            spec = msgspec.structs.replace(spec, network_private=list(private))
            validate(spec)
        if spec.network != "none" and self.core.platform_choice.net_stack != netstack.NETSTACK:
            raise InvalidSpec(
                f"snapshot {snapshot_id} has a network, and networked sandboxes run on the "
                f"host stack here ({self.core.platform_choice.network}): it cannot be restored"
            )
        path_env = meta.get("path_env") or bundle.DEFAULT_PATH
        agent = agent_boot.mounted_at(meta.get("agent"))
        layout = bundle.layout_of(meta.get("writable"))  # restored in the layout it was taken in
        birth = Birth(image, spec, path_env, rootfs, agent, snapshot_id, layout)
        image_path = f"--image-path={directory / 'image'}"
        async with self.lifecycle.launched(birth, "restore", image_path) as sandbox:
            await self._set_hostname(sandbox)
        return sandbox.info()

    async def list_snapshots(self) -> list[SnapshotInfo]:
        found = []
        for directory in sorted(self.core.snapshots.glob(f"{records.SNAPSHOT_PREFIX}*")):
            with contextlib.suppress(SnapshotNotFound, KeyError, OSError):
                meta, _ = self.load_snapshot(directory.name)
                found.append(self._snapshot_info(meta, directory))
        return found

    async def delete_snapshot(self, snapshot_id: str) -> None:
        directory = self.core.snapshot_dir(snapshot_id)
        await asyncio.to_thread(shutil.rmtree, directory, True)

    async def export_snapshot(self, snapshot_id: str) -> AsyncIterator[bytes]:
        _, directory = self.load_snapshot(snapshot_id)
        async for chunk in snapshot_files.tar_stream(directory):
            yield chunk

    async def import_snapshot(self, snapshot_id: str, data: AsyncIterable[bytes]) -> SnapshotInfo:
        directory = self.core.snapshot_dir(snapshot_id)
        directory.parent.mkdir(parents=True, exist_ok=True)
        await snapshot_files.receive(data, directory)
        try:
            meta, _ = self.load_snapshot(snapshot_id)
            if meta.get("id") != snapshot_id or not (directory / "image").is_dir():
                raise SandboxRuntimeError(f"what arrived is not snapshot {snapshot_id}")
        except SandboxRuntimeError:
            await asyncio.to_thread(shutil.rmtree, directory, True)
            raise
        return self._snapshot_info(meta, directory)

    def _snapshot_info(self, meta: dict[str, Any], directory: Path) -> SnapshotInfo:
        size = sum(f.stat().st_size for f in (directory / "image").rglob("*") if f.is_file())
        return records.snapshot_info(meta, NAME, size)

    def load_snapshot(self, snapshot_id: str) -> tuple[dict[str, Any], Path]:
        directory = self.core.snapshot_dir(snapshot_id)
        return records.read_snapshot(directory / "snapshot.json", snapshot_id), directory

    async def check_quiet(self, sandbox: Sandbox) -> None:
        """Refuse a checkpoint that would lose something: an exec it cannot carry over (one
        started through `runsc exec`, or through an agent too old to hold its link), an open
        port connection, a process holding an exec's host pipe, or (on a runsc that ends
        them at a restore) processes started through `runsc exec`. Execs through an agent
        that holds its link go on after it."""
        running = [e for e in sandbox.execs.values() if not e.done]
        uncarried = [e.id for e in running if not _carried(sandbox, e)]
        if uncarried:
            raise SandboxBusy(
                f"sandbox {sandbox.id} has running execs that a checkpoint would end (not run "
                f"by an exec agent that can keep them: {', '.join(uncarried)}): wait for them "
                "or kill them"
            )
        if sandbox.link is not None and len(sandbox.link.ports):
            # A checkpoint under an open port connection may cut one of its frames in two.
            raise SandboxBusy(f"sandbox {sandbox.id} has open port connections")
        held = await self._inside_lines(sandbox, HELD_PIPES_SCRIPT)
        if held:
            raise SandboxBusy(
                f"sandbox {sandbox.id}: processes still hold an exec's output "
                f"({', '.join(held)}); start long-lived processes with "
                "their stdio redirected (</dev/null >file 2>&1) to snapshot them"
            )
        if self._may_run_exec_processes(sandbox):
            running = await self._inside_lines(sandbox, LIVE_PROCESSES_SCRIPT)
            if running:
                raise SandboxBusy(
                    f"sandbox {sandbox.id}: processes run ({', '.join(running)}) and execs "
                    "went through runsc exec since it started (without its exec agent), whose "
                    f"processes this runsc ({self.core.runsc_version}) does not restore: end them "
                    "to snapshot, or use an image with python3 (its exec agent starts "
                    "processes that a snapshot keeps)"
                )

    def _may_run_exec_processes(self, sandbox: Sandbox) -> bool:
        """Whether processes started through `runsc exec` may run that a restore would end
        (runsc kills every process whose ancestry began in an exec once it restored). The
        record says whether any exec went that way since the sandbox started (or was last
        restored); a record from before it says so is judged by whether the agent is there."""
        if self.core.keeps_exec_processes:
            return False
        marked = sandbox.meta.runsc_execs
        return bool(marked) if marked is not None else sandbox.agent is None

    async def _inside_lines(self, sandbox: Sandbox, script: str) -> list[str]:
        check = await self.execs.start_exec(
            sandbox, ["/bin/sh", "-c", script], user="0:0", timeout_s=30, helper=True
        )
        return [line for line in (await check.wait()).stdout.decode().split("\n") if line]

    async def connections_cut(self, sandbox: Sandbox) -> list[str]:
        """The TCP connections with peers outside the sandbox that a checkpoint now would
        reset (connections.py); none without a network (every peer is the sandbox)."""
        if sandbox.spec.network == "none":
            return []
        tables = await self._inside_lines(sandbox, connections.TCP_TABLES)
        return connections.outside("\n".join(tables))

    async def _checkpoint_and_resume(self, sandbox: Sandbox) -> SnapshotInfo:
        sandbox_id = sandbox.id
        cut = await self.connections_cut(sandbox)
        snapshot_id = records.new_snapshot_id()
        directory = self.core.snapshot_dir(snapshot_id)
        (directory / "image").mkdir(parents=True)
        leaves_running = self.core.checkpoint_leaves_running
        if leaves_running:
            code, out = await self._checkpoint_leaving_running(sandbox, directory / "image")
        else:
            code, out = await self.lifecycle.checkpoint_to_dir(sandbox, directory / "image")
        if code != 0:
            shutil.rmtree(directory, ignore_errors=True)
            if await self.execs.state(sandbox.id) != "running":
                sandbox.mark_failed("checkpoint")
            raise SandboxRuntimeError(f"checkpoint of {sandbox_id} failed: {out.strip()}")
        meta = snapshot_meta(sandbox, snapshot_id)
        records.write_json(directory / "snapshot.json", meta)
        taken = msgspec.structs.replace(self._snapshot_info(meta, directory), connections_cut=cut)
        if leaves_running:
            return taken
        code, out = await self.lifecycle.restore_in_place(sandbox, directory / "image")
        if code != 0:
            sandbox.mark_failed("restore")
            raise SandboxFailed(sandbox_id, "restore", out.strip()[-500:])
        return taken

    async def _checkpoint_leaving_running(
        self, sandbox: Sandbox, image_dir: Path
    ) -> tuple[int, str]:
        """`runsc checkpoint --leave-running`: the sandbox is paused for the save and goes on
        (its connected TCP endpoints are aborted all the same)."""
        await self.lifecycle.hold_link(sandbox)  # so the image's agent starts clean on new pipes
        try:
            return await self.core.cli.run(
                "checkpoint",
                "--leave-running",
                f"--image-path={image_dir}",
                sandbox.id,
                meta=sandbox.meta,
            )
        finally:
            self.lifecycle.release_link(sandbox)

    async def _set_hostname(self, sandbox: Sandbox) -> None:
        """A restored sandbox comes back with the hostname it was checkpointed under: give it
        its own, through a root helper that holds only CAP_SYS_ADMIN for the call."""
        name = bundle.hostname_for(sandbox.id)
        code = await self.execs.root_helper(
            sandbox, "host", ["/bin/hostname", name], "CAP_SYS_ADMIN"
        )
        if code != 0:
            log.warning("sandbox %s: could not set its hostname (exit %s)", sandbox.id, code)


def _carried(sandbox: Sandbox, execution: ExecutionBase) -> bool:
    """Whether a running exec goes on after a checkpoint: it runs through the agent's link,
    and that agent holds its link for one."""
    link = sandbox.agent
    return (
        link is not None
        and link.holds
        and isinstance(execution, AgentExecution)
        and execution.rides(link)
    )


def snapshot_meta(sandbox: Sandbox, snapshot_id: str) -> dict[str, Any]:
    """What `create_from_snapshot` needs besides the image: the source's spec, image,
    root filesystem and agent."""
    return {
        "id": snapshot_id,
        "sandbox_id": sandbox.id,
        "image": sandbox.meta.image,
        "image_digest": sandbox.meta.image_digest,
        "spec": msgspec.to_builtins(sandbox.meta.spec),
        "path_env": sandbox.meta.path_env,
        "rootfs": sandbox.meta.rootfs,
        "created_at": time.time(),
        "agent": agent_boot.mounted_at(sandbox.meta.agent),
        "net_stack": sandbox.meta.net_stack,
        "writable": bundle.layout_of(sandbox.meta.writable),
    }
