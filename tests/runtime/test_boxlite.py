"""BoxLite up to the boot boundary: option mapping, images, snapshots, typed failures.

Two kinds of test live here. Those marked "real" drive the installed boxlite library: one
start attempt per module (image preparation from the local layout, then the boot, which fails
on hosts that cannot run its VM), and everything BoxLite can do after it (export, import,
pulls). The others check only the adapter's own logic against a local stand-in for a box and
say nothing about BoxLite itself. End-to-end BoxLite behaviour is the parametrized
conformance suite, which runs wherever a BoxLite VM boots and skips elsewhere with the
probe's diagnosis.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from service.runtime import (
    ExecRequest,
    ImageNotAllowed,
    ImageNotFound,
    InvalidSpec,
    NotSupported,
    PathNotFound,
    ResourceExhausted,
    RuntimeUnavailable,
    SandboxBusy,
    SandboxFailed,
    SandboxInfo,
    SandboxNotFound,
    SandboxRuntime,
    SandboxRuntimeError,
    SandboxSpec,
    SnapshotInfo,
    SnapshotNotFound,
    images,
)
from service.runtime.boxlite import (
    START_TIMEOUT_S,
    BoxliteRuntime,
    ImagePullFailed,
    ImageSource,
    ProbeResult,
    _box_options,
    box_options_kwargs,
    normalized_reference,
    pull_allowed,
    registry_reference,
    typed_error,
)

boxlite = pytest.importorskip("boxlite")

SPEC = SandboxSpec(vcpus=1, memory_mib=256, disk_mib=1024, env={"A": "1"})


# -- option mapping (pure) -----------------------------------------------------------------


def test_option_mapping() -> None:
    spec = SandboxSpec(vcpus=1.5, memory_mib=768, disk_mib=1500, env={"A": "1"}, user="1000:1000")
    kwargs = box_options_kwargs(spec, Path("/images/default"))
    assert kwargs == {
        "rootfs_path": "/images/default",
        "cpus": 2,  # whole CPUs
        "memory_mib": 768,
        "disk_size_gb": 2,  # whole GiB
        "env": [("A", "1")],  # BoxLite wants (name, value) tuples, not a dict
        "user": "1000:1000",
        "working_dir": "/work",
        "network": "disabled",
        "security": "maximum",
        "auto_stop": 0,  # seconds: 0 is never, True would be 1 s
        "auto_delete": 0,
    }
    assert box_options_kwargs(SandboxSpec(user="root"), Path("/x"))["user"] == "0:0"
    pulled = box_options_kwargs(SandboxSpec(), image="python:3.12-slim", security="standard")
    assert pulled["image"] == "python:3.12-slim" and "rootfs_path" not in pulled
    assert pulled["security"] == "standard"
    with pytest.raises(InvalidSpec):
        box_options_kwargs(SandboxSpec(network="open"), Path("/x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidSpec):
        box_options_kwargs(SandboxSpec(), Path("/x"), security="off")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        box_options_kwargs(SandboxSpec())


def test_options_are_accepted_by_boxlite() -> None:
    """real: the mapped values build BoxLite's own option objects, with the fields we meant."""
    options = _box_options(SandboxSpec(env={"A": "1"}, user="1000:1000"), Path("/images/x"))
    assert isinstance(options, boxlite.BoxOptions)
    assert options.rootfs_path == "/images/x" and options.image is None
    assert options.env == [("A", "1")]
    assert (options.cpus, options.memory_mib, options.disk_size_gb) == (1, 512, 1)
    assert options.user == "1000:1000" and options.working_dir == "/work"
    assert options.auto_stop == 0 and type(options.auto_stop) is int
    assert options.auto_delete == 0 and type(options.auto_delete) is int
    assert options.network.outbound.mode == "disabled"
    assert options.network.inbound.mode == "disabled"
    security = options.advanced.security
    maximum = boxlite.SecurityOptions.maximum()
    assert security.jailer_enabled and security.seccomp_enabled
    assert security.max_processes == maximum.max_processes
    assert security.max_open_files == maximum.max_open_files
    # the preset's 1 GiB file-size cap is raised so the box's disk file can reach its cap
    big = _box_options(SandboxSpec(disk_mib=4096), Path("/images/x")).advanced.security
    assert big.max_file_size >= 4 << 30
    standard = _box_options(SandboxSpec(), image="python:3.12-slim", security="standard")
    assert standard.image == "python:3.12-slim" and standard.rootfs_path is None
    assert standard.advanced.security.max_processes is None  # the standard preset
    assert standard.advanced.security.seccomp_enabled


