"""The one interface every sandbox runtime implements."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Literal, Protocol, runtime_checkable

from .types import (
    ExecRequest,
    ExecResult,
    FileEntry,
    OutputChunk,
    PauseInfo,
    SandboxInfo,
    SandboxSpec,
    SandboxStats,
    SnapshotInfo,
    TtySize,
)

# What a runtime may lack. A caller asks `runtime.supports(name)` before using one; the
# methods of a capability a runtime lacks raise NotSupported (a 501 at the HTTP edge).
Capability = Literal[
    "snapshots",  # snapshot / create_from_snapshot / list_snapshots / delete_snapshot
    "copy_files",  # copy_files: what one sandbox wrote, into another
    "update_network",  # update_network: change a running sandbox's egress policy
    "move_snapshots",  # export_snapshot / import_snapshot: a snapshot from one node to another
    "ports",  # open_port: a connection to a TCP port inside the sandbox, through the runtime
    "pause",  # pause / resume: a sandbox checkpointed to disk and restored in place
]


@runtime_checkable
class Execution(Protocol):
    """A running exec: iterate its output, then (or instead) wait for its result."""

    @property
    def id(self) -> str: ...

    def output(self) -> AsyncIterator[OutputChunk]:
        """Chunks as they arrive (up to the output cap); ends when the process's output ends."""
        ...

    async def wait(self) -> ExecResult:
        """The result; drains output nobody read. Never raises for a non-zero exit."""
        ...

    async def kill(self) -> None:
        """Kill the process tree; the result's outcome becomes `killed`."""
        ...


