"""BoxLite runtime: option mapping, the boot probe, and a basic runtime on top of BoxLite.

The only module that touches the `boxlite` package. BoxLite needs a VM to boot; on hosts
where it cannot (for example kvm-pvm nested virtualization) every entry point raises
RuntimeUnavailable carrying BoxLite's own diagnosis. See README.md for what is covered.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import images
from .errors import (
    ImageNotFound,
    RuntimeUnavailable,
    SandboxNotFound,
    SandboxRuntimeError,
)
from .types import (
    ExecRequest,
    ExecResult,
    FileEntry,
    SandboxInfo,
    SandboxSpec,
    SandboxStats,
    SnapshotInfo,
)

PROBE_TIMEOUT_S = 30.0
LOG_LINE = 240


class NotSupported(SandboxRuntimeError):
    """This runtime does not implement the operation yet."""


def version() -> str | None:
    try:
        from importlib.metadata import version as dist_version

        return dist_version("boxlite")
    except Exception:
        return None


def box_options_kwargs(spec: SandboxSpec, rootfs_path: Path) -> dict[str, Any]:
    """Map a SandboxSpec onto BoxOptions keyword arguments (pure; unit-tested).

    BoxLite wants whole CPUs and GiB of disk, `env` as (name, value) tuples and `user` as
    "uid[:gid]"; `auto_*` fields are seconds, so they are left unset rather than True.
    """
    return {
        "rootfs_path": str(rootfs_path),
        "cpus": max(1, math.ceil(spec.vcpus)),
        "memory_mib": spec.memory_mib,
        "disk_size_gb": max(1, math.ceil(spec.disk_mib / 1024)),
        "env": [(k, v) for k, v in spec.env.items()],
        "user": spec.user if spec.user != "root" else "0:0",
        "working_dir": "/work",
        "auto_remove": False,
    }


def _box_options(spec: SandboxSpec, rootfs_path: Path) -> Any:
    import boxlite

    kwargs = box_options_kwargs(spec, rootfs_path)
    return boxlite.BoxOptions(
        **kwargs,
        network=boxlite.NetworkSpec(outbound=boxlite.OutboundNetworkSpec(mode="disabled")),
        advanced=boxlite.AdvancedBoxOptions(security=boxlite.SecurityOptions.maximum()),
    )


def _log_excerpts(home: Path, box_id: str | None) -> str:
    """The telling lines of BoxLite's logs for a box: errors and warnings, else the tail."""
    if not box_id:
        return ""
    box_dir = home / "boxes" / box_id
    parts = []
    for path in [*sorted(box_dir.glob("logs/*")), box_dir / "shim.stderr"]:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        telling = [ln for ln in lines if any(w in ln for w in ("ERROR", "WARN", "error", "fail"))]
        chosen = (telling or lines)[-6:]
        if chosen:
            parts.append(f"{path.name}:\n" + "\n".join(ln[-LOG_LINE:] for ln in chosen))
    return "\n".join(parts)


def _home(state_dir: Path, name: str = "boxlite") -> Path:
    home = Path(state_dir).resolve() / name
    home.mkdir(parents=True, exist_ok=True)
    return home


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    diagnosis: str
    seconds: float
    version: str | None


async def _bounded(awaitable: Any, seconds: float) -> Any:
    """Await with a deadline that holds even if the native call ignores cancellation."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        raise TimeoutError
    return task.result()


async def probe(state_dir: Path, timeout_s: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Try to boot a tiny box from the local default image; never hangs past the bound."""
    started = time.monotonic()
    ver = version()
    if ver is None:
        return ProbeResult(False, "the boxlite package is not installed", 0.0, None)
    try:
        image = images.get_image(state_dir, images.DEFAULT_IMAGE)
    except ImageNotFound:
        return ProbeResult(False, "no default image to boot; run `airlock image build`", 0.0, ver)
    import boxlite

    # A home of its own, so a probe (e.g. from `airlock doctor`) never contends for the lock
    # of a running service's BoxLite home.
    home = _home(state_dir, "boxlite-probe")
    runtime: Any = None
    box: Any = None

    async def boot() -> None:
        nonlocal box, runtime
        runtime = boxlite.Boxlite(boxlite.Options(home_dir=str(home)))
        spec = SandboxSpec(vcpus=1, memory_mib=256, disk_mib=1024)
        box = await runtime.create(_box_options(spec, Path(image.path)), name=None)
        await box.start()
        execution = await box.exec("true", [], None, False, None, 10, None)
        await execution.wait()

    try:
        await _bounded(boot(), timeout_s)
        return ProbeResult(
            True, "a probe VM booted and ran `true`", time.monotonic() - started, ver
        )
    except TimeoutError:
        detail = _log_excerpts(home, getattr(box, "id", None))
        why = f"probe VM did not boot within {timeout_s:.0f} s\n{detail}"
        return ProbeResult(False, why.strip(), time.monotonic() - started, ver)
    except Exception as exc:  # BoxLite reports every failure as its own exception types
        detail = _log_excerpts(home, getattr(box, "id", None))
        why = f"{type(exc).__name__}: {exc}\n{detail}"
        return ProbeResult(False, why.strip(), time.monotonic() - started, ver)
    finally:
        if box is not None:
            with contextlib.suppress(Exception):
                await _bounded(runtime.remove(box.id, force=True), 15)
        if runtime is not None:
            with contextlib.suppress(Exception):
                await _bounded(runtime.shutdown(), 15)