def test_registry_reference() -> None:
    for name in (
        "python:3.12-slim",
        "docker.io/library/alpine:3.20",
        "ghcr.io/org/tool",
        "localhost:5000/team/app:1.0",
        "alpine@sha256:" + "a" * 64,
    ):
        assert registry_reference(name), name
    # bare words belong to the local image store; the rest is not a reference at all
    for name in ("default", "does-not-exist", "", "UPPER:1", "a b:1", "x:", "../x:1", "a" * 300):
        assert not registry_reference(name), name


def test_library_errors_become_typed_errors() -> None:
    """The mapping by BoxLite's own error classes (constructed here, not raised by a VM)."""
    lib = boxlite
    engine = typed_error(lib.EngineError("The VM failed to start"), "start", diagnosis="logs")
    assert isinstance(engine, RuntimeUnavailable) and engine.diagnosis == "logs"
    missing = typed_error(lib.NotFoundError("x"), "import", snapshot_id="snap-1")
    assert isinstance(missing, SnapshotNotFound)
    assert isinstance(typed_error(lib.NotFoundError("x"), "e", sandbox_id="b"), SandboxNotFound)
    assert isinstance(typed_error(lib.InvalidStateError("paused"), "export"), SandboxBusy)
    stopped = typed_error(lib.StoppedError("gone"), "exec", sandbox_id="b")
    assert isinstance(stopped, SandboxFailed) and stopped.reason == "stopped"
    assert isinstance(typed_error(lib.ResourceExhaustedError("x"), "c"), ResourceExhausted)
    assert isinstance(typed_error(lib.InvalidArgumentError("x"), "create"), InvalidSpec)
    other = typed_error(lib.StorageError("disk"), "export")
    assert type(other) is SandboxRuntimeError and "StorageError: disk" in str(other)


# -- the adapter's logic against a local stand-in ------------------------------------------