@runtime_checkable
class PortConnection(Protocol):
    """A connection to a TCP port inside a sandbox, carried by the runtime's own channel."""

    async def read(self) -> bytes:
        """The next bytes the sandbox's side sent; b"" once it ended (or the connection did)."""
        ...

    async def write(self, data: bytes) -> None:
        """Send bytes, waiting while the sandbox's side is behind; ConnectionResetError once
        the connection is gone."""
        ...

    async def write_eof(self) -> None:
        """End our side (a half-close): the sandbox's side reads its end."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class SandboxRuntime(Protocol):
    """Sandboxes from OCI images, with caps, exec, files, snapshots.

    Errors are the types in `service.runtime.errors`. Sandbox, exec and snapshot ids are
    opaque strings made by the runtime.
    """

    name: str
    # Whether a snapshot holds memory (running processes come back in every sandbox started
    # from it, as with gVisor's checkpoint) or only files (BoxLite: a sandbox boots afresh).
    snapshots_memory: bool
    capabilities: frozenset[Capability]

    def supports(self, capability: Capability) -> bool:
        """Whether this runtime has the optional `capability` (see `Capability`)."""
        ...

    async def check_image(self, image: str) -> None:
        """Raise ImageNotFound (or InvalidImage) unless `create` could use `image`: callers check
        before they record a sandbox, so a bad name writes nothing."""
        ...

    async def create(self, image: str, spec: SandboxSpec) -> SandboxInfo:
        """A running sandbox from a local image (ImageNotFound, InvalidSpec)."""
        ...

    async def get(self, sandbox_id: str) -> SandboxInfo: ...

    async def list_sandboxes(self) -> list[SandboxInfo]:
        """Every sandbox of this runtime on this host, including ones from a previous run."""
        ...

    async def destroy(self, sandbox_id: str) -> None:
        """Remove the sandbox and everything it held; a missing sandbox is not an error."""
        ...

    async def exec(self, sandbox_id: str, request: ExecRequest) -> Execution:
        """Start a command. SandboxFailed once the sandbox died (e.g. reason "oom")."""
        ...

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        """`exec` and wait: output collected up to the cap."""
        ...

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        """Kill a running exec's process tree; ExecNotFound if unknown or already finished."""
        ...

    async def tty_available(self, sandbox_id: str) -> bool:
        """Whether an exec in this sandbox can run under a pseudo-terminal (`ExecRequest.tty`);
        asked before an exec with one is recorded. `exec` raises TtyUnsupported where not."""
        ...

    async def resize_exec(self, sandbox_id: str, exec_id: str, size: TtySize) -> None:
        """Change the window of a running exec's terminal (its foreground processes get
        SIGWINCH); ExecNotFound if unknown or finished, TtyUnsupported if it has none."""
        ...

    async def write_file(
        self,
        sandbox_id: str,
        path: str,
        data: bytes | AsyncIterable[bytes],
        *,
        mode: int = 0o644,
        user: str | None = None,
    ) -> int:
        """Write (create or replace) a file through the sandbox; returns bytes written."""
        ...

    def read_file(
        self, sandbox_id: str, path: str, *, user: str | None = None, max_bytes: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream a file out through the sandbox. PathNotFound / PathNotAllowed are raised
        on the first iteration, before any data, so a caller can still answer with an error.
        With `max_bytes`, never more than that many bytes come out: a regular file (a link's
        target) longer than it raises FileTooLarge with its size on the first iteration; any
        other source that gives more (a device, a pipe, a file growing meanwhile) raises
        FileTooLarge once it did, and what it gave past the limit is never passed on."""
        ...

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]: ...

    async def copy_files(self, source_id: str, target_id: str) -> int:
        """Copy what the source sandbox wrote (its writable mounts) into the target; the bytes
        moved. Capability "copy_files"."""
        ...

    async def update_network(
        self,
        sandbox_id: str,
        mode: str,
        allow: list[str] | None = None,
        private: list[str] | None = None,
    ) -> SandboxInfo:
        """Change a running sandbox's egress policy (`private`: the tenant's granted ranges
        now; None keeps the sandbox's). Capability "update_network"."""
        ...

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        """Capture the sandbox (memory and files); it keeps running afterwards."""
        ...

    async def create_from_snapshot(
        self, snapshot_id: str, private: list[str] | None = None
    ) -> SandboxInfo:
        """A new sandbox from the snapshot, its processes and memory included. Its network
        policy is the snapshot's; `private`: the private ranges granted to its tenant now, which
        its rules are built from (None: the snapshot's, granted when it was taken)."""
        ...

    async def pause(self, sandbox_id: str) -> PauseInfo:
        """Checkpoint the sandbox (memory, processes, files) to the host's disk and stop it, so
        it holds no CPU or memory; its state becomes "paused". Running execs are kept (they go
        on after the resume); SandboxBusy, naming it, for what the checkpoint could not keep.
        Capability "pause"."""
        ...

    async def resume(self, sandbox_id: str) -> SandboxInfo:
        """Restore a paused sandbox in place (same id, network and policy), its processes
        going on from where they were; the checkpoint is then removed. Capability "pause"."""
        ...

    async def list_snapshots(self) -> list[SnapshotInfo]: ...

    async def delete_snapshot(self, snapshot_id: str) -> None: ...

    def export_snapshot(self, snapshot_id: str) -> AsyncIterator[bytes]:
        """The snapshot as a tar stream that is the same bytes every time (its sha256 names
        it); SnapshotNotFound on the first iteration. Capability "move_snapshots"."""
        ...

    async def import_snapshot(self, snapshot_id: str, data: AsyncIterable[bytes]) -> SnapshotInfo:
        """Take in a snapshot another node of this runtime exported; it is usable only once
        the whole stream arrived (an error from `data` leaves nothing). Capability
        "move_snapshots"."""
        ...

    async def open_port(self, sandbox_id: str, port: int) -> PortConnection:
        """A connection to `port` (1-65535) on the sandbox's loopback, made from inside the
        sandbox (one without a network still serves its ports, and gains none).
        PortNotListening when nothing accepts it there; NotSupported where this sandbox or
        runtime has no channel for it. Capability "ports"."""
        ...

    async def stats(self, sandbox_id: str) -> SandboxStats: ...

    async def network_counters(self, sandbox_id: str) -> dict[str, int] | None:
        """Packets the sandbox sent that its policy allowed and blocked (`allowed_packets`,
        `blocked_packets`);
        None when it has no network or the runtime cannot count them."""
        ...

    async def reap_orphans(self) -> list[str]:
        """Destroy sandboxes this process does not know about (left by a previous run)."""
        ...

    async def close(self) -> None:
        """Forget live handles; sandboxes stay (the database is the record)."""
        ...
