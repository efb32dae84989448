"""`BoxliteRuntime`: the SandboxRuntime on BoxLite microVMs.

Assembled from parts by responsibility (core.py: the boxes and their start; images.py,
execs.py, files.py, snapshots.py); options.py maps a spec onto BoxLite's options, probe.py
decides whether a VM boots here at all.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NotSupported, RuntimeUnavailable, SandboxNotFound
from ..protocol import Capability, PortConnection
from ..specs import validate
from ..types import PauseInfo, SandboxInfo, SandboxSpec, SandboxStats, SnapshotInfo
from .core import START_TIMEOUT_S, ImageSource, Sandbox
from .errors import typed_error
from .files import Files
from .images import PULL_TIMEOUT_S, Images
from .native import home_dir
from .options import Security
from .probe import ProbeResult
from .snapshots import ARCHIVE_TIMEOUT_S, Snapshots

if TYPE_CHECKING:
    from ..config import RuntimeConfig


class BoxliteRuntime(Snapshots, Files, Images):
    """SandboxRuntime on BoxLite microVMs.

    Open with `await BoxliteRuntime.open(state_dir, probe_result)`, which refuses a host where
    the probe failed. Images are local OCI layouts (`rootfs_path`) or registry references
    pulled by BoxLite. Exec and files run through BoxLite's exec streams; snapshots are
    BoxLite exports (a flattened disk archive), and a sandbox from a snapshot is an import of
    that archive: files carry over, running processes do not (see README.md).
    """

    name = "boxlite"
    snapshots_memory = False
    capabilities: frozenset[Capability] = frozenset({"snapshots"})

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
        self._sandboxes: dict[str, Sandbox] = {}
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

        home = Path(home) if home is not None else home_dir(state_dir)
        home.mkdir(parents=True, exist_ok=True)
        native = boxlite.Boxlite(boxlite.Options(home_dir=str(home)))
        return cls(state_dir, native, home=home, image_registries=image_registries)

    async def create(self, image: str, spec: SandboxSpec) -> SandboxInfo:
        validate(spec)
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

    def supports(self, capability: Capability) -> bool:
        return capability in self.capabilities

    async def copy_files(self, source_id: str, target_id: str) -> int:
        raise NotSupported(self.name, "copy files between sandboxes")

    async def update_network(
        self,
        sandbox_id: str,
        mode: str,
        allow: list[str] | None = None,
        private: list[str] | None = None,
    ) -> SandboxInfo:
        raise NotSupported(self.name, "change a running sandbox's network")

    async def export_snapshot(self, snapshot_id: str) -> AsyncIterator[bytes]:
        raise NotSupported(self.name, "move a snapshot to another node")
        yield b""  # pragma: no cover (an async generator that raises at once)

    async def import_snapshot(self, snapshot_id: str, data: AsyncIterable[bytes]) -> SnapshotInfo:
        raise NotSupported(self.name, "move a snapshot to another node")

    async def pause(self, sandbox_id: str) -> PauseInfo:
        # A BoxLite snapshot holds files only: a stopped box would boot afresh, losing its
        # processes, which a pause must keep.
        raise NotSupported(self.name, "pause a sandbox with its processes")

    async def resume(self, sandbox_id: str) -> SandboxInfo:
        raise NotSupported(self.name, "pause a sandbox with its processes")

    async def open_port(self, sandbox_id: str, port: int) -> PortConnection:
        # BoxLite 0.10.8 has tunnels (`box.network.tunnel(port).connect()`, a byte stream),
        # but no VM boots where this project is tested: not wired until it can be exercised.
        raise NotSupported(self.name, "reach a port inside a sandbox")

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
        # BoxLite reports a CPU percentage, not the time spent: not given rather than made up.
        return SandboxStats(
            cpu_seconds=None,
            memory_bytes=int(getattr(metrics, "memory_bytes", 0) or 0),
            memory_limit_bytes=spec.memory_mib << 20,
            pids=0,
            pids_limit=spec.pids,
            processes_limit=spec.pids,
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