class _LocalExecution:
    """Stands in for a BoxLite native execution by running the command on the host.

    Only the adapter's logic (line streams, cap, deadline, base64 transfer) is under test here;
    it says nothing about BoxLite itself.
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    def id(self) -> str:  # a method, as on BoxLite's Execution
        return f"local-{self.proc.pid}"

    async def _lines(self, stream: asyncio.StreamReader | None) -> AsyncIterator[str]:
        assert stream is not None
        while line := await stream.readline():
            yield line.decode()

    def stdout(self) -> AsyncIterator[str]:
        return self._lines(self.proc.stdout)

    def stderr(self) -> AsyncIterator[str]:
        return self._lines(self.proc.stderr)

    def stdin(self) -> Any:
        proc = self.proc

        class Writer:
            async def send_input(self, data: bytes) -> None:
                assert proc.stdin is not None
                proc.stdin.write(data)
                await proc.stdin.drain()

            async def close(self) -> None:
                assert proc.stdin is not None
                proc.stdin.close()

        return Writer()

    async def wait(self) -> Any:
        code = await self.proc.wait()
        return type("Result", (), {"exit_code": code, "error_message": None})()

    async def kill(self) -> None:
        self.proc.kill()


class _LocalBox:
    id = "local-box"

    def __init__(self) -> None:
        self.limits: list[int] = []
        self.exported: list[str] = []

    async def exec(
        self, cmd: str, args: list[str], env: Any, tty: bool, user: Any, limit_s: int, cwd: str
    ) -> _LocalExecution:
        self.limits.append(limit_s)
        proc = await asyncio.create_subprocess_exec(
            cmd,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return _LocalExecution(proc)

    async def export(self, *, dest: str) -> str:
        await asyncio.sleep(0.3)
        await asyncio.to_thread(Path(dest).write_bytes, b"archive")
        self.exported.append(dest)
        return dest


def _adapter(tmp_path: Path) -> tuple[BoxliteRuntime, _LocalBox]:
    runtime = BoxliteRuntime(tmp_path, runtime=None, home=tmp_path / "boxlite")
    info = SandboxInfo(
        id="local-box",
        runtime="boxlite",
        image="default",
        image_digest="x",
        spec=SandboxSpec(),
        state="running",
        created_at=0.0,
    )
    box = _LocalBox()
    runtime._track(box, info)
    return runtime, box


async def test_adapter_exec_cap_and_deadline(tmp_path: Path) -> None:
    runtime, box = _adapter(tmp_path)
    flood = ExecRequest(argv=["sh", "-c", "yes | head -c 100000; echo e >&2"], output_cap=1000)
    execution = await runtime.exec("local-box", flood)
    assert execution.id.startswith("local-")  # BoxLite's id, read through its method
    result = await execution.wait()
    assert (result.outcome, result.exit_code) == ("exited", 0)
    assert len(result.stdout) == 1000 and result.stdout_bytes == 100000
    assert result.stdout_truncated and result.stderr == b"e\n"
    started = time.monotonic()
    slow = await runtime.run("local-box", ExecRequest(argv=["sleep", "30"], timeout_s=0.5))
    assert slow.outcome == "timeout" and slow.exit_code is None
    assert time.monotonic() - started < 3
    # our watchdog ends it; BoxLite's own timeout only sits behind it as a backstop
    assert box.limits[-1] > 0.5


async def test_adapter_files_round_trip(tmp_path: Path) -> None:
    """write_file streams through exec stdin, read_file through exec stdout (base64 lines)."""
    runtime, _ = _adapter(tmp_path)
    payload = os.urandom(300_000)
    target = str(tmp_path / "sub" / "blob")
    assert await runtime.write_file("local-box", target, payload) == len(payload)
    back = b"".join([c async for c in runtime.read_file("local-box", target)])
    assert back == payload
    names = [e.name for e in await runtime.list_files("local-box", str(tmp_path / "sub"))]
    assert names == ["blob"]
    with pytest.raises(PathNotFound):
        [c async for c in runtime.read_file("local-box", str(tmp_path / "missing"))]


async def test_lacking_capabilities_are_declared_and_refused(tmp_path: Path) -> None:
    """BoxLite snapshots, but neither copies files between boxes nor changes a running box's
    network: it says so by name, and those methods refuse with NotSupported (a 501)."""
    runtime, _ = _adapter(tmp_path)
    assert isinstance(runtime, SandboxRuntime)
    assert runtime.supports("snapshots")
    assert not runtime.supports("copy_files")
    assert not runtime.supports("update_network")
    with pytest.raises(NotSupported):
        await runtime.copy_files("local-box", "local-box")
    with pytest.raises(NotSupported):
        await runtime.update_network("local-box", "allowlist", ["example.com:443"])


async def test_adapter_snapshot_refuses_a_busy_box_and_holds_new_work(tmp_path: Path) -> None:
    runtime, box = _adapter(tmp_path)
    running = await runtime.exec("local-box", ExecRequest(argv=["sleep", "30"]))
    with pytest.raises(SandboxBusy):
        await runtime.snapshot("local-box")
    await running.kill()
    assert (await running.wait()).outcome == "killed"
    snapshotting = asyncio.create_task(runtime.snapshot("local-box"))
    await asyncio.sleep(0.05)  # the export is under way
    during = await runtime.run("local-box", ExecRequest(argv=["echo", "during"]))
    snapshot = await snapshotting
    assert during.stdout == b"during\n" and snapshotting.done()
    assert box.exported and snapshot.size_bytes == len(b"archive")
    assert await runtime.list_snapshots() == [snapshot]


async def test_image_names(tmp_path: Path, state_dir: Path) -> None:
    """A local layout by name; a registry reference is pulled; a bare unknown name is not."""

    @dataclass
    class Pulled:
        config_digest: str

    class Images:
        pulls: list[str] = []

        async def pull(self, reference: str) -> Pulled:
            self.pulls.append(reference)
            return Pulled("sha256:" + "b" * 64)

    class Native:
        images = Images()

    runtime = BoxliteRuntime(
        state_dir, runtime=Native(), home=tmp_path / "boxlite", image_registries=("docker.io",)
    )
    local = await runtime.resolve_image(images.DEFAULT_IMAGE)
    assert local.rootfs_path is not None and local.reference is None
    assert (local.rootfs_path / "index.json").is_file()
    await runtime.check_image(images.DEFAULT_IMAGE)
    await runtime.check_image("python:3.12-slim")  # pulled here, before anything is recorded
    pulled = await runtime.resolve_image("python:3.12-slim")  # as create does right after
    assert pulled == ImageSource("python:3.12-slim", "sha256:" + "b" * 64, reference=pulled.name)
    for check in (runtime.check_image, runtime.resolve_image):
        with pytest.raises(ImageNotFound) as missing:
            await check("does-not-exist")
        assert not isinstance(missing.value, ImagePullFailed)
    assert Native.images.pulls == ["python:3.12-slim"]  # once, and never for a bare word


# -- real: the installed library, one start attempt per module -----------------------------


@pytest.fixture(scope="module")
async def real(
    tmp_path_factory: pytest.TempPathFactory, state_dir: Path
) -> AsyncIterator[BoxliteRuntime]:
    """A BoxliteRuntime on the real library with a home of its own, without the probe gate."""
    runtime = BoxliteRuntime.unchecked(state_dir, tmp_path_factory.mktemp("bl") / "boxlite")
    runtime.image_registries = ("*",)  # the pull tests name registries on this host
    yield runtime
    for info in await runtime._runtime.list_info():
        await runtime._discard(info.id)
    await runtime.close()


@dataclass
class Attempt:
    box: Any
    info: SandboxInfo
    error: RuntimeUnavailable | None
    seconds: float


@pytest.fixture(scope="module")
async def attempt(real: BoxliteRuntime) -> Attempt:
    """The one start attempt: a box from the local default image, kept whatever happens."""
    source = await real.resolve_image(images.DEFAULT_IMAGE)
    box = await real._new_box(source, SPEC)
    started = time.monotonic()
    error = None
    try:
        await real._start_box(box, discard=False)
    except RuntimeUnavailable as exc:
        error = exc
    info = SandboxInfo(
        id=box.id,
        runtime="boxlite",
        image=images.DEFAULT_IMAGE,
        image_digest=source.digest,
        spec=SPEC,
        state="failed" if error else "running",
        created_at=time.time(),
    )
    real._track(box, info)
    return Attempt(box, info, error, time.monotonic() - started)


def _needs_unbootable(attempt: Attempt) -> RuntimeUnavailable:
    if attempt.error is None:
        pytest.skip("a BoxLite VM boots on this host; the conformance suite covers it")
    return attempt.error


def _backing_chain(path: Path) -> list[Path]:
    """The qcow2 backing chain of a disk file, down to the first non-qcow2 file."""
    chain = [path]
    while True:
        with chain[-1].open("rb") as fh:
            header = fh.read(20)
            if header[:4] != b"QFI\xfb":
                return chain
            offset, size = struct.unpack(">QI", header[8:20])
            if not offset:
                return chain
            fh.seek(offset)
            chain.append(Path(fh.read(size).decode()))


async def test_failed_boot_is_typed_with_diagnosis(attempt: Attempt) -> None:
    """real: the boot failure is RuntimeUnavailable with BoxLite's error and its log lines."""
    error = _needs_unbootable(attempt)
    assert error.runtime == "boxlite"
    assert error.diagnosis.startswith("EngineError: ") or "did not boot" in error.diagnosis
    assert "shim" in error.diagnosis  # lines from the box's shim logs
    assert attempt.seconds < START_TIMEOUT_S + 10


