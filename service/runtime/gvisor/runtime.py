"""`GVisorRuntime`: the SandboxRuntime on gVisor, one `runsc` sandbox per Airlock sandbox.

The class is assembled from parts by responsibility: lifecycle.py (launch, teardown,
orphans), execs.py, files.py, snapshots.py, policy.py (a running sandbox's network); it holds
the collaborators core.py declares: the runsc command line (runsc.py), the record store
(store.py), the network (network.py) and the host memory budget (host_memory.py).

State under `<state_dir>/gvisor/`: `runsc/` (runsc's --root), `sandboxes/<id>/` (bundle,
record, exec process files), `snapshots/<id>/` (checkpoint images). See README.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import resource
import shutil
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import images
from ..errors import NotSupported, RuntimeUnavailable, SandboxFailed, SandboxNotFound
from ..protocol import Capability, PortConnection
from ..specs import parse_user, validate
from ..types import SandboxInfo, SandboxSpec, SandboxStats
from . import agent_boot, agent_link, bundle, cgroups, disk, network, reaper, sandbox_cgroups
from .files import Files
from .host_memory import HostMemory, default_budget_mib
from .pause import Pauses
from .platform import PlatformChoice, choose_platform
from .platform import version as platform_version
from .policy import Policy
from .runsc import BackgroundReaper, Runsc
from .store import Sandbox, Store

if TYPE_CHECKING:
    from ..config import RuntimeConfig

log = logging.getLogger(__name__)

CGROUP_PARENT = sandbox_cgroups.DEFAULT


# How long metrics wait for a just-started sandbox's agent (else they do without it).
AGENT_HELLO_S = 2.0


class GVisorRuntime(Pauses, Files, Policy):
    """`SandboxRuntime` on gVisor. Build with `GVisorRuntime.open(state_dir, platform=None)`."""

    name = "gvisor"
    snapshots_memory = True
    capabilities: frozenset[Capability] = frozenset(
        {"snapshots", "copy_files", "update_network", "move_snapshots", "pause", "ports"}
    )

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
        self.state_dir = Path(state_dir).resolve()
        self.use_agent = use_agent
        self.root = self.state_dir / "gvisor"
        self.runsc = runsc
        self.platform = platform
        self.platform_choice = PlatformChoice(platform, "given")
        self.runsc_version = "unknown"
        self.cli = Runsc(runsc, self.root / "runsc", platform)
        # Sandboxes of this state dir live under their own cgroup, so reaping leftovers here
        # never touches another state dir's (another service or test run on the same host).
        # `cgroups_under`: the absolute cgroup all of them go below (sandbox_cgroups.resolve).
        key = hashlib.sha256(str(self.state_dir).encode()).hexdigest()[:12]
        self.store = Store(self.root / "sandboxes", f"{cgroups_under}/{key}")
        self._sandboxes = self.store.live
        self.reaper = BackgroundReaper()
        self.networks = network.Networks(network_range or network.DEFAULT_RANGE)
        self.host_memory = HostMemory(host_memory_mib or default_budget_mib())
        self.exact_nproc = True  # sandboxes count ceil(vcpus) CPUs (bundle.boot_cpus)
        self.starting = 0

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
        sandbox = self._new_sandbox(info, spec, str(path_env), None, rootfs, agent)
        self.store.live[sandbox.id] = sandbox
        async with self._undone_on_failure(sandbox):
            if spec.network != "none":
                await self._make_network(sandbox, spec)
            await self._make_disk(sandbox)
            bundle.write(sandbox, rootfs, exact_nproc=self.exact_nproc)
            await self._start(sandbox, "run")
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
        code = await self._root_helper(sandbox, "own", ["/bin/sh", "-c", script], "CAP_CHOWN")
        if code != 0:
            log.warning("sandbox %s: /work is not its user's (exit %s)", sandbox.id, code)

    async def get(self, sandbox_id: str) -> SandboxInfo:
        sandbox = self.store.load(sandbox_id)
        if sandbox.meta.failure_reason:
            return sandbox.info()
        self.store.adopt(sandbox)
        if sandbox.meta.paused:
            return sandbox.info("paused")
        state = await self._state(sandbox_id)
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
        sandbox = self.store.load(sandbox_id)
        if not sandbox.cgroup.exists():
            raise SandboxFailed(sandbox_id, sandbox.meta.failure_reason or "stopped")
        usage = await asyncio.to_thread(sandbox.cgroup.usage)
        # A sandbox just started has an agent that may not have said hello yet.
        ready = await self.agent_ready(sandbox_id, AGENT_HELLO_S)
        on_disk = bundle.layout_of(sandbox.meta.writable) == bundle.DISK
        mounts = [] if on_disk else list(bundle.WRITABLE)  # on its disk: processes only
        inside = await sandbox.link.usage(mounts) if ready and sandbox.link else None
        processes = inside.processes if inside is not None else await self._processes(sandbox)
        used: int | None = None
        size: int | None = None
        if on_disk:  # the node's view of the sandbox's own file system (disk.py)
            space = await asyncio.to_thread(disk.Disk(sandbox.dir).usage)
            if space is not None:
                used, size = space[0], sandbox.spec.disk_mib << 20
        elif inside is not None:
            used = sum(u for u, _ in inside.mounts.values())
            size = sum(s for _, s in inside.mounts.values())
        return SandboxStats(
            cpu_seconds=usage.cpu_seconds,
            memory_bytes=usage.memory_bytes,
            memory_limit_bytes=usage.memory_limit_bytes,
            pids=usage.pids,
            pids_limit=usage.pids_limit,
            processes=processes,
            processes_limit=sandbox.spec.pids,
            writable_bytes=used if size else None,
            writable_limit_bytes=size or None,
        )

    async def _processes(self, sandbox: Sandbox) -> int | None:
        """Without the agent: the sandbox's processes as `runsc ps` lists them, but its init."""
        code, out = await self.cli.run(
            "ps", "--format=json", sandbox.id, limit_s=10, meta=sandbox.meta
        )
        if code != 0:
            return None
        try:
            listed = json.loads(out) or []
        except ValueError:
            return None
        return max(0, len(listed) - 1)

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
        await self.reaper.close()
        self.store.close()


async def destroy_left(state_dir: Path, *, snapshots: bool = False, strict: bool = False) -> int:
    """Destroy every sandbox a stopped server left in `state_dir` (sandboxes and pool members
    outlive a server by design), and with `snapshots` every snapshot too; returns how many
    sandboxes were destroyed. Nothing where gVisor cannot run: no sandbox can have been made
    there. One that will not go is logged and the rest still are; with `strict` (tests) the
    first such failure is raised once all were tried."""
    try:
        runtime = await GVisorRuntime.open(state_dir)
    except RuntimeUnavailable:
        return 0
    failures: list[Exception] = []
    destroyed = 0

    async def attempt(what: str, step: Awaitable[None]) -> bool:
        try:
            await step
            return True
        except Exception as exc:
            log.exception("%s left in %s could not be removed", what, state_dir)
            failures.append(exc)
            return False

    try:
        for info in await runtime.list_sandboxes():
            destroyed += await attempt(f"sandbox {info.id}", runtime.destroy(info.id))
        if snapshots:
            for snapshot in await runtime.list_snapshots():
                await attempt(f"snapshot {snapshot.id}", runtime.delete_snapshot(snapshot.id))
    finally:
        await runtime.close()
    if strict and failures:
        raise failures[0]
    return destroyed


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
