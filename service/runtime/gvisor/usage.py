"""What a running gVisor sandbox uses: its cgroup's counters, and from inside (through the
exec agent where it answers) its processes and writable space."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from ..errors import SandboxFailed
from ..types import SandboxStats
from . import bundle, disk
from .execs import Execs
from .runsc import Runsc
from .store import Sandbox, Store

# How long metrics wait for a just-started sandbox's agent (else they do without it).
AGENT_HELLO_S = 2.0


@dataclass
class Usage:
    """The usage of the store's sandboxes."""

    store: Store
    cli: Runsc
    execs: Execs

    async def stats(self, sandbox_id: str) -> SandboxStats:
        sandbox = self.store.load(sandbox_id)
        if not sandbox.cgroup.exists():
            raise SandboxFailed(sandbox_id, sandbox.meta.failure_reason or "stopped")
        usage = await asyncio.to_thread(sandbox.cgroup.usage)
        # A sandbox just started has an agent that may not have said hello yet.
        ready = await self.execs.agent_ready(sandbox_id, AGENT_HELLO_S)
        on_disk = bundle.layout_of(sandbox.meta.writable) == bundle.DISK
        mounts = [] if on_disk else list(bundle.WRITABLE)  # on its disk: processes only
        inside = await sandbox.link.usage(mounts) if ready and sandbox.link else None
        processes = inside.processes if inside is not None else await self._processes(sandbox)
        used: int | None = None
        size: int | None = None
        if on_disk:  # the node's view of the sandbox's own file system (disk.py)
            space = await asyncio.to_thread(disk.Disk(sandbox.dir).usage)
            if space is not None:
                used, size = space[0], sandbox.spec.disk_mib << 20
        elif inside is not None:
            used = sum(u for u, _ in inside.mounts.values())
            size = sum(s for _, s in inside.mounts.values())
        return SandboxStats(
            cpu_seconds=usage.cpu_seconds,
            memory_bytes=usage.memory_bytes,
            memory_limit_bytes=usage.memory_limit_bytes,
            pids=usage.pids,
            pids_limit=usage.pids_limit,
            processes=processes,
            processes_limit=sandbox.spec.pids,
            writable_bytes=used if size else None,
            writable_limit_bytes=size or None,
        )

    async def _processes(self, sandbox: Sandbox) -> int | None:
        """Without the agent: the sandbox's processes as `runsc ps` lists them, but its init."""
        code, out = await self.cli.run(
            "ps", "--format=json", sandbox.id, limit_s=10, meta=sandbox.meta
        )
        if code != 0:
            return None
        try:
            listed = json.loads(out) or []
        except ValueError:
            return None
        return max(0, len(listed) - 1)