class BoxliteRuntime:
    """SandboxRuntime on BoxLite microVMs: create, exec, destroy, list.

    Files, snapshots and stats come later; they raise NotSupported. Open with
    `await BoxliteRuntime.open(state_dir, probe_result)`, which refuses a host where the
    probe failed.
    """

    name = "boxlite"

    def __init__(self, state_dir: Path, runtime: Any) -> None:
        self.state_dir = Path(state_dir).resolve()
        self._runtime = runtime
        self._boxes: dict[str, tuple[Any, SandboxInfo]] = {}

    @classmethod
    async def open(cls, state_dir: Path, probe_result: ProbeResult) -> BoxliteRuntime:
        if not probe_result.ok:
            raise RuntimeUnavailable("boxlite", probe_result.diagnosis)
        import boxlite

        home = _home(state_dir)
        return cls(state_dir, boxlite.Boxlite(boxlite.Options(home_dir=str(home))))

    def _box(self, sandbox_id: str) -> Any:
        if sandbox_id not in self._boxes:
            raise SandboxNotFound(sandbox_id)
        return self._boxes[sandbox_id][0]

    async def create(self, image: str, spec: SandboxSpec) -> SandboxInfo:
        info = images.get_image(self.state_dir, image)
        box = await self._runtime.create(_box_options(spec, Path(info.path)), name=None)
        await box.start()
        sandbox = SandboxInfo(
            id=box.id,
            runtime=self.name,
            image=image,
            image_digest=info.digest,
            spec=spec,
            state="running",
            created_at=time.time(),
        )
        self._boxes[box.id] = (box, sandbox)
        return sandbox

    async def get(self, sandbox_id: str) -> SandboxInfo:
        self._box(sandbox_id)
        return self._boxes[sandbox_id][1]

    async def list_sandboxes(self) -> list[SandboxInfo]:
        return [info for _, info in self._boxes.values()]

    async def destroy(self, sandbox_id: str) -> None:
        entry = self._boxes.pop(sandbox_id, None)
        if entry is not None:
            await self._runtime.remove(sandbox_id, force=True)

    async def exec(self, sandbox_id: str, request: ExecRequest) -> Any:
        raise NotSupported("streaming exec on boxlite: use run()")

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        box = self._box(sandbox_id)
        started = time.monotonic()
        env = list(request.env.items()) or None
        execution = await box.exec(
            request.argv[0],
            request.argv[1:],
            env,
            False,
            request.user,
            max(1, math.ceil(request.timeout_s)),
            request.cwd,
        )
        out = bytearray()
        err = bytearray()

        async def collect(stream: Any, sink: bytearray) -> None:
            if stream is not None:
                async for line in stream:
                    sink.extend(line.encode() if isinstance(line, str) else line)

        await asyncio.gather(collect(execution.stdout(), out), collect(execution.stderr(), err))
        result = await execution.wait()
        cap = request.output_cap
        return ExecResult(
            exec_id=getattr(execution, "id", ""),
            exit_code=result.exit_code,
            outcome="exited",
            started_after_s=0.0,
            duration_s=time.monotonic() - started,
            stdout=bytes(out[:cap]),
            stderr=bytes(err[:cap]),
            stdout_bytes=len(out),
            stderr_bytes=len(err),
            stdout_truncated=len(out) > cap,
            stderr_truncated=len(err) > cap,
        )

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        raise NotSupported("kill_exec on boxlite")

    async def write_file(
        self,
        sandbox_id: str,
        path: str,
        data: bytes | AsyncIterable[bytes],
        *,
        mode: int = 0o644,
        user: str | None = None,
    ) -> int:
        raise NotSupported("files on boxlite")

    async def read_file(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> AsyncIterator[bytes]:
        raise NotSupported("files on boxlite")
        yield b""  # pragma: no cover

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]:
        raise NotSupported("files on boxlite")

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        raise NotSupported("snapshots on boxlite")

    async def create_from_snapshot(self, snapshot_id: str) -> SandboxInfo:
        raise NotSupported("snapshots on boxlite")

    async def list_snapshots(self) -> list[SnapshotInfo]:
        return []

    async def delete_snapshot(self, snapshot_id: str) -> None:
        raise NotSupported("snapshots on boxlite")

    async def stats(self, sandbox_id: str) -> SandboxStats:
        raise NotSupported("stats on boxlite")

    async def reap_orphans(self) -> list[str]:
        return []

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._runtime.shutdown()
