"""BoxLite runtime: option mapping, the boot probe, and the SandboxRuntime on BoxLite boxes.

The only module that touches the `boxlite` package. BoxLite needs a VM to boot; on hosts
where it cannot (for example kvm-pvm nested virtualization) a start raises
RuntimeUnavailable carrying BoxLite's own diagnosis. See README.md for what is covered.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import re
import secrets
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from . import egress, files, gvisor_spec, images
from .config import RuntimeConfig
from .errors import (
    ExecNotFound,
    ImageNotAllowed,
    ImageNotFound,
    InvalidSpec,
    ResourceExhausted,
    RuntimeUnavailable,
    SandboxBusy,
    SandboxFailed,
    SandboxNotFound,
    SandboxRuntimeError,
    SnapshotNotFound,
)
from .execution import ExecutionBase
from .paths import sandbox_path
from .types import (
    HELPER_PATH,
    ExecRequest,
    ExecResult,
    FileEntry,
    Outcome,
    OutputChunk,
    SandboxInfo,
    SandboxSpec,
    SandboxStats,
    SnapshotInfo,
    new_exec_id,
)

PROBE_TIMEOUT_S = 30.0
START_TIMEOUT_S = 180.0  # image preparation from the layout happens inside the first start
PULL_TIMEOUT_S = 600.0
PULL_REUSE_S = 60.0  # a pull by check_image serves the create that follows
ARCHIVE_TIMEOUT_S = 600.0  # export (snapshot) and import (sandbox from a snapshot)
LOG_LINE = 240
SNAPSHOT_PREFIX = "snap-"
SNAPSHOT_ID = re.compile(r"snap-[0-9a-f]{24}")
Security = Literal["standard", "maximum"]

# A registry reference ([registry[:port]/]path[:tag][@digest]), after the distribution
# reference grammar. Bare words are left to the local image store (see `registry_reference`).
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    r"(?:(?P<registry>[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]{1,5})?)/)?"
    rf"(?P<path>{_PATH_PART}(?:/{_PATH_PART})*)"
    r"(?::(?P<tag>\w[\w.-]{0,127}))?"
    r"(?:@(?P<digest>[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}))?"
)


class NotSupported(SandboxRuntimeError):
    """This runtime cannot do the operation."""

    tenant_safe = True


class ImagePullFailed(ImageNotFound):
    """A registry image could not be pulled; `detail` carries BoxLite's own message."""

    def __init__(self, image: str, detail: str) -> None:
        super().__init__(image)
        self.detail = detail
        self.args = (f"image not found: {image} (pull failed: {detail})",)

    def public(self) -> str:
        return f"image not found: {self.image} (the registry pull failed)"


def version() -> str | None:
    try:
        from importlib.metadata import version as dist_version

        return dist_version("boxlite")
    except Exception:
        return None


def registry_reference(name: str) -> bool:
    """Whether `name` is a plausible registry reference to pull.

    It must follow the reference grammar and name a tag, digest or repository path
    (`python:3.12-slim`, `ghcr.io/org/tool`, `alpine@sha256:...`): a bare word such as
    `default` is a local image name, and one that is missing is ImageNotFound rather than a
    pull from Docker Hub.
    """
    if len(name) > 255 or not _REFERENCE.fullmatch(name):
        return False
    return any(mark in name for mark in ":/@")


def normalized_reference(name: str) -> str:
    """`registry/repository` of a reference, as Docker reads it: the first part is a registry
    when it has a dot or a port or is `localhost`, else Docker Hub (`library/` for one part)."""
    repository = name.split("@", 1)[0]
    head, _, last = repository.rpartition("/")
    repository = f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]
    first, _, rest = repository.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return repository
    return f"docker.io/{repository if rest else 'library/' + repository}"


def pull_allowed(name: str, registries: tuple[str, ...]) -> bool:
    """Whether `name` is under one of `registries` (registries or repository prefixes)."""
    if "*" in registries:
        return True
    full = normalized_reference(name)
    return any(full == entry or full.startswith(entry + "/") for entry in registries)