async def test_image_is_prepared_from_the_local_layout(
    attempt: Attempt, real: BoxliteRuntime
) -> None:
    """real: the first start turned the OCI layout into the box's disk, boot or not."""
    digest = images.get_image(real.state_dir, images.DEFAULT_IMAGE).digest.split(":")[1]
    assert list((real.home / "images" / "local").glob(f"*{digest[:8]}/extracted"))
    disk = real.home / "boxes" / attempt.box.id / "disks" / "disk.qcow2"
    chain = _backing_chain(disk)
    assert all(p.is_file() for p in chain)
    prepared = chain[-1]
    assert prepared.suffix == ".ext4" and prepared.parent.name == "disk-images"
    assert prepared.stat().st_size > 10 << 20


@pytest.fixture(scope="module")
async def snapshot(real: BoxliteRuntime, attempt: Attempt) -> SnapshotInfo:
    return await real.snapshot(attempt.info.id)


async def test_snapshot_after_a_start_attempt(
    real: BoxliteRuntime, attempt: Attempt, snapshot: SnapshotInfo
) -> None:
    """real: an export of the box's disk, listed with its real size, kept across restarts."""
    assert snapshot.sandbox_id == attempt.info.id and snapshot.runtime == "boxlite"
    assert (snapshot.image, snapshot.spec) == (images.DEFAULT_IMAGE, SPEC)
    archive = real.snapshots_dir / f"{snapshot.id}.boxlite"
    assert snapshot.size_bytes == archive.stat().st_size > 10 << 20  # the flattened disk
    assert snapshot in await real.list_snapshots()
    restarted = BoxliteRuntime(real.state_dir, runtime=None, home=real.home)
    assert snapshot in await restarted.list_snapshots()


