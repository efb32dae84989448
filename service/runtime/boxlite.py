"""BoxLite runtime: option mapping, the boot probe, and a basic runtime on top of BoxLite.

The only module that touches the `boxlite` package. BoxLite needs a VM to boot; on hosts
where it cannot (for example kvm-pvm nested virtualization) every entry point raises
RuntimeUnavailable carrying BoxLite's own diagnosis. See README.md for what is covered.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import math
import secrets
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import files, gvisor_spec, images
from .errors import (
    ExecNotFound,
    ImageNotFound,
    InvalidSpec,
    RuntimeUnavailable,
    SandboxNotFound,
    SandboxRuntimeError,
)
from .paths import sandbox_path
from .types import (
    ExecRequest,
    ExecResult,
    FileEntry,
    Outcome,
    OutputChunk,
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


class _BoxExecution:
    """The Execution protocol over a BoxLite native execution (line-based output streams)."""

    def __init__(
        self,
        native: Any,
        request: ExecRequest,
        stdin: bytes | AsyncIterable[bytes] | None,
        requested_at: float,
    ) -> None:
        self._native = native
        self._request = request
        self._requested_at = requested_at
        self._started = time.monotonic()
        self._queue: asyncio.Queue[OutputChunk | None] = asyncio.Queue()
        self._kept = {"stdout": bytearray(), "stderr": bytearray()}
        self._total = {"stdout": 0, "stderr": 0}
        self._forced: Outcome | None = None
        self.feed_error: Exception | None = None
        self._stdin = stdin
        self._task = asyncio.create_task(self._supervise())

    @property
    def id(self) -> str:
        return str(getattr(self._native, "id", "")) or f"exec-{id(self):x}"

    @property
    def done(self) -> bool:
        return self._task.done()

    async def output(self) -> AsyncIterator[OutputChunk]:
        while (chunk := await self._queue.get()) is not None:
            yield chunk

    async def wait(self) -> ExecResult:
        return await asyncio.shield(self._task)

    async def kill(self) -> None:
        await self._stop("killed")

    async def _stop(self, outcome: Outcome) -> None:
        if self._forced is None and not self._task.done():
            self._forced = outcome
            with contextlib.suppress(Exception):
                await self._native.kill()

    async def _pump(self, name: Literal["stdout", "stderr"], stream: Any) -> None:
        if stream is None:
            return
        cap = self._request.output_cap
        async for line in stream:
            data = line.encode() if isinstance(line, str) else bytes(line)
            self._total[name] += len(data)
            room = cap - len(self._kept[name])
            if room > 0:
                self._kept[name] += data[:room]
                self._queue.put_nowait(OutputChunk(name, data[:room]))

    async def _feed(self) -> None:
        writer = self._native.stdin()
        if writer is None:
            return
        try:
            if isinstance(self._stdin, bytes | bytearray):
                await writer.send_input(bytes(self._stdin))
            elif self._stdin is not None:
                async for chunk in self._stdin:
                    await writer.send_input(chunk)
        except Exception as exc:  # the caller's data source failed: stop, never half-apply
            self.feed_error = exc
            await self._stop("killed")
        finally:
            with contextlib.suppress(Exception):
                await writer.close()

    async def _supervise(self) -> ExecResult:
        tasks = [
            asyncio.create_task(self._pump("stdout", self._native.stdout())),
            asyncio.create_task(self._pump("stderr", self._native.stderr())),
        ]
        if self._stdin is not None:
            tasks.append(asyncio.create_task(self._feed()))
        waiting = asyncio.create_task(self._native.wait())
        try:
            done, _ = await asyncio.wait({waiting}, timeout=self._request.timeout_s)
            if not done:
                await self._stop("timeout")
                await asyncio.wait({waiting}, timeout=10)
            finished = time.monotonic()
            await asyncio.wait(tasks, timeout=1.0)
            result = waiting.result() if waiting.done() and not waiting.exception() else None
            code = getattr(result, "exit_code", None)
            outcome: Outcome = self._forced or ("exited" if code is not None else "killed")
            return ExecResult(
                exec_id=self.id,
                exit_code=code if outcome == "exited" else None,
                outcome=outcome,
                started_after_s=self._started - self._requested_at,
                duration_s=finished - self._started,
                stdout=bytes(self._kept["stdout"]),
                stderr=bytes(self._kept["stderr"]),
                stdout_bytes=self._total["stdout"],
                stderr_bytes=self._total["stderr"],
                stdout_truncated=self._total["stdout"] > len(self._kept["stdout"]),
                stderr_truncated=self._total["stderr"] > len(self._kept["stderr"]),
            )
        finally:
            for task in tasks:
                task.cancel()
            self._queue.put_nowait(None)


class BoxliteRuntime:
    """SandboxRuntime on BoxLite microVMs.

    Open with `await BoxliteRuntime.open(state_dir, probe_result)`, which refuses a host where
    the probe failed. Exec, files (through `sh`/`cat`/`base64` inside the box, like gVisor),
    destroy, list and stats are implemented; snapshots raise NotSupported. None of it has run
    end to end yet: no development host boots a BoxLite VM (see README.md).
    """

    name = "boxlite"

    def __init__(self, state_dir: Path, runtime: Any) -> None:
        self.state_dir = Path(state_dir).resolve()
        self._runtime = runtime
        self._boxes: dict[str, tuple[Any, SandboxInfo]] = {}
        self._execs: dict[str, _BoxExecution] = {}

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

    async def check_image(self, image: str) -> None:
        """Raise ImageNotFound (or InvalidImage) unless `create` could use `image`."""
        await asyncio.to_thread(images.get_image, self.state_dir, image)

    async def create(self, image: str, spec: SandboxSpec) -> SandboxInfo:
        gvisor_spec.validate(spec)
        info = images.get_image(self.state_dir, image)
        box = await self._runtime.create(_box_options(spec, Path(info.path)), name=None)
        try:
            await box.start()
        except Exception as exc:
            with contextlib.suppress(Exception):
                await self._runtime.remove(box.id, force=True)
            raise SandboxRuntimeError(f"boxlite could not start a box: {exc}") from exc
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

    async def _start(
        self,
        sandbox_id: str,
        request: ExecRequest,
        stdin: bytes | AsyncIterable[bytes] | None,
    ) -> _BoxExecution:
        box = self._box(sandbox_id)
        info = self._boxes[sandbox_id][1]
        requested = time.monotonic()
        env = {**info.spec.env, **request.env}
        user = request.user or info.spec.user
        native = await box.exec(
            request.argv[0],
            request.argv[1:],
            list(env.items()) or None,
            False,
            "0:0" if user == "root" else user,
            math.ceil(request.timeout_s) + 5,  # BoxLite's own backstop behind our deadline
            sandbox_path(request.cwd),
        )
        execution = _BoxExecution(native, request, stdin, requested)
        self._execs[execution.id] = execution
        return execution

    async def exec(self, sandbox_id: str, request: ExecRequest) -> _BoxExecution:
        if not request.argv:
            raise InvalidSpec("argv must not be empty")
        return await self._start(sandbox_id, request, request.stdin)

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        return await (await self.exec(sandbox_id, request)).wait()

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        self._box(sandbox_id)
        execution = self._execs.get(exec_id)
        if execution is None or execution.done:
            raise ExecNotFound(exec_id)
        await execution.kill()

    async def write_file(
        self,
        sandbox_id: str,
        path: str,
        data: bytes | AsyncIterable[bytes],
        *,
        mode: int = 0o644,
        user: str | None = None,
    ) -> int:
        target = sandbox_path(path)
        written = 0

        async def counted() -> AsyncIterator[bytes]:
            nonlocal written
            if isinstance(data, bytes | bytearray):
                written = len(data)
                yield bytes(data)
                return
            async for chunk in data:
                written += len(chunk)
                yield chunk

        temp = files.upload_temp_name(secrets.token_hex(8))
        argv = ["/bin/sh", "-c", files.WRITE_SCRIPT, "sh", target, f"{mode:o}", temp]
        request = ExecRequest(argv=argv, cwd="/", user=user, timeout_s=3600, output_cap=65536)
        execution = await self._start(sandbox_id, request, counted())
        result = await execution.wait()
        if execution.feed_error is not None:
            raise execution.feed_error
        files.raise_for(result.exit_code, target, result.stderr)
        return written

    async def read_file(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> AsyncIterator[bytes]:
        # BoxLite streams output as text lines: the bytes travel as base64 (76-column lines,
        # so any run of whole lines decodes on its own).
        target = sandbox_path(path)
        info = self._boxes[sandbox_id][1] if sandbox_id in self._boxes else None
        box = self._box(sandbox_id)
        native = await box.exec(
            "/bin/sh",
            ["-c", files.READ_BASE64_SCRIPT, "sh", target],
            None,
            False,
            user or (info.spec.user if info else None),
            3600,
            "/",
        )
        errors = bytearray()

        async def collect_errors() -> None:
            async for line in native.stderr():
                if len(errors) < 65536:
                    errors.extend(line.encode() if isinstance(line, str) else line)

        error_task = asyncio.create_task(collect_errors())
        pending = ""
        try:
            async for line in native.stdout():
                pending += line if isinstance(line, str) else line.decode()
                complete, _, pending = pending.rpartition("\n")
                if complete:
                    yield base64.b64decode("".join(complete.split()))
            if pending.strip():
                yield base64.b64decode(pending.strip())
            result = await native.wait()
            await asyncio.wait({error_task}, timeout=1.0)
            files.raise_for(result.exit_code, target, bytes(errors))
        finally:
            error_task.cancel()

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]:
        target = sandbox_path(path)
        argv = ["/bin/sh", "-c", files.LIST_SCRIPT, "sh", target]
        request = ExecRequest(argv=argv, cwd="/", user=user, timeout_s=120, output_cap=64 << 20)
        result = await self.run(sandbox_id, request)
        files.raise_for(result.exit_code, target, result.stderr)
        return files.parse_listing(result.stdout)

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        raise NotSupported("snapshots on boxlite")

    async def create_from_snapshot(self, snapshot_id: str) -> SandboxInfo:
        raise NotSupported("snapshots on boxlite")

    async def list_snapshots(self) -> list[SnapshotInfo]:
        return []

    async def delete_snapshot(self, snapshot_id: str) -> None:
        raise NotSupported("snapshots on boxlite")

    async def stats(self, sandbox_id: str) -> SandboxStats:
        box = self._box(sandbox_id)
        spec = self._boxes[sandbox_id][1].spec
        metrics = await box.metrics()
        return SandboxStats(
            cpu_seconds=0.0,
            memory_bytes=int(getattr(metrics, "memory_bytes", 0) or 0),
            memory_limit_bytes=spec.memory_mib << 20,
            pids=0,
            pids_limit=spec.pids,
        )

    async def reap_orphans(self) -> list[str]:
        """Remove boxes in this runtime's home that this process did not create."""
        removed = []
        for info in await self._runtime.list_info():
            if info.id not in self._boxes:
                with contextlib.suppress(Exception):
                    await self._runtime.remove(info.id, force=True)
                    removed.append(info.id)
        return removed

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._runtime.shutdown()