def box_options_kwargs(
    spec: SandboxSpec,
    rootfs_path: Path | None = None,
    *,
    image: str | None = None,
    security: Security = "maximum",
    resolver: egress.Resolver = egress.system_resolver,
) -> dict[str, Any]:
    """Map a SandboxSpec onto BoxOptions keyword arguments, in plain values (unit-tested).

    Exactly one of `rootfs_path` (a local OCI layout) and `image` (a registry reference).
    BoxLite wants whole CPUs and GiB of disk, `env` as (name, value) tuples and `user` as
    "uid[:gid]"; `auto_stop`/`auto_delete` are seconds (0: never), so they are integers,
    never booleans. `network` is the outbound mode and `security` the SecurityOptions
    preset; `_box_options` turns both into BoxLite objects.
    """
    if (rootfs_path is None) == (image is None):
        raise ValueError("give exactly one of rootfs_path and image")
    if spec.network == "open":
        # BoxLite has no enforcement point of ours in front of an open box, so the host,
        # link-local (cloud metadata) and other boxes could not be kept out: refused.
        raise InvalidSpec("network 'open' is not supported by BoxLite; use an allowlist")
    if security not in ("standard", "maximum"):
        raise InvalidSpec(f"unknown BoxLite security preset {security!r}")
    source = {"rootfs_path": str(rootfs_path)} if rootfs_path is not None else {"image": image}
    outbound: dict[str, Any] = {"network": "disabled"}
    if spec.network == "allowlist":
        # BoxLite's own allowlist; an empty list would mean "any" there.
        if not spec.network_allow:
            raise InvalidSpec("BoxLite needs at least one allowlist entry")
        outbound = {"network": "enabled", "allow_net": allow_net(spec, resolver)}
    return {
        **source,
        "cpus": max(1, math.ceil(spec.vcpus)),
        "memory_mib": spec.memory_mib,
        "disk_size_gb": max(1, math.ceil(spec.disk_mib / 1024)),
        "env": [(k, v) for k, v in spec.env.items()],
        "user": spec.user if spec.user != "root" else "0:0",
        "working_dir": "/work",
        **outbound,
        "security": security,
        "auto_stop": 0,
        "auto_delete": 0,
    }


def allow_net(spec: SandboxSpec, resolver: egress.Resolver) -> list[str]:
    """BoxLite's `allow_net` from the policy as egress.py vets it: networks without their
    always-blocked parts (BoxLite only allows, it has no rule to carve them out), host names
    pinned to the addresses checked now (BoxLite would otherwise resolve them again itself,
    and could be answered with a private address)."""
    policy = egress.resolve("allowlist", spec.network_allow, spec.network_private, resolver)
    rules: list[str] = []
    for target in policy.destinations:
        for part in egress.without_blocked(target.net):
            text = str(part.network_address) if part.prefixlen == 32 else str(part)
            rule = f"{text}:{target.port}" if target.port else text
            if rule not in rules:
                rules.append(rule)
    return rules


