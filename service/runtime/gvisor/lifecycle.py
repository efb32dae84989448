"""Launch and teardown of gVisor sandboxes, and the orphans a previous run left.

A sandbox's memory is admitted against the host budget before anything is made; `runsc
run|restore --detach` starts its bundle with the exec agent's pipes as PID 1's stdio; teardown
removes the container, its processes, network, cgroup and directory, and gives the memory back.
A launch that fails part way unwinds through one cleanup stack (`Lifecycle.launched`).
`checkpoint_to_dir` and `restore_in_place` stop a sandbox into a checkpoint and start it again
from one under its own id, bundle and network (snapshots on runsc builds whose checkpoint
stops the sandbox, and pause/resume); the exec agent's link is held meanwhile, so the execs
running through it go on after the restore.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .. import images
from ..errors import SandboxBusy, SandboxNotFound, SandboxRuntimeError, SnapshotNotFound
from ..types import SandboxSpec
from . import bundle, cgroups, disk, hostproc, netstack, network, reaper
from .agent_link import AgentLink, AgentLost
from .core import Core
from .record import FILE as RECORD_FILE
from .record import SandboxRecord
from .runsc import KILL_TIMEOUT_S, reap_while
from .store import ID_PREFIX, Sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Birth:
    """What a new sandbox is made of."""

    image: images.ImageInfo
    spec: SandboxSpec
    path_env: str
    rootfs: Path
    agent: str | None  # where its exec agent is mounted (None: none)
    snapshot: str | None = None  # the snapshot it is restored from
    layout: str = bundle.DISK  # where its writable space is (or TMPFS: a snapshot from before)


@dataclass
class Lifecycle:
    """Sandboxes made, started, checkpointed, restored and torn down on `core`'s host."""

    core: Core

    @contextlib.asynccontextmanager
    async def launched(self, birth: Birth, *args: str) -> AsyncIterator[Sandbox]:
        """A new sandbox, started by `runsc run|restore --detach` (`args`), for the caller's
        last steps on it. A failure or a cancellation anywhere, here or in the caller's block
        (a build stopped mid-create, a caller gone), unwinds what was made, last first: the
        sandbox (its container, disk, network, cgroup and directory: `teardown`, unless a
        destroy tore it down meanwhile), then its memory, admitted before anything is made."""
        core = self.core
        sandbox_id = core.store.new_id()
        home = bundle.home_of(birth.rootfs) is not None
        limit = bundle.memory_limit_mib(birth.spec, home, birth.layout)
        async with contextlib.AsyncExitStack() as undo:
            core.host_memory.admit(sandbox_id, limit)
            undo.callback(core.host_memory.release, sandbox_id)
            sandbox = self._record(birth, sandbox_id, limit)
            core.store.live[sandbox.id] = sandbox
            undo.push_async_callback(self._teardown_unless_gone, sandbox)
            if birth.spec.network != "none":
                await self._make_network(sandbox, birth.spec)
            await self._make_disk(sandbox)
            bundle.write(sandbox, birth.rootfs, exact_nproc=core.exact_nproc)
            await self._start(sandbox, *args)
            yield sandbox
            undo.pop_all()

    def _record(self, birth: Birth, sandbox_id: str, limit: int) -> Sandbox:
        """The new sandbox's directory and saved record (nothing is tracked until then)."""
        store = self.core.store
        directory = store.dir_of(sandbox_id)
        (directory / "exec").mkdir(parents=True)
        network = birth.spec.network != "none"
        record = SandboxRecord(
            id=sandbox_id,
            image=birth.image.name,
            image_digest=birth.image.digest,
            spec=birth.spec,
            path_env=birth.path_env,
            created_at=time.time(),
            owner=store.owner,
            from_snapshot=birth.snapshot,
            cgroup=store.cgroup_path(sandbox_id),
            agent=birth.agent,
            memory_limit_mib=limit,
            writable=birth.layout,
            # the stack its network runs on for its whole life (restores included)
            net_stack=self.core.platform_choice.net_stack if network else None,
        )
        sandbox = Sandbox(sandbox_id, directory, record, store.cgroup_path(sandbox_id))
        sandbox.save()
        return sandbox

    async def _teardown_unless_gone(self, sandbox: Sandbox) -> None:
        if self.core.store.live.get(sandbox.id) is sandbox:
            await self.teardown(sandbox)

    async def _make_network(self, sandbox: Sandbox, spec: SandboxSpec) -> None:
        """The sandbox's own namespace, /30 and rules for the policy in `spec` (for a restore,
        the source's when the snapshot was taken; netstack takes the new addresses then)."""
        slot = await asyncio.to_thread(
            self.core.networks.setup,
            sandbox.id,
            sandbox.dir,
            spec.network,
            spec.network_allow,
            spec.network_private,
        )
        sandbox.meta.net = slot.to_meta()
        sandbox.save()

    async def _make_disk(self, sandbox: Sandbox) -> None:
        """The sandbox's writable space on the node's disk (disk.py), before its bundle is
        written."""
        if bundle.layout_of(sandbox.meta.writable) != bundle.DISK:
            return
        space = disk.Disk(sandbox.dir)
        await asyncio.to_thread(space.make, sandbox.spec.disk_mib)
        sandbox.meta.disk = str(space.mount_point)
        sandbox.save()

    async def _launch(self, sandbox: Sandbox, *args: str, own: bool = False) -> tuple[int, str]:
        """`runsc run|restore --detach` the bundle (`own`: a restore of its own checkpoint). A
        sandbox with the exec agent gets two pipes as PID 1's stdin/stdout: its link. After a
        restore, a ping proves the agent answers on the new pipes (else its execs go through
        `runsc exec`)."""
        self.core.starting += 1  # the parent cgroup stays meanwhile (see teardown)
        try:
            return await self._launch_once(sandbox, *args, own=own)
        finally:
            self.core.starting -= 1

    async def _launch_once(self, sandbox: Sandbox, *args: str, own: bool) -> tuple[int, str]:
        if sandbox.meta.disk:  # its cpuset is narrowed while it boots
            await asyncio.to_thread(sandbox.cgroup.fill_cpuset_parents)
        # Nothing started through `runsc exec` runs yet (a restore ends all of it).
        sandbox.meta.runsc_execs = False
        sandbox.save()
        stdio: tuple[int, int] | None = None  # the agent's ends: runsc hands them to PID 1
        ours: tuple[int, int] | None = None  # the link's ends: what it reads, where it writes
        if sandbox.meta.agent:
            agent_stdin, to_agent = os.pipe()
            from_agent, agent_stdout = os.pipe()
            stdio, ours = (agent_stdin, agent_stdout), (from_agent, to_agent)
        try:
            code, out = await reap_while(
                self.core.cli.run(
                    *args,
                    "--detach",
                    f"--bundle={sandbox.bundle}",
                    sandbox.id,
                    log_file=sandbox.dir / "runsc.log",
                    meta=sandbox.meta,
                    stdio=stdio,
                )
            )
        finally:
            for fd in stdio or ():
                os.close(fd)
        if code == 0 and sandbox.meta.disk and not sandbox.cgroup.widen_cpus():
            log.warning("sandbox %s: its cpuset could not be widened", sandbox.id)
        if ours is None or code != 0:
            for fd in ours or ():
                os.close(fd)
            sandbox.close_link()  # one held for this restore: its execs are lost with it
            return code, out
        await self._link_agent(sandbox, ours, restored=args[0] == "restore", own=own)
        return code, out

    async def _link_agent(
        self, sandbox: Sandbox, ours: tuple[int, int], *, restored: bool, own: bool
    ) -> None:
        """The agent's link over its new pipes. The link held for this sandbox's own
        checkpoint carries on (its execs with it). An agent restored otherwise drops the
        channels it had: in a clone their processes run on; in the sandbox itself (its link
        was lost meanwhile: a restarted service, which ended their records) they end."""
        held = sandbox.link
        if restored and held is not None and held.hold.held and held.broken is None:
            await held.rebind(*ours)
            held.release()
            await held.ping()
            return
        sandbox.close_link()
        sandbox.link = await AgentLink.connect(sandbox.id, *ours)
        if restored:
            with contextlib.suppress(AgentLost):
                sandbox.link.take_over(end_execs=own)
            await sandbox.link.ping()

    async def _start(self, sandbox: Sandbox, *args: str) -> None:
        """`runsc run|restore --detach` the bundle; raises when runsc fails."""
        code, out = await self._launch(sandbox, *args)
        if code != 0:
            raise SandboxRuntimeError(f"runsc {args[0]} failed for {sandbox.id}: {out.strip()}")

    def can_checkpoint(self, sandbox: Sandbox) -> bool:
        """Whether runsc can checkpoint this sandbox: not on hostinet ("checkpoint not
        supported when using hostinet")."""
        return network.stack_of(sandbox.meta) in (None, netstack.NETSTACK)

    async def checkpoint_to_dir(self, sandbox: Sandbox, image_dir: Path) -> tuple[int, str]:
        """`runsc checkpoint` the sandbox into `image_dir` (an empty directory), which stops
        it, then delete its container; (runsc's exit code, its output). Its record, bundle,
        network (namespace, veth pair, rules) and cgroup stay, for `restore_in_place`. The
        caller holds `sandbox.lock` with `sandbox.ready` cleared, and has checked that
        `can_checkpoint` and that nothing holds a `runsc exec` pipe (`Snapshots.check_quiet`:
        such a checkpoint cannot be restored). Connected TCP endpoints are aborted. On failure the
        container is left as runsc left it (`Execs.state` says whether it still runs)."""
        held = await self.hold_link(sandbox)
        if (link := sandbox.agent) is not None and not held:
            link.ending = True  # the checkpoint stops the sandbox: its pipes close
        code, out = await self.core.cli.run(
            "checkpoint", f"--image-path={image_dir}", sandbox.id, meta=sandbox.meta
        )
        if code != 0:
            if link is not None:
                link.ending = False
            self.release_link(sandbox)
            return code, out
        if held and sandbox.link is not None:
            sandbox.link.unbind()  # kept, with its channels, for `restore_in_place`
        else:
            sandbox.close_link()
        await reap_while(
            self.core.cli.run("delete", "--force", sandbox.id, limit_s=30, meta=sandbox.meta)
        )
        return code, out

    async def hold_link(self, sandbox: Sandbox) -> bool:
        """Before a checkpoint: whether the agent's link is held (its execs then carry on
        after it). An agent that cannot hold gets a round trip with nothing after it, so no
        frame is half-way through either pipe when it is frozen; the caller made sure no
        exec runs through it then (`Snapshots.check_quiet`)."""
        link = sandbox.agent
        if link is None:
            return False
        held = await link.hold_for_checkpoint()
        if link.broken is not None:  # its execs are ending: not a moment to checkpoint
            raise SandboxBusy(f"sandbox {sandbox.id}: its exec agent is lost ({link.broken})")
        return held

    def release_link(self, sandbox: Sandbox) -> None:
        """After a checkpoint that left the sandbox running (or failed): talk again."""
        if sandbox.link is not None and sandbox.link.hold.held:
            with contextlib.suppress(AgentLost):
                sandbox.link.release()

    async def restore_in_place(self, sandbox: Sandbox, image_dir: Path) -> tuple[int, str]:
        """`runsc restore --detach` a checkpoint `checkpoint_to_dir` made, as the same sandbox:
        same id, bundle, network namespace, addresses and rules (so its policy, counters and
        pinned names hold), with a new agent link; (runsc's exit code, its output). The caller
        holds `sandbox.lock` and marks the sandbox failed when this fails."""
        if network.stack_of(sandbox.meta) == netstack.NETSTACK:
            slot = network.Slot.from_meta(sandbox.id, sandbox.meta.net)
            try:
                await asyncio.to_thread(self.core.networks.readdress, slot)
            except SandboxRuntimeError as exc:
                return -1, str(exc)
        return await self._launch(sandbox, "restore", f"--image-path={image_dir}", own=True)

    async def teardown(self, sandbox: Sandbox) -> None:
        """Remove the runsc container, its processes, cgroup and directory."""
        sandbox.close_link()
        meta = sandbox.meta
        has_netns = await asyncio.to_thread(os.path.exists, f"/run/netns/{sandbox.id}")
        if has_netns and not meta.net:  # its record was lost: still run in its namespace
            meta = msgspec.structs.replace(meta, id=sandbox.id, net={"record": "lost"})
        kill = self.core.cli.run("kill", sandbox.id, "KILL", limit_s=KILL_TIMEOUT_S, meta=meta)
        await reap_while(kill)
        await reap_while(self.core.cli.run("delete", "--force", sandbox.id, limit_s=30, meta=meta))
        hostproc.kill_mentioning(str(sandbox.dir))
        reaper.reap_adopted()
        if meta.net is not None:
            await asyncio.to_thread(self.core.networks.remove, sandbox.id)
        try:
            await asyncio.to_thread(disk.Disk(sandbox.dir).remove)
        except SandboxRuntimeError as exc:
            log.warning("sandbox %s: its disk stays: %s", sandbox.id, exc)
        left = await asyncio.to_thread(sandbox.cgroup.remove)
        if left:
            log.warning("sandbox %s: cgroup directories left: %s", sandbox.id, left)
        if not self.core.starting:  # a start under way filled the parent's cpuset for its own
            cgroups.remove_if_empty(self.core.store.cgroup_parent)
        shutil.rmtree(sandbox.dir, ignore_errors=True)
        paused = meta.paused or {}
        if paused.get("snapshot"):  # its checkpoint goes with it
            with contextlib.suppress(SnapshotNotFound):
                shutil.rmtree(self.core.snapshot_dir(paused["snapshot"]), ignore_errors=True)
        self.core.store.live.pop(sandbox.id, None)
        self.core.host_memory.release(sandbox.id)

    async def destroy(self, sandbox_id: str) -> None:
        try:
            sandbox = self.core.store.load(sandbox_id)
        except SandboxNotFound:
            return
        async with sandbox.lock:
            for execution in list(sandbox.execs.values()):
                with contextlib.suppress(Exception):
                    await execution.kill()
            await self.teardown(sandbox)

    async def reap_orphans(self) -> list[str]:
        """Destroy sandboxes whose owning process is gone, and runsc leftovers without one."""
        removed = []
        for directory in self.core.store.dirs():
            try:
                record = SandboxRecord.read(directory / RECORD_FILE)
            except (OSError, msgspec.DecodeError):
                record = SandboxRecord()
            if self.core.store.owned_by_live_process(record):
                continue
            sandbox = self.core.store.handle(directory.name, record)
            self.core.store.live.pop(sandbox.id, None)
            await self.teardown(sandbox)
            removed.append(sandbox.id)
        containers = await self.core.cli.containers()
        with contextlib.suppress(ValueError, TypeError):
            for container in containers or []:
                cid = container["id"]
                if cid.startswith(ID_PREFIX) and not self.core.store.dir_of(cid).exists():
                    await self.teardown(self.core.store.handle(cid, SandboxRecord()))
                    removed.append(cid)
        for kind in cgroups.Cgroup(self.core.store.cgroup_parent).dirs():
            for leftover in kind.glob(f"{ID_PREFIX}*") if kind.is_dir() else []:
                if not self.core.store.dir_of(leftover.name).exists():
                    cgroups.Cgroup(self.core.store.cgroup_path(leftover.name)).remove()
        await asyncio.to_thread(self._prune_rootfs)
        return sorted(set(removed))

    def _prune_rootfs(self) -> list[str]:
        """Remove unpacked root filesystems no image, sandbox or snapshot refers to."""
        in_use = {info.digest for info in images.list_images(self.core.state_dir)}
        for kind, name in (("sandboxes", "sandbox.json"), ("snapshots", "snapshot.json")):
            for meta_file in (self.core.root / kind).glob(f"*/{name}"):
                with contextlib.suppress(OSError, ValueError, KeyError):
                    in_use.add(_read_json(meta_file)["image_digest"])
        keep = {digest.split(":", 1)[1] for digest in in_use}
        pruned = []
        for marker in (self.core.state_dir / "rootfs").glob("*.complete"):
            hexpart = marker.name.removesuffix(".complete")
            if hexpart not in keep:
                marker.unlink()
                shutil.rmtree(marker.with_name(hexpart), ignore_errors=True)
                pruned.append(hexpart)
        return pruned


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())