async def test_box_from_a_snapshot_stands_alone(
    real: BoxliteRuntime, snapshot: SnapshotInfo
) -> None:
    """real: the import is a new box with the source's options and a disk of its own.

    A disk of its own matters: BoxLite 0.10.8 clones share qcow2 base layers, and removing
    one box of a clone chain can delete a base another box still needs.
    """
    box = await real._import(snapshot.id)
    try:
        info = await box.info()
        assert (info.cpus, info.memory_mib) == (SPEC.vcpus, SPEC.memory_mib)
        assert info.network.outbound.mode == "disabled"
        assert not info.state.running
        disk = real.home / "boxes" / box.id / "disks" / "disk.qcow2"
        assert _backing_chain(disk) == [disk]
    finally:
        await real._discard(box.id)


async def test_create_from_snapshot_failure_is_typed_and_bounded(
    real: BoxliteRuntime, attempt: Attempt, snapshot: SnapshotInfo
) -> None:
    """real: import, then a start cut at our own deadline; nothing is left behind."""
    _needs_unbootable(attempt)
    before = {info.id for info in await real._runtime.list_info()}
    real.start_timeout_s = 3
    started = time.monotonic()
    try:
        with pytest.raises(RuntimeUnavailable) as failure:
            await real.create_from_snapshot(snapshot.id)
    finally:
        real.start_timeout_s = START_TIMEOUT_S
    assert time.monotonic() - started < 15
    assert "did not boot within 3 s" in failure.value.diagnosis
    assert {info.id for info in await real._runtime.list_info()} == before
    assert await real.list_sandboxes() == [attempt.info]
    assert snapshot in await real.list_snapshots()


async def test_delete_snapshot(real: BoxliteRuntime, attempt: Attempt) -> None:
    """real: a second export of the same box, then deleted; ids are checked before paths."""
    second = await real.snapshot(attempt.info.id)
    await real.delete_snapshot(second.id)
    assert second not in await real.list_snapshots()
    assert not list(real.snapshots_dir.glob(f"{second.id}*"))
    with pytest.raises(SnapshotNotFound):
        await real.create_from_snapshot(second.id)
    await real.delete_snapshot(second.id)  # already gone: not an error
    for bad in ("../x", "snap-zz", ""):
        with pytest.raises(SnapshotNotFound):
            await real.delete_snapshot(bad)