def _box_options(
    spec: SandboxSpec,
    rootfs_path: Path | None = None,
    *,
    image: str | None = None,
    security: Security = "maximum",
) -> Any:
    import boxlite

    kwargs = box_options_kwargs(spec, rootfs_path, image=image, security=security)
    mode = kwargs.pop("network")
    allow_net = kwargs.pop("allow_net", None)
    preset = getattr(boxlite.SecurityOptions, kwargs.pop("security"))()
    # The maximum preset caps the shim's file size at 1 GiB; the box's qcow2 disk is a file
    # of the shim and must be able to grow to the disk cap.
    disk_bytes = (kwargs["disk_size_gb"] << 30) + (64 << 20)
    if preset.max_file_size is not None and preset.max_file_size < disk_bytes:
        preset.max_file_size = disk_bytes
    return boxlite.BoxOptions(
        **kwargs,
        network=boxlite.NetworkSpec(
            outbound=boxlite.OutboundNetworkSpec(mode=mode, allow_net=allow_net)
            if allow_net
            else boxlite.OutboundNetworkSpec(mode=mode),
            inbound=boxlite.InboundNetworkSpec(mode="disabled"),
        ),
        advanced=boxlite.AdvancedBoxOptions(security=preset),
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


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def typed_error(
    exc: BaseException,
    what: str,
    *,
    sandbox_id: str | None = None,
    snapshot_id: str | None = None,
    diagnosis: str | None = None,
) -> SandboxRuntimeError:
    """The runtime error for a BoxLite exception (by BoxLite's own error classes)."""
    if isinstance(exc, SandboxRuntimeError):
        return exc
    from boxlite import errors as lib

    text = _describe(exc)
    if isinstance(exc, lib.EngineError):  # the VM could not be started or died
        return RuntimeUnavailable("boxlite", diagnosis or text)
    if isinstance(exc, lib.NotFoundError):
        if snapshot_id is not None:
            return SnapshotNotFound(snapshot_id)
        if sandbox_id is not None:
            return SandboxNotFound(sandbox_id)
    if isinstance(exc, lib.InvalidStateError):
        return SandboxBusy(f"{what}: {text}")
    if isinstance(exc, lib.StoppedError) and sandbox_id is not None:
        return SandboxFailed(sandbox_id, "stopped", text)
    if isinstance(exc, lib.ResourceExhaustedError):
        return ResourceExhausted(f"{what}: {text}")
    if isinstance(exc, lib.InvalidArgumentError):
        return InvalidSpec(f"{what}: {text}")
    return SandboxRuntimeError(f"boxlite {what} failed: {text}")


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    diagnosis: str
    seconds: float
    version: str | None


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Read a late result of an abandoned call, so it is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()


async def _bounded(awaitable: Any, seconds: float) -> Any:
    """Await with a deadline that holds even if the native call ignores cancellation."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)
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
        why = f"{_describe(exc)}\n{detail}"
        return ProbeResult(False, why.strip(), time.monotonic() - started, ver)
    finally:
        if box is not None:
            with contextlib.suppress(Exception):
                await _bounded(runtime.remove(box.id, force=True), 15)
        if runtime is not None:
            with contextlib.suppress(Exception):
                await _bounded(runtime.shutdown(), 15)


def _native_exec_id(native: Any) -> str:
    """BoxLite's execution id: `Execution.id` is a method there, not an attribute."""
    value = getattr(native, "id", None)
    with contextlib.suppress(Exception):
        value = value() if callable(value) else value
    return value if isinstance(value, str) else ""


class _BoxExecution(ExecutionBase):
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
        self._id = request.exec_id or _native_exec_id(native) or new_exec_id()
        self._task = asyncio.create_task(self._supervise())

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


@dataclass(frozen=True)
class ImageSource:
    """Where a box's root filesystem comes from: a local OCI layout or a registry reference."""

    name: str
    digest: str
    rootfs_path: Path | None = None
    reference: str | None = None


@dataclass
class _Sandbox:
    box: Any
    info: SandboxInfo
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    execs: dict[str, _BoxExecution] = field(default_factory=dict)
    starting: int = 0  # execs being started and file reads in flight

    def __post_init__(self) -> None:
        self.ready.set()

    @property
    def busy(self) -> bool:
        return self.starting > 0 or any(not e.done for e in self.execs.values())


class BoxliteRuntime:
    """SandboxRuntime on BoxLite microVMs.

    Open with `await BoxliteRuntime.open(state_dir, probe_result)`, which refuses a host where
    the probe failed. Images are local OCI layouts (`rootfs_path`) or registry references
    pulled by BoxLite. Exec and files run through BoxLite's exec streams; snapshots are
    BoxLite exports (a flattened disk archive), and a sandbox from a snapshot is an import of
    that archive: files carry over, running processes do not (see README.md).
    """

    name = "boxlite"
    snapshots_memory = False

    def __init__(
        self,
        state_dir: Path,
        runtime: Any,
        *,
        home: Path | None = None,
        security: Security = "maximum",
        image_registries: tuple[str, ...] = (),
    ) -> None:
        self.state_dir = Path(state_dir).resolve()
        # Where a registry reference may be pulled from (empty: nowhere, local images only).
        self.image_registries = image_registries
        self.home = Path(home).resolve() if home is not None else self.state_dir / "boxlite"
        self.snapshots_dir = self.home.with_name(self.home.name + "-snapshots")
        self.security: Security = security
        self.start_timeout_s = START_TIMEOUT_S
        self.pull_timeout_s = PULL_TIMEOUT_S
        self.archive_timeout_s = ARCHIVE_TIMEOUT_S
        self._runtime = runtime
        self._sandboxes: dict[str, _Sandbox] = {}
        self._pulled: dict[str, tuple[float, ImageSource]] = {}

    @classmethod
    async def open(
        cls,
        state_dir: Path,
        probe_result: ProbeResult,
        image_registries: tuple[str, ...] = (),
    ) -> BoxliteRuntime:
        if not probe_result.ok:
            raise RuntimeUnavailable("boxlite", probe_result.diagnosis)
        return cls.unchecked(state_dir, image_registries=image_registries)

    @classmethod
    async def from_config(cls, config: RuntimeConfig, probe_result: ProbeResult) -> BoxliteRuntime:
        """The runtime as the service's configuration asks for (see config.py); of its fields
        BoxLite takes the state dir and the registries it may pull from (the gVisor ones have
        no BoxLite meaning)."""
        return await cls.open(config.state_dir, probe_result, config.image_registries)

    @classmethod
    def unchecked(
        cls, state_dir: Path, home: Path | None = None, image_registries: tuple[str, ...] = ()
    ) -> BoxliteRuntime:
        """A runtime without the boot probe (tests up to the boot boundary, tools)."""
        import boxlite

        home = Path(home) if home is not None else _home(state_dir)
        home.mkdir(parents=True, exist_ok=True)
        native = boxlite.Boxlite(boxlite.Options(home_dir=str(home)))
        return cls(state_dir, native, home=home, image_registries=image_registries)

    # -- sandboxes ------------------------------------------------------------------------

    def _sandbox(self, sandbox_id: str) -> _Sandbox:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            raise SandboxNotFound(sandbox_id)
        return sandbox

    def _track(self, box: Any, info: SandboxInfo) -> _Sandbox:
        sandbox = _Sandbox(box, info)
        self._sandboxes[info.id] = sandbox
        return sandbox

    async def check_image(self, image: str) -> None:
        """Raise ImageNotFound (or InvalidImage) unless `create` could use `image`.

        A registry reference is pulled here (bounded), so a failed pull is ImagePullFailed
        before the caller records anything; `create` right after reuses that pull.
        """
        await self.resolve_image(image)

    async def resolve_image(self, image: str) -> ImageSource:
        """A local layout by that name, else a registry reference BoxLite pulls (bounded)."""
        try:
            info = await asyncio.to_thread(images.get_image, self.state_dir, image)
            return ImageSource(image, info.digest, rootfs_path=Path(info.path))
        except ImageNotFound:
            if not registry_reference(image):
                raise
        if not pull_allowed(image, self.image_registries):
            raise ImageNotAllowed(image)
        recent = self._pulled.get(image)
        if recent is not None and time.monotonic() - recent[0] < PULL_REUSE_S:
            return recent[1]
        try:
            pulled = await _bounded(self._runtime.images.pull(image), self.pull_timeout_s)
        except TimeoutError:
            why = f"the pull did not finish within {self.pull_timeout_s:g} s"
            raise ImagePullFailed(image, why) from None
        except Exception as exc:  # BoxLite reports a failed pull as StorageError/ImageError
            raise ImagePullFailed(image, _describe(exc)) from exc
        digest = str(getattr(pulled, "config_digest", "") or "")
        source = ImageSource(image, digest, reference=image)
        self._pulled[image] = (time.monotonic(), source)
        return source

    async def _new_box(self, source: ImageSource, spec: SandboxSpec) -> Any:
        # Resolving the allowlist's names may wait on DNS: not on the event loop.
        options = await asyncio.to_thread(
            _box_options, spec, source.rootfs_path, image=source.reference, security=self.security
        )
        try:
            return await self._runtime.create(options, name=None)
        except Exception as exc:
            raise typed_error(exc, "create") from exc

    async def _discard(self, box_id: str) -> None:
        with contextlib.suppress(Exception):
            await _bounded(self._runtime.remove(box_id, force=True), 30)

    async def _start_box(self, box: Any, *, discard: bool = True) -> None:
        """Start (boot) a box within `start_timeout_s`; a failure says what BoxLite saw.

        A VM that cannot boot is RuntimeUnavailable with BoxLite's error and the telling lines
        of its logs. The box is removed unless `discard` is false.
        """
        try:
            await _bounded(box.start(), self.start_timeout_s)
            return
        except TimeoutError:
            failure: BaseException | None = None
            head = f"the box did not boot within {self.start_timeout_s:g} s"
        except Exception as exc:
            failure, head = exc, _describe(exc)
        diagnosis = f"{head}\n{_log_excerpts(self.home, box.id)}".strip()
        if discard:
            await self._discard(box.id)
        if failure is None:
            raise RuntimeUnavailable("boxlite", diagnosis)
        raise typed_error(failure, "start", diagnosis=diagnosis) from failure

    async def create(self, image: str, spec: SandboxSpec) -> SandboxInfo:
        gvisor_spec.validate(spec)
        source = await self.resolve_image(image)
        box = await self._new_box(source, spec)
        await self._start_box(box)
        info = SandboxInfo(
            id=box.id,
            runtime=self.name,
            image=image,
            image_digest=source.digest,
            spec=spec,
            state="running",
            created_at=time.time(),
        )
        return self._track(box, info).info

    async def get(self, sandbox_id: str) -> SandboxInfo:
        return self._sandbox(sandbox_id).info

    async def list_sandboxes(self) -> list[SandboxInfo]:
        return [sandbox.info for sandbox in self._sandboxes.values()]

    async def destroy(self, sandbox_id: str) -> None:
        sandbox = self._sandboxes.pop(sandbox_id, None)
        if sandbox is None:
            return
        try:
            await self._runtime.remove(sandbox_id, force=True)
        except Exception as exc:
            mapped = typed_error(exc, "remove", sandbox_id=sandbox_id)
            if not isinstance(mapped, SandboxNotFound):
                raise mapped from exc

    # -- exec -----------------------------------------------------------------------------

    async def _native_exec(
        self,
        sandbox: _Sandbox,
        argv: list[str],
        env: dict[str, str],
        user: str,
        limit_s: int,
        cwd: str,
    ) -> Any:
        """Start a process in the box once no snapshot holds it (the caller counts it)."""
        await sandbox.ready.wait()
        try:
            return await sandbox.box.exec(
                argv[0],
                argv[1:],
                list(env.items()) or None,
                False,
                "0:0" if user == "root" else user,
                limit_s,
                cwd,
            )
        except Exception as exc:
            raise typed_error(exc, "exec", sandbox_id=sandbox.info.id) from exc

    async def _start(
        self,
        sandbox_id: str,
        request: ExecRequest,
        stdin: bytes | AsyncIterable[bytes] | None,
    ) -> _BoxExecution:
        sandbox = self._sandbox(sandbox_id)
        running = sandbox.execs.get(request.exec_id or "")
        if running is not None and not running.done:
            raise InvalidSpec(f"exec id {request.exec_id!r} is in use")
        requested = time.monotonic()
        sandbox.starting += 1
        try:
            native = await self._native_exec(
                sandbox,
                request.argv,
                {"PATH": HELPER_PATH}
                if request.helper
                else {**sandbox.info.spec.env, **request.env},
                request.user or sandbox.info.spec.user,
                # BoxLite's own timeout is only a backstop behind our deadline watchdog.
                math.ceil(request.timeout_s) + 5,
                sandbox_path(request.cwd),
            )
            execution = _BoxExecution(native, request, stdin, requested)
            for done in [key for key, e in sandbox.execs.items() if e.done]:
                del sandbox.execs[done]  # finished execs are ExecNotFound for kill_exec anyway
            sandbox.execs[execution.id] = execution
        finally:
            sandbox.starting -= 1
        return execution

    async def exec(self, sandbox_id: str, request: ExecRequest) -> _BoxExecution:
        if not request.argv:
            raise InvalidSpec("argv must not be empty")
        return await self._start(sandbox_id, request, request.stdin)

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        return await (await self.exec(sandbox_id, request)).wait()

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        sandbox = self._sandbox(sandbox_id)
        execution = sandbox.execs.get(exec_id)
        if execution is None or execution.done:
            raise ExecNotFound(exec_id)
        await execution.kill()

    # -- files (through exec stdin/stdout; BoxLite's copy_in/out refuse guest mounts) ----

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
        request = ExecRequest(
            argv=argv, cwd="/", user=user, timeout_s=3600, output_cap=65536, helper=True
        )
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
        sandbox = self._sandbox(sandbox_id)
        sandbox.starting += 1
        try:
            native = await self._native_exec(
                sandbox,
                ["/bin/sh", "-c", files.READ_BASE64_SCRIPT, "sh", target],
                {"PATH": HELPER_PATH},
                user or sandbox.info.spec.user,
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
        finally:
            sandbox.starting -= 1

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]:
        target = sandbox_path(path)
        argv = ["/bin/sh", "-c", files.LIST_SCRIPT, "sh", target]
        request = ExecRequest(
            argv=argv, cwd="/", user=user, timeout_s=120, output_cap=64 << 20, helper=True
        )
        result = await self.run(sandbox_id, request)
        files.raise_for(result.exit_code, target, result.stderr)
        return files.parse_listing(result.stdout)

    # -- snapshots: BoxLite export (flattened disk archive) / import ---------------------

    def _snapshot_paths(self, snapshot_id: str) -> tuple[Path, Path]:
        if not SNAPSHOT_ID.fullmatch(snapshot_id):
            raise SnapshotNotFound(snapshot_id)
        base = self.snapshots_dir / snapshot_id
        return base.with_suffix(".json"), base.with_suffix(".boxlite")

    def _snapshot_info(self, meta: dict[str, Any], archive: Path) -> SnapshotInfo:
        return SnapshotInfo(
            id=meta["id"],
            runtime=self.name,
            sandbox_id=meta["sandbox_id"],
            image=meta["image"],
            image_digest=meta["image_digest"],
            spec=msgspec.convert(meta["spec"], SandboxSpec),
            created_at=meta["created_at"],
            size_bytes=archive.stat().st_size,
        )

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        """Export the box's disk (BoxLite pauses the VM for the flatten, then resumes it).

        Refused while an exec runs (SandboxBusy); work arriving meanwhile waits for it.
        """
        sandbox = self._sandbox(sandbox_id)
        async with sandbox.lock:
            sandbox.ready.clear()
            try:
                if sandbox.busy:
                    raise SandboxBusy(f"sandbox {sandbox_id} has running execs")
                return await self._export(sandbox)
            finally:
                sandbox.ready.set()

    async def _export(self, sandbox: _Sandbox) -> SnapshotInfo:
        snapshot_id = SNAPSHOT_PREFIX + secrets.token_hex(12)
        record, archive = self._snapshot_paths(snapshot_id)
        self.snapshots_dir.mkdir(parents=True, exist_ok=True)
        try:
            await _bounded(sandbox.box.export(dest=str(archive)), self.archive_timeout_s)
        except BaseException as exc:
            archive.unlink(missing_ok=True)
            if isinstance(exc, TimeoutError):
                raise SandboxRuntimeError(
                    f"boxlite export of {sandbox.info.id} did not finish within "
                    f"{self.archive_timeout_s:g} s"
                ) from None
            if isinstance(exc, Exception):
                raise typed_error(exc, "export", sandbox_id=sandbox.info.id) from exc
            raise
        info = sandbox.info
        meta = {
            "id": snapshot_id,
            "sandbox_id": info.id,
            "image": info.image,
            "image_digest": info.image_digest,
            "spec": msgspec.to_builtins(info.spec),
            "created_at": time.time(),
        }
        temp = record.with_suffix(".tmp")
        temp.write_text(json.dumps(meta, indent=1))
        temp.replace(record)
        return self._snapshot_info(meta, archive)

    def _load_snapshot(self, snapshot_id: str) -> tuple[dict[str, Any], Path]:
        record, archive = self._snapshot_paths(snapshot_id)
        try:
            meta = json.loads(record.read_text())
        except (OSError, ValueError) as exc:
            raise SnapshotNotFound(snapshot_id) from exc
        if not archive.is_file():
            raise SnapshotNotFound(snapshot_id)
        return meta, archive

    async def _import(self, snapshot_id: str) -> Any:
        """A new, stopped box from the snapshot's archive (its own flattened disk)."""
        _, archive = self._load_snapshot(snapshot_id)
        try:
            return await _bounded(
                self._runtime.import_box(str(archive), None), self.archive_timeout_s
            )
        except TimeoutError:
            raise SandboxRuntimeError(
                f"boxlite import of {snapshot_id} did not finish within "
                f"{self.archive_timeout_s:g} s"
            ) from None
        except Exception as exc:
            raise typed_error(exc, "import", snapshot_id=snapshot_id) from exc

    async def create_from_snapshot(self, snapshot_id: str) -> SandboxInfo:
        meta, _ = self._load_snapshot(snapshot_id)
        box = await self._import(snapshot_id)
        await self._start_box(box)
        info = SandboxInfo(
            id=box.id,
            runtime=self.name,
            image=meta["image"],
            image_digest=meta["image_digest"],
            spec=msgspec.convert(meta["spec"], SandboxSpec),
            state="running",
            created_at=time.time(),
            from_snapshot=snapshot_id,
        )
        return self._track(box, info).info

    async def list_snapshots(self) -> list[SnapshotInfo]:
        found = []
        for record in sorted(self.snapshots_dir.glob(f"{SNAPSHOT_PREFIX}*.json")):
            with contextlib.suppress(SnapshotNotFound, KeyError, OSError, ValueError):
                meta, archive = self._load_snapshot(record.stem)
                found.append(self._snapshot_info(meta, archive))
        return found

    async def delete_snapshot(self, snapshot_id: str) -> None:
        record, archive = self._snapshot_paths(snapshot_id)
        record.unlink(missing_ok=True)
        archive.unlink(missing_ok=True)

    # -- the rest -------------------------------------------------------------------------

    async def network_counters(self, sandbox_id: str) -> dict[str, int] | None:
        return None  # BoxLite's network filter keeps no counters we can read

    async def stats(self, sandbox_id: str) -> SandboxStats:
        sandbox = self._sandbox(sandbox_id)
        spec = sandbox.info.spec
        try:
            metrics = await sandbox.box.metrics()
        except Exception as exc:
            raise typed_error(exc, "metrics", sandbox_id=sandbox_id) from exc
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
            if info.id not in self._sandboxes:
                with contextlib.suppress(Exception):
                    await self._runtime.remove(info.id, force=True)
                    removed.append(info.id)
        return removed

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._runtime.shutdown()
