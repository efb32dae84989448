"""Data the runtime Protocol takes and returns."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterable
from typing import Literal

import msgspec

Outcome = Literal["exited", "timeout", "oom", "killed"]
NetworkPolicy = Literal["none", "allowlist", "open"]
# "paused": checkpointed to the host's disk, holding no CPU or memory until resumed.
SandboxState = Literal["running", "paused", "failed", "stopped"]

DEFAULT_OUTPUT_CAP = 1 << 20  # bytes kept per stream; the rest is counted, not kept


class SandboxSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Caps and identity of one sandbox. Every cap is always set."""

    vcpus: float = 1.0
    memory_mib: int = 512
    pids: int = 128
    disk_mib: int = 512
    user: str = "1000:1000"
    env: dict[str, str] = msgspec.field(default_factory=dict)
    # "none": no interface but lo. "allowlist": egress only to `network_allow` entries (host
    # names with an optional port, IPv4 addresses or CIDRs). "open": any public destination.
    network: NetworkPolicy = "none"
    network_allow: list[str] = msgspec.field(default_factory=list)
    # Private ranges (CIDRs) the operator granted the tenant: the only non-public space the
    # policy may reach (see runtime/egress.py).
    network_private: list[str] = msgspec.field(default_factory=list)
    labels: dict[str, str] = msgspec.field(default_factory=dict)


class TtySize(msgspec.Struct, frozen=True, kw_only=True):
    """A terminal's window: rows and columns of characters."""

    rows: int = 24
    cols: int = 80


# The PATH of the service's own commands in a sandbox: directories of the read-only root only.
HELPER_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


class ExecRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One command. `user=None` runs as the sandbox's user; `timeout_s` is the deadline.

    `exec_id`, when given, is the Execution's id (made by `new_exec_id`, unique per sandbox),
    so a caller can record it before the command starts; None: the runtime picks one.
    """

    argv: list[str]
    cwd: str = "/work"
    env: dict[str, str] = msgspec.field(default_factory=dict)
    # All of it at once, or chunks as they come (an exec whose stdin stays open).
    stdin: bytes | AsyncIterable[bytes] | None = None
    user: str | None = None
    timeout_s: float = 60.0
    output_cap: int = DEFAULT_OUTPUT_CAP
    exec_id: str | None = None
    # The service's own command (file transfer, bookkeeping): it runs with HELPER_PATH and
    # none of the sandbox's environment, so code in the sandbox cannot put its own `cat` or
    # LD_PRELOAD in front of what the host then parses.
    helper: bool = False
    # Run under a pseudo-terminal of this size: it is the process's stdin, stdout and stderr,
    # and its controlling terminal (stderr arrives merged into stdout). None: plain pipes.
    tty: TtySize | None = None
    # Output flows to the reader of `output()` as it is read, none of it kept and no cap: for a
    # command that lives long and talks on its pipes (an interpreter), whose reader never stops
    # reading. A runtime that cannot stream keeps it up to `output_cap` as for any exec.
    stream: bool = False


def new_exec_id() -> str:
    """An exec id every runtime accepts in `ExecRequest.exec_id`."""
    return "exec-" + secrets.token_hex(8)


class OutputChunk(msgspec.Struct, frozen=True):
    """A piece of an exec's output, in arrival order. `stream` is "stdout" or "stderr"."""

    stream: Literal["stdout", "stderr"]
    data: bytes


class ExecResult(msgspec.Struct, frozen=True, kw_only=True):
    """How an exec ended. A non-zero exit is data, not an error.

    `stdout`/`stderr` hold the first `output_cap` bytes; the byte counts cover everything the
    process wrote, and the truncation flags say whether anything was dropped.
    """

    exec_id: str
    exit_code: int | None
    outcome: Outcome
    started_after_s: float
    duration_s: float
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False


class SandboxInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    runtime: str
    image: str
    image_digest: str
    spec: SandboxSpec
    state: SandboxState
    created_at: float
    failure_reason: str | None = None
    from_snapshot: str | None = None


class SandboxStats(msgspec.Struct, frozen=True, kw_only=True):
    """What a sandbox uses now. A runtime that cannot measure a figure gives None for it,
    never a made-up value."""

    # CPU time the sandbox has spent (its kernel's too, on gVisor), since it started.
    cpu_seconds: float | None
    # Host memory it holds (on gVisor: its kernel, its processes and its tmpfs files).
    memory_bytes: int
    memory_limit_bytes: int
    # Host tasks of the sandbox (the sandbox kernel's threads on gVisor) and their cap.
    pids: int
    pids_limit: int
    # Processes inside the sandbox, besides its init, and the spec's cap on them.
    processes: int | None = None
    processes_limit: int = 0
    # The writable space its processes have used, and the size of it all.
    writable_bytes: int | None = None
    writable_limit_bytes: int | None = None


class FileEntry(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    kind: Literal["file", "dir", "symlink", "other"]
    size: int
    mode: int
    mtime: float


class SnapshotInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    runtime: str
    sandbox_id: str
    image: str
    image_digest: str
    spec: SandboxSpec
    created_at: float
    size_bytes: int
    # The source's TCP connections with peers outside it that taking this snapshot reset
    # (`local -> remote`), told by the call that took it.
    connections_cut: list[str] = msgspec.field(default_factory=list)


class PauseInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A paused sandbox's checkpoint: its bytes on the host's disk, how long it took, the
    snapshot it is (None on a runtime whose checkpoint is not one), which another node of the
    same runtime can start the sandbox from, and what it could not keep."""

    size_bytes: int
    seconds: float
    snapshot_id: str | None = None
    # TCP connections with peers outside the sandbox that the checkpoint reset (`local ->
    # remote`): a peer outside cannot be carried through a checkpoint.
    connections_cut: list[str] = msgspec.field(default_factory=list)


class ImageInfo(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    digest: str
    size_bytes: int
    created_at: float
    path: str
    build_key: str | None = None
    config: dict[str, object] = msgspec.field(default_factory=dict)