async def test_pull_failure_is_typed_with_the_library_message(real: BoxliteRuntime) -> None:
    """real: a registry that refuses the connection (on every host: port 1 on localhost)."""
    started = time.monotonic()
    with pytest.raises(ImagePullFailed) as failure:
        await real.check_image("localhost:1/airlock/none:1")
    with pytest.raises(ImagePullFailed):
        await real.create("localhost:1/airlock/none:1", SandboxSpec())
    assert time.monotonic() - started < 10
    assert isinstance(failure.value, ImageNotFound)
    assert failure.value.image == "localhost:1/airlock/none:1"
    assert "Failed to pull image" in failure.value.detail  # BoxLite's own words
    assert "Failed to pull image" in str(failure.value)


async def test_pull_that_hangs_is_cut_at_our_deadline(real: BoxliteRuntime) -> None:
    """real: a registry that accepts the connection and never answers."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    real.pull_timeout_s = 2
    started = time.monotonic()
    try:
        with pytest.raises(ImagePullFailed) as failure:
            await real.create(f"127.0.0.1:{port}/airlock/silent:1", SandboxSpec())
    finally:
        real.pull_timeout_s = 600
        server.close()
    assert time.monotonic() - started < 5
    assert "did not finish within 2 s" in failure.value.detail


async def test_unbootable_host_refuses_to_open(boxlite_probe: ProbeResult, state_dir: Path) -> None:
    """The (cached) boot probe's diagnosis is what `open` reports."""
    if boxlite_probe.ok:
        pytest.skip("a BoxLite VM boots on this host; the failure path does not apply")
    assert boxlite_probe.version is not None and boxlite_probe.diagnosis
    with pytest.raises(RuntimeUnavailable) as failure:
        await BoxliteRuntime.open(state_dir, boxlite_probe)
    assert failure.value.runtime == "boxlite"
    assert failure.value.diagnosis == boxlite_probe.diagnosis


def test_references_read_as_docker_reads_them() -> None:
    assert normalized_reference("python:3.12-slim") == "docker.io/library/python"
    assert normalized_reference("acme/tool@sha256:" + "a" * 64) == "docker.io/acme/tool"
    assert normalized_reference("ghcr.io/acme/tool:1") == "ghcr.io/acme/tool"
    assert normalized_reference("localhost:5000/x/y:2") == "localhost:5000/x/y"
    assert pull_allowed("ghcr.io/acme/tool:1", ("ghcr.io/acme",))
    assert not pull_allowed("ghcr.io/acmevil/tool:1", ("ghcr.io/acme",))
    assert not pull_allowed("ghcr.io.evil.example/acme/tool", ("ghcr.io",))
    assert pull_allowed("python:3.12", ("docker.io/library",))
    assert not pull_allowed("python:3.12", ())
    assert pull_allowed("anything.example/x", ("*",))


async def test_a_registry_the_operator_did_not_allow_is_never_pulled(state_dir: Path) -> None:
    """real: by default (no AIRLOCK_IMAGE_REGISTRIES) a tenant's registry reference is refused
    before BoxLite is asked to pull it: the host fetches nothing a tenant names."""
    runtime = BoxliteRuntime.unchecked(state_dir)
    try:
        connections: list[int] = []
        listener = await asyncio.start_server(lambda r, w: connections.append(1), "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        try:
            for check in (runtime.check_image, runtime.resolve_image):
                with pytest.raises(ImageNotAllowed):
                    await check(f"127.0.0.1:{port}/airlock/tool:1")
            with pytest.raises(ImageNotAllowed):
                await runtime.create(f"127.0.0.1:{port}/airlock/tool:1", SandboxSpec())
        finally:
            listener.close()
        assert connections == []  # no connection was made to the registry
        await runtime.check_image(images.DEFAULT_IMAGE)  # local images are always there
    finally:
        await runtime.close()
