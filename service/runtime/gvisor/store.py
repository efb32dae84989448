"""The sandbox record store: `<root>/sandboxes/<id>/sandbox.json`, and the live handles.

The record (`record.SandboxRecord`: spec, image, owner process, cgroup, network slot, failure
reason) is what a restarted service finds again; the handle (`Sandbox`) adds what only this
process holds: running execs, the agent link, the lock and the ready flag a snapshot clears.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ..errors import SandboxBusy, SandboxFailed, SandboxNotFound, SandboxRuntimeError
from ..execution import ExecutionBase
from ..types import SandboxInfo, SandboxSpec
from . import cgroups, disk, hostproc
from .agent_link import AgentLink
from .record import FILE, SandboxRecord

log = logging.getLogger(__name__)

ID_PREFIX = "alk-"  # every runsc container Airlock makes: fixed length, so prefix matching is safe
SANDBOX_ID = re.compile(r"alk-[0-9a-f]{24}")
RUNTIME_NAME = "gvisor"


@dataclass
class Sandbox:
    id: str
    dir: Path
    meta: SandboxRecord  # what sandbox.json holds
    cgroup_path: str
    execs: dict[str, ExecutionBase] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The exec agent's link (PID 1's stdio), while this process holds it.
    link: AgentLink | None = None
    # Cleared while a snapshot has the sandbox stopped; new work waits for it.
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    # When an exec last saw the OOM killer strike in its cgroup (time.monotonic()).
    oom_seen_at: float | None = None

    def __post_init__(self) -> None:
        self.ready.set()

    @property
    def agent(self) -> AgentLink | None:
        """The agent link while it is usable (else execs go through `runsc exec`)."""
        return self.link if self.link is not None and self.link.usable else None

    @property
    def bundle(self) -> Path:
        return self.dir / "bundle"

    @property
    def cgroup(self) -> cgroups.Cgroup:
        return cgroups.Cgroup(self.cgroup_path)

    @property
    def spec(self) -> SandboxSpec:
        return self.meta.spec

    def save(self) -> None:
        self.meta.write(self.dir / FILE)

    def close_link(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    def mark_failed(self, reason: str) -> None:
        if not self.meta.failure_reason:
            log.warning("sandbox %s failed: %s", self.id, reason)
            self.meta.failure_reason = reason
            self.save()

    def info(self, state: str = "running") -> SandboxInfo:
        meta = self.meta
        reason = meta.failure_reason
        return SandboxInfo(
            id=self.id,
            runtime=RUNTIME_NAME,
            image=meta.image,
            image_digest=meta.image_digest,
            spec=self.spec,
            state="failed" if reason else state,  # type: ignore[arg-type]
            created_at=meta.created_at,
            failure_reason=reason,
            from_snapshot=meta.from_snapshot,
        )


def allow_exec(sandbox: Sandbox) -> None:
    """A sandbox of a previous run whose disk was mounted `noexec` gets it remounted: there,
    every program or library it wrote itself died with SIGSEGV (disk.py)."""
    try:
        if disk.Disk(sandbox.dir).allow_exec():
            log.info("sandbox %s: its disk was remounted without noexec", sandbox.id)
    except SandboxRuntimeError as exc:
        log.warning("sandbox %s: its disk could not be remounted: %s", sandbox.id, exc)


class Store:
    """The records under `directory`, and the handles of those this process has loaded."""

    def __init__(self, directory: Path, cgroup_parent: str) -> None:
        self.directory = directory
        self.cgroup_parent = cgroup_parent
        self.live: dict[str, Sandbox] = {}
        self.owner = {"pid": os.getpid(), "start": hostproc.start_time(os.getpid())}

    def new_id(self) -> str:
        return ID_PREFIX + secrets.token_hex(12)

    def dir_of(self, sandbox_id: str) -> Path:
        return self.directory / sandbox_id

    def cgroup_path(self, sandbox_id: str) -> str:
        return f"{self.cgroup_parent}/{sandbox_id}"

    def cgroup_of(self, sandbox_id: str, record: SandboxRecord) -> str:
        return record.cgroup or self.cgroup_path(sandbox_id)

    def record_of(self, sandbox_id: str) -> SandboxRecord | None:
        known = self.live.get(sandbox_id)
        return known.meta if known is not None else None

    def dirs(self) -> list[Path]:
        return sorted(self.directory.glob(f"{ID_PREFIX}*"))

    def handle(self, sandbox_id: str, record: SandboxRecord) -> Sandbox:
        """A handle on a record without loading it into the live set (for teardown)."""
        directory = self.dir_of(sandbox_id)
        return Sandbox(sandbox_id, directory, record, self.cgroup_of(sandbox_id, record))

    def load(self, sandbox_id: str) -> Sandbox:
        if sandbox_id in self.live:
            return self.live[sandbox_id]
        if not SANDBOX_ID.fullmatch(sandbox_id):
            raise SandboxNotFound(sandbox_id)
        try:
            record = SandboxRecord.read(self.dir_of(sandbox_id) / FILE)
        except (OSError, msgspec.DecodeError) as exc:
            raise SandboxNotFound(sandbox_id) from exc
        sandbox = self.handle(sandbox_id, record)
        self.live[sandbox_id] = sandbox
        return sandbox

    def usable(self, sandbox_id: str) -> Sandbox:
        sandbox = self.load(sandbox_id)
        if sandbox.meta.failure_reason:
            raise SandboxFailed(sandbox_id, sandbox.meta.failure_reason)
        if sandbox.meta.paused:
            raise SandboxBusy(f"sandbox {sandbox_id} is paused: resume it first")
        self.adopt(sandbox)
        return sandbox

    async def ready(self, sandbox_id: str) -> Sandbox:
        """The sandbox, once no snapshot has it stopped; SandboxFailed if it failed."""
        sandbox = self.usable(sandbox_id)
        if not sandbox.ready.is_set():
            await sandbox.ready.wait()
            sandbox = self.usable(sandbox_id)
        return sandbox

    def owned_by_live_process(self, record: SandboxRecord) -> bool:
        owner = record.owner or {}
        pid = owner.get("pid")
        return isinstance(pid, int) and hostproc.start_time(pid) == owner.get("start")

    def adopt(self, sandbox: Sandbox) -> None:
        """A sandbox of a previous run that this process uses becomes this process's, so
        `reap_orphans` (here or in another process) leaves it alone."""
        if sandbox.meta.owner != self.owner and not self.owned_by_live_process(sandbox.meta):
            sandbox.meta.owner = self.owner
            sandbox.save()
            if sandbox.meta.disk:
                allow_exec(sandbox)

    def close(self) -> None:
        for sandbox in self.live.values():
            sandbox.close_link()
        self.live.clear()
