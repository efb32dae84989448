"""`GVisorRuntime`: the SandboxRuntime on gVisor, one `runsc` sandbox per Airlock sandbox.

The runtime composes parts by responsibility, each an object given only what it uses:
lifecycle.py (launch, teardown, orphans), execs.py, files.py, snapshots.py, pause.py,
policy.py (a running sandbox's network). What they share is its `Core` (core.py): the runsc
command line (runsc.py), the record store (store.py), the network (network.py), the host
memory budget (host_memory.py) and what opening the runtime learned.

State under `<state_dir>/gvisor/`: `runsc/` (runsc's --root), `sandboxes/<id>/` (bundle,
record, exec process files), `snapshots/<id>/` (checkpoint images). See README.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import resource
import shutil
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import images
from ..errors import NotSupported, RuntimeUnavailable, SandboxNotFound
from ..execution import ExecutionBase
from ..protocol import Capability, PortConnection
from ..specs import parse_user, validate
from ..types import (
    ExecRequest,
    ExecResult,
    FileEntry,
    PauseInfo,
    SandboxInfo,
    SandboxSpec,
    SandboxStats,
    SnapshotInfo,
    TtySize,
)
from . import agent_boot, agent_link, bundle, cgroups, network, reaper, sandbox_cgroups
from .core import NAME, Core
from .execs import Execs
from .files import Files
from .host_memory import HostMemory, default_budget_mib
from .lifecycle import Birth, Lifecycle
from .pause import Pauses
from .platform import PlatformChoice, choose_platform
from .platform import version as platform_version
from .policy import Policy
from .runsc import Runsc
from .snapshots import Snapshots
from .store import Sandbox, Store
from .usage import AGENT_HELLO_S, Usage

if TYPE_CHECKING:
    from ..config import RuntimeConfig

log = logging.getLogger(__name__)

CGROUP_PARENT = sandbox_cgroups.DEFAULT


class InCore:
    """An attribute of the runtime that is its core's, where every part reads the same one
    (tests and the service read it on the runtime; some tests change it)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, runtime: GVisorRuntime | None, owner: type | None = None) -> Any:
        return self if runtime is None else getattr(runtime.core, self.name)

    def __set__(self, runtime: GVisorRuntime, value: object) -> None:
        setattr(runtime.core, self.name, value)


