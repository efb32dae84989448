"""Starting sandboxes from a template build: the setup steps, the snapshot, and starts from it.

Shared by the template builder, the sandbox create path (a cold start from a template) and the
pool refiller. No database here: callers pass a `Recipe` read in their own short transaction.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
from dataclasses import dataclass, field

from service.db.models import TemplateVersion
from service.runtime import (
    ExecRequest,
    SandboxInfo,
    SandboxRuntime,
    SandboxRuntimeError,
    SandboxSpec,
    SnapshotInfo,
)

log = logging.getLogger("airlock.templates")

LOG_CAP = 64 << 10  # bytes of build log kept per version; the rest is cut
STEP_OUTPUT_CAP = 16 << 10
STEP_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Recipe:
    version_id: str
    image: str
    size: str
    setup: list[list[str]]
    cpus: int
    memory_mib: int
    disk_mib: int
    env: dict[str, str]
    snapshot_id: str | None

    @classmethod
    def of(cls, row: TemplateVersion) -> Recipe:
        return cls(
            version_id=row.id,
            image=row.image,
            size=row.size,
            setup=[list(step) for step in row.setup],
            cpus=row.cpus,
            memory_mib=row.memory_mib,
            disk_mib=row.disk_mib,
            env=dict(row.env),
            snapshot_id=row.snapshot_id,
        )

    @property
    def spec(self) -> SandboxSpec:
        return SandboxSpec(
            vcpus=float(self.cpus),
            memory_mib=self.memory_mib,
            disk_mib=self.disk_mib,
            env=dict(self.env),
        )


@dataclass
class BuildLog:
    text: str = ""
    cut: bool = False
    lines: list[str] = field(default_factory=list)

    def add(self, piece: str) -> None:
        if self.cut:
            return
        room = LOG_CAP - len(self.text.encode())
        data = piece.encode()
        if len(data) > room:
            self.text += data[:room].decode(errors="ignore") + "\n[build log cut]\n"
            self.cut = True
        else:
            self.text += piece


class SetupFailed(Exception):
    def __init__(self, step: int, why: str) -> None:
        super().__init__(f"setup step {step} {why}")


async def run_setup(
    runtime: SandboxRuntime, sandbox_id: str, steps: list[list[str]], log_out: BuildLog
) -> None:
    """Run each step in order, as the sandbox user in /work; the first failure stops it."""
    for number, argv in enumerate(steps, 1):
        log_out.add(f"$ {shlex.join(argv)}\n")
        result = await runtime.run(
            sandbox_id,
            ExecRequest(
                argv=argv, cwd="/work", timeout_s=STEP_TIMEOUT_S, output_cap=STEP_OUTPUT_CAP
            ),
        )
        for data, truncated in (
            (result.stdout, result.stdout_truncated),
            (result.stderr, result.stderr_truncated),
        ):
            if data:
                log_out.add(data.decode(errors="replace"))
                if not data.endswith(b"\n"):
                    log_out.add("\n")
            if truncated:
                log_out.add("[output cut]\n")
        log_out.add(f"[{result.outcome} {result.exit_code}]\n")
        if result.outcome != "exited" or result.exit_code != 0:
            raise SetupFailed(number, f"ended {result.outcome} with {result.exit_code}")


async def prepare(runtime: SandboxRuntime, recipe: Recipe, log_out: BuildLog) -> SandboxInfo:
    """A sandbox from the image with the setup steps run; destroyed again if a step fails."""
    info = await runtime.create(recipe.image, recipe.spec)
    try:
        await run_setup(runtime, info.id, recipe.setup, log_out)
    except BaseException:
        with contextlib.suppress(SandboxRuntimeError):
            await runtime.destroy(info.id)
        raise
    return info


async def build(
    runtime: SandboxRuntime, recipe: Recipe, log_out: BuildLog, *, snapshots: bool = True
) -> SnapshotInfo | None:
    """Prepare a sandbox and snapshot it. None: the runtime cannot snapshot here, and
    sandboxes of this version start from the image with the setup run again."""
    info = await prepare(runtime, recipe, log_out)
    try:
        if not snapshots:
            log_out.add("snapshots are off on this server: sandboxes start from the image\n")
            return None
        try:
            snapshot = await runtime.snapshot(info.id)
        except SandboxRuntimeError as exc:
            log.warning("snapshot of a template build failed: %s", exc)
            log_out.add(f"snapshot not possible here ({type(exc).__name__}: {exc}); ")
            log_out.add("sandboxes start from the image with the setup run again\n")
            return None
        log_out.add(f"snapshot {snapshot.id}: {snapshot.size_bytes} bytes\n")
        return snapshot
    finally:
        with contextlib.suppress(SandboxRuntimeError):
            await runtime.destroy(info.id)


async def start(runtime: SandboxRuntime, recipe: Recipe) -> SandboxInfo:
    """A running sandbox of this build: restored from its snapshot, or prepared from the image."""
    if recipe.snapshot_id is not None:
        return await runtime.create_from_snapshot(recipe.snapshot_id)
    return await prepare(runtime, recipe, BuildLog())