class GVisorRuntime:
    """`SandboxRuntime` on gVisor. Build with `GVisorRuntime.open(state_dir, platform=None)`.

    Its parts are objects of their own, each given what it uses: `execs`, `files`, `policy`
    (a running sandbox's network), `lifecycle` (launch, teardown, orphans), `snapshots` and
    `pauses`; `core` holds what they share. The protocol's methods are the parts'."""

    name = NAME
    snapshots_memory = True
    capabilities: frozenset[Capability] = frozenset(
        {"snapshots", "copy_files", "update_network", "move_snapshots", "pause", "ports"}
    )
    state_dir = InCore()
    root = InCore()
    use_agent = InCore()
    cli = InCore()
    store = InCore()
    reaper = InCore()
    networks = InCore()
    host_memory = InCore()
    platform_choice = InCore()
    runsc_version = InCore()
    exact_nproc = InCore()
    keeps_exec_processes = InCore()
    checkpoint_leaves_running = InCore()

    def __init__(
        self,
        state_dir: Path,
        runsc: str,
        platform: str,
        network_range: str | None = None,
        use_agent: bool = True,
        host_memory_mib: int | None = None,
        cgroups_under: str = CGROUP_PARENT,
    ) -> None:
        state_dir = Path(state_dir).resolve()
        root = state_dir / "gvisor"
        self.runsc = runsc
        self.platform = platform
        # Sandboxes of this state dir live under their own cgroup, so reaping leftovers here
        # never touches another state dir's (another service or test run on the same host).
        # `cgroups_under`: the absolute cgroup all of them go below (sandbox_cgroups.resolve).
        key = hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]
        self.core = core = Core(
            state_dir=state_dir,
            cli=Runsc(runsc, root / "runsc", platform),
            store=Store(root / "sandboxes", f"{cgroups_under}/{key}"),
            networks=network.Networks(network_range or network.DEFAULT_RANGE),
            host_memory=HostMemory(host_memory_mib or default_budget_mib()),
            platform_choice=PlatformChoice(platform, "given"),
            use_agent=use_agent,
        )
        self.execs = Execs(core.store, core.cli)
        self.files = Files(core.store, self.execs)
        self.policy = Policy(core.store, core.networks)
        self.lifecycle = Lifecycle(core)
        self.snapshots = Snapshots(core, self.lifecycle, self.execs)
        self.pauses = Pauses(core, self.lifecycle, self.snapshots, self.execs)
        self.usage = Usage(core.store, core.cli, self.execs)

    @property
    def cgroup_parent(self) -> str:
        return self.store.cgroup_parent

    def cgroup_path(self, sandbox_id: str) -> str:
        return self.store.cgroup_path(sandbox_id)

    def supports(self, capability: Capability) -> bool:
        return capability in self.capabilities

    @classmethod
    async def open(
        cls,
        state_dir: Path,
        platform: str | None = None,
        network_range: str | None = None,
        use_agent: bool = True,
        host_memory_mib: int | None = None,
        cgroup_parent: str = CGROUP_PARENT,
    ) -> GVisorRuntime:
        """Check the host can run gVisor sandboxes; raise RuntimeUnavailable with why not.
        `cgroup_parent`: an absolute cgroup path, or `self` (sandbox_cgroups.py)."""
        runsc = shutil.which("runsc")
        if runsc is None:
            raise RuntimeUnavailable(
                "gvisor", "runsc not found on PATH; fix: apt-get install runsc"
            )
        if os.geteuid() != 0:
            raise RuntimeUnavailable("gvisor", "runsc with cgroup caps needs root")
        if cgroups.detect() == "none":
            raise RuntimeUnavailable("gvisor", "no cgroup filesystem at /sys/fs/cgroup")
        under = await asyncio.to_thread(sandbox_cgroups.resolve, cgroup_parent)
        chosen = await asyncio.to_thread(choose_platform, runsc, platform)
        runtime = cls(
            Path(state_dir), runsc, chosen.name, network_range, use_agent, host_memory_mib, under
        )
        runtime.platform_choice = chosen
        runtime.runsc_version = await asyncio.to_thread(platform_version, runsc)
        _raise_open_files_limit()
        for sub in ("runsc", "sandboxes", "snapshots"):
            (runtime.root / sub).mkdir(parents=True, exist_ok=True)
        # Exec process files carry secrets in their environment: only root may look in.
        runtime.root.chmod(0o700)
        runtime.host_memory.load(runtime.root / "sandboxes")
        reaper.become_subreaper()
        cgroups.cap_parent_pids(under)
        log.info(
            "gvisor runtime ready: %s (%s), platform %s, cgroup %s under %s, "
            "sandbox memory budget %d MiB",
            runsc,
            runtime.runsc_version,
            chosen,
            cgroups.detect(),
            runtime.store.cgroup_parent,
            runtime.host_memory.budget_mib,
        )
        return runtime

    @classmethod
    async def from_config(cls, config: RuntimeConfig) -> GVisorRuntime:
        """The runtime as the service's configuration asks for (see config.py)."""
        runtime = await cls.open(
            config.state_dir,
            config.runsc_platform,
            network_range=config.network_range,
            use_agent=config.use_agent,
            host_memory_mib=config.host_memory_mib,
            cgroup_parent=config.cgroup_parent,
        )
        runtime.exact_nproc = config.exact_nproc
        return runtime

    async def check_image(self, image: str) -> None:
        """Raise ImageNotFound (or InvalidImage) unless `create` could use `image`."""
        await asyncio.to_thread(images.get_image, self.state_dir, image)

    async def create(self, image: str, spec: SandboxSpec) -> SandboxInfo:
        validate(spec)
        info, rootfs = await asyncio.to_thread(images.ensure_rootfs, self.state_dir, image)
        path_env = next(
            (e[5:] for e in info.config.get("Env", []) or [] if str(e).startswith("PATH=")),
            bundle.DEFAULT_PATH,
        )
        agent = agent_boot.IN_SANDBOX if self.use_agent and agent_boot.available(rootfs) else None
        birth = Birth(info, spec, str(path_env), rootfs, agent)
        async with self.lifecycle.launched(birth, "run") as sandbox:
            await self._own_writable_dirs(sandbox, rootfs)
        return sandbox.info()

    async def _own_writable_dirs(self, sandbox: Sandbox, rootfs: Path) -> None:
        """On its disk, /work and the home directory are the image's own directories, owned
        as the image made them: when the sandbox's user is another, they become its (as the
        tmpfs mounted there were)."""
        if bundle.layout_of(sandbox.meta.writable) != bundle.DISK:
            return
        uid, gid = parse_user(sandbox.spec.user)
        wanted = [d for d in ("/work", bundle.home_of(rootfs)) if d]
        if all(_owned(rootfs / d.lstrip("/"), uid, gid) for d in wanted):
            return
        script = f"mkdir -p {' '.join(wanted)} && chown {uid}:{gid} {' '.join(wanted)}"
        code = await self.execs.root_helper(sandbox, "own", ["/bin/sh", "-c", script], "CAP_CHOWN")
        if code != 0:
            log.warning("sandbox %s: /work is not its user's (exit %s)", sandbox.id, code)

    async def get(self, sandbox_id: str) -> SandboxInfo:
        sandbox = self.store.load(sandbox_id)
        if sandbox.meta.failure_reason:
            return sandbox.info()
        self.store.adopt(sandbox)
        if sandbox.meta.paused:
            return sandbox.info("paused")
        state = await self.execs.state(sandbox_id)
        return sandbox.info("running" if state == "running" else "stopped")

    async def list_sandboxes(self) -> list[SandboxInfo]:
        states: dict[str, str] = {}
        containers = await self.cli.containers()
        with contextlib.suppress(ValueError, TypeError):
            states = {c["id"]: c["status"] for c in containers or []}
        found = []
        for directory in self.store.dirs():
            with contextlib.suppress(SandboxNotFound, KeyError):
                sandbox = self.store.load(directory.name)
                status = states.get(sandbox.id)
                if sandbox.meta.paused:
                    status = "paused"
                found.append(sandbox.info(status if status in ("running", "paused") else "stopped"))
        return found

    async def stats(self, sandbox_id: str) -> SandboxStats:
        return await self.usage.stats(sandbox_id)

    async def open_port(self, sandbox_id: str, port: int) -> PortConnection:
        """Through the exec agent's link (agent_ports.py): the agent connects from inside."""
        sandbox = await self.store.ready(sandbox_id)
        link = sandbox.link
        if link is None or not await link.wait_ready(AGENT_HELLO_S):
            raise NotSupported(self.name, "reach ports of a sandbox without its exec agent")
        try:
            return await link.ports.open(port)
        except (agent_link.AgentLost, ConnectionError) as exc:
            raise NotSupported(self.name, f"reach ports: the exec agent is lost ({exc})") from exc

    async def close(self) -> None:
        self.store.close()

    async def agent_ready(self, sandbox_id: str, timeout_s: float = 10.0) -> bool:
        return await self.execs.agent_ready(sandbox_id, timeout_s)

    async def tty_available(self, sandbox_id: str) -> bool:
        return await self.execs.tty_available(sandbox_id)

    async def resize_exec(self, sandbox_id: str, exec_id: str, size: TtySize) -> None:
        await self.execs.resize_exec(sandbox_id, exec_id, size)

    async def exec(self, sandbox_id: str, request: ExecRequest) -> ExecutionBase:
        return await self.execs.exec(sandbox_id, request)

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        return await self.execs.run(sandbox_id, request)

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        await self.execs.kill_exec(sandbox_id, exec_id)

    async def write_file(
        self,
        sandbox_id: str,
        path: str,
        data: bytes | AsyncIterable[bytes],
        *,
        mode: int = 0o644,
        user: str | None = None,
    ) -> int:
        return await self.files.write_file(sandbox_id, path, data, mode=mode, user=user)

    def read_file(
        self, sandbox_id: str, path: str, *, user: str | None = None, max_bytes: int | None = None
    ) -> AsyncIterator[bytes]:
        return self.files.read_file(sandbox_id, path, user=user, max_bytes=max_bytes)

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]:
        return await self.files.list_files(sandbox_id, path, user=user)

    async def copy_files(self, source_id: str, target_id: str) -> int:
        return await self.files.copy_files(source_id, target_id)

    async def update_network(
        self,
        sandbox_id: str,
        mode: str,
        allow: list[str] | None = None,
        private: list[str] | None = None,
    ) -> SandboxInfo:
        return await self.policy.update_network(sandbox_id, mode, allow, private)

    async def network_counters(self, sandbox_id: str) -> dict[str, int] | None:
        return await self.policy.network_counters(sandbox_id)

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        return await self.snapshots.snapshot(sandbox_id)

    async def create_from_snapshot(
        self, snapshot_id: str, private: list[str] | None = None
    ) -> SandboxInfo:
        return await self.snapshots.create_from_snapshot(snapshot_id, private)

    async def list_snapshots(self) -> list[SnapshotInfo]:
        return await self.snapshots.list_snapshots()

    async def delete_snapshot(self, snapshot_id: str) -> None:
        await self.snapshots.delete_snapshot(snapshot_id)

    def export_snapshot(self, snapshot_id: str) -> AsyncIterator[bytes]:
        return self.snapshots.export_snapshot(snapshot_id)

    async def import_snapshot(self, snapshot_id: str, data: AsyncIterable[bytes]) -> SnapshotInfo:
        return await self.snapshots.import_snapshot(snapshot_id, data)

    async def pause(self, sandbox_id: str) -> PauseInfo:
        return await self.pauses.pause(sandbox_id)

    async def resume(self, sandbox_id: str) -> SandboxInfo:
        return await self.pauses.resume(sandbox_id)

    async def destroy(self, sandbox_id: str) -> None:
        await self.lifecycle.destroy(sandbox_id)

    async def reap_orphans(self) -> list[str]:
        return await self.lifecycle.reap_orphans()


def _raise_open_files_limit() -> None:
    """Each sandbox's agent link holds two pipe ends in this process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _owned(path: Path, uid: int, gid: int) -> bool:
    try:
        stat = path.stat()
    except OSError:
        return False
    return (stat.st_uid, stat.st_gid) == (uid, gid)
