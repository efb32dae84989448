"""gVisor runtime: one `runsc` sandbox per Airlock sandbox. The only module that runs runsc.

State under `<state_dir>/gvisor/`: `runsc/` (runsc's --root), `sandboxes/<id>/` (bundle,
metadata, exec process files), `snapshots/<id>/` (checkpoint images). See README.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import msgspec

from . import agent_link, cgroups, files, gvisor_spec, hostproc, images, network, reaper
from .agent_link import AgentExecution, AgentLink, AgentLost
from .config import RuntimeConfig
from .errors import (
    ExecNotFound,
    InvalidSpec,
    RuntimeUnavailable,
    SandboxBusy,
    SandboxFailed,
    SandboxNotFound,
    SandboxRuntimeError,
    SnapshotNotFound,
)
from .execution import Classify, ExecutionBase, KillTree, Spawned, SupervisedExecution, spawn
from .host_memory import HostMemory, default_budget_mib
from .inside import HELD_PIPES_SCRIPT, KILL_SCRIPT
from .paths import sandbox_path
from .types import (
    HELPER_PATH,
    ExecRequest,
    ExecResult,
    FileEntry,
    Outcome,
    SandboxInfo,
    SandboxSpec,
    SandboxStats,
    SnapshotInfo,
    new_exec_id,
)

log = logging.getLogger(__name__)

_E = TypeVar("_E", bound=ExecutionBase)

ID_PREFIX = "alk-"  # every runsc container Airlock makes: fixed length, so prefix matching is safe
SNAPSHOT_PREFIX = "snap-"
SANDBOX_ID = re.compile(r"alk-[0-9a-f]{24}")
SNAPSHOT_ID = re.compile(r"snap-[0-9a-f]{24}")
EXEC_ID = re.compile(r"exec-[0-9a-f]{16}")
CGROUP_PARENT = "/airlock"
RUNSC_TIMEOUT_S = 60.0
KILL_TIMEOUT_S = 10.0
TRANSFER_TIMEOUT_S = 3600.0  # file uploads, downloads and copies


# What a sandbox wrote lives in its tmpfs mounts (the root is read-only); `copy_files` moves
# them with tar inside both sandboxes. The mounts' own directories are not in the archive, so
# the target's keep their owner and mode.
PACK_SCRIPT = r"""
cd / || exit 1
for d in work home/sandbox tmp var/tmp; do
  [ -d "$d" ] && find "$d" -mindepth 1 -maxdepth 1 -print0
done | tar -cf - --null -T -
"""
# tar stops reading at the archive's end marker; the rest is read too, so the source's tar is
# always read to its end and its exit status (a file it could not read) is never missed.
UNPACK_SCRIPT = "cd / && tar -xpf - --no-overwrite-dir && exec cat >/dev/null"


def _now() -> float:
    return time.time()


def _raise_open_files_limit() -> None:
    """Each sandbox's agent link holds two pipe ends in this process."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _home_of(rootfs: Path) -> str | None:
    return "/home/sandbox" if (rootfs / "home" / "sandbox").is_dir() else None


def detect_platform(runsc: str, configured: str | None = None) -> str:
    """systrap when this runsc offers it, else ptrace (kvm only when configured)."""
    if configured:
        return configured
    import subprocess

    try:
        out = subprocess.run(
            [runsc, "flags"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "ptrace"
    return "systrap" if "systrap" in (out.stdout + out.stderr) else "ptrace"


@dataclass
class _Sandbox:
    id: str
    dir: Path
    meta: dict[str, Any]
    cgroup_path: str
    execs: dict[str, ExecutionBase] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    oom_baseline: int = 0
    # The exec agent's link (PID 1's stdio), while this process holds it.
    link: AgentLink | None = None
    # Cleared while a snapshot has the sandbox stopped; new work waits for it.
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.ready.set()

    @property
    def agent(self) -> AgentLink | None:
        """The agent link while it is usable (else execs go through `runsc exec`)."""
        return self.link if self.link is not None and self.link.usable else None

    @property
    def bundle(self) -> Path:
        return self.dir / "bundle"

    @property
    def cgroup(self) -> cgroups.Cgroup:
        return cgroups.Cgroup(self.cgroup_path)

    @property
    def spec(self) -> SandboxSpec:
        return msgspec.convert(self.meta["spec"], SandboxSpec)

    def save(self) -> None:
        tmp = self.dir / "sandbox.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=1))
        tmp.replace(self.dir / "sandbox.json")


class GVisorRuntime:
    """`SandboxRuntime` on gVisor. Build with `GVisorRuntime.open(state_dir, platform=None)`."""

    name = "gvisor"
    snapshots_memory = True

    def __init__(
        self,
        state_dir: Path,
        runsc: str,
        platform: str,
        network_range: str | None = None,
        use_agent: bool = True,
        host_memory_mib: int | None = None,
    ) -> None:
        self.state_dir = Path(state_dir).resolve()
        # New sandboxes get the exec agent as PID 1 where the image has python3.
        self.use_agent = use_agent
        self.root = self.state_dir / "gvisor"
        self.runsc = runsc
        self.platform = platform
        self._sandboxes: dict[str, _Sandbox] = {}
        self._owner = {"pid": os.getpid(), "start": hostproc.start_time(os.getpid())}
        self._reaper_task: asyncio.Task[None] | None = None
        # Sandboxes of this state dir live under their own cgroup, so reaping leftovers here
        # never touches another state dir's (another service or test run on the same host).
        key = hashlib.sha256(str(self.state_dir).encode()).hexdigest()[:12]
        self.cgroup_parent = f"{CGROUP_PARENT}/{key}"
        self.networks = network.Networks(network_range or network.DEFAULT_RANGE)
        self.host_memory = HostMemory(host_memory_mib or default_budget_mib())

    def cgroup_path(self, sandbox_id: str) -> str:
        return f"{self.cgroup_parent}/{sandbox_id}"

    @classmethod
    async def open(
        cls,
        state_dir: Path,
        platform: str | None = None,
        network_range: str | None = None,
        use_agent: bool = True,
        host_memory_mib: int | None = None,
    ) -> GVisorRuntime:
        """Check the host can run gVisor sandboxes; raise RuntimeUnavailable with why not."""
        runsc = shutil.which("runsc")
        if runsc is None:
            raise RuntimeUnavailable(
                "gvisor", "runsc not found on PATH; fix: apt-get install runsc"
            )
        if os.geteuid() != 0:
            raise RuntimeUnavailable("gvisor", "runsc with cgroup caps needs root")
        if cgroups.detect() == "none":
            raise RuntimeUnavailable("gvisor", "no cgroup filesystem at /sys/fs/cgroup")
        chosen = await asyncio.to_thread(detect_platform, runsc, platform)
        runtime = cls(Path(state_dir), runsc, chosen, network_range, use_agent, host_memory_mib)
        _raise_open_files_limit()
        for sub in ("runsc", "sandboxes", "snapshots"):
            (runtime.root / sub).mkdir(parents=True, exist_ok=True)
        # Exec process files carry secrets in their environment: only root may look in.
        runtime.root.chmod(0o700)
        runtime.host_memory.load(runtime.root / "sandboxes")
        reaper.become_subreaper()
        cgroups.cap_parent_pids(CGROUP_PARENT)
        log.info(
            "gvisor runtime ready: %s, platform %s, cgroup %s, sandbox memory budget %d MiB",
            runsc,
            chosen,
            cgroups.detect(),
            runtime.host_memory.budget_mib,
        )
        return runtime

    @classmethod
    async def from_config(cls, config: RuntimeConfig) -> GVisorRuntime:
        """The runtime as the service's configuration asks for (see config.py)."""
        return await cls.open(
            config.state_dir,
            config.runsc_platform,
            network_range=config.network_range,
            use_agent=config.use_agent,
            host_memory_mib=config.host_memory_mib,
        )

    # -- runsc plumbing -------------------------------------------------------------------

    def _cmd(self, *args: str, meta: dict[str, Any] | None = None) -> list[str]:
        """A runsc command line. A sandbox with a network runs in its own namespace (made by
        network.py) on the host stack of that namespace: this runsc cannot take a namespace's
        interfaces into its own stack on kernels that show net sysctls in every namespace."""
        prefix = network.netns_prefix(meta or {})
        return [
            *prefix,
            self.runsc,
            f"--root={self.root / 'runsc'}",
            f"--platform={self.platform}",
            "--network=host" if prefix else "--network=none",
            "--cpu-num-from-quota",
            *args,
        ]

    async def _runsc(
        self,
        *args: str,
        limit_s: float = RUNSC_TIMEOUT_S,
        log_file: Path | None = None,
        meta: dict[str, Any] | None = None,
        stdio: tuple[int, int] | None = None,
    ) -> tuple[int, str]:
        """Run a runsc command; returns (exit code, combined output).

        Commands that start a sandbox hand their stdio to it, so they write to a file, or
        (`stdio`: the agent's stdin and stdout) to the exec agent's pipes.
        """
        if log_file is not None:
            with log_file.open("ab") as out:
                proc = await asyncio.create_subprocess_exec(
                    *self._cmd(*args, meta=meta),
                    stdin=stdio[0] if stdio else asyncio.subprocess.DEVNULL,
                    stdout=stdio[1] if stdio else out,
                    stderr=out,
                )
        else:
            proc = await asyncio.create_subprocess_exec(
                *self._cmd(*args, meta=meta),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        try:
            raw, _ = await asyncio.wait_for(proc.communicate(), limit_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            return -1, f"runsc {args[0]} timed out after {limit_s:.0f} s"
        text = (raw or b"").decode(errors="replace")
        if log_file is not None:
            text = hostproc.tail(log_file)
        return proc.returncode or 0, text

    async def _reap_while(self, coro: Any) -> Any:
        """Await `coro` while reaping adopted runsc helpers, so runsc's waits end promptly."""
        task = asyncio.ensure_future(coro)
        while not task.done():
            reaper.reap_adopted()
            await asyncio.wait([task], timeout=0.01)
        reaper.reap_adopted()
        return task.result()

    def _ensure_reaper(self) -> None:
        if self._reaper_task is None or self._reaper_task.done():
            self._reaper_task = asyncio.create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        while True:
            reaper.reap_adopted()
            await asyncio.sleep(2.0)

    def _meta_of(self, sandbox_id: str) -> dict[str, Any]:
        known = self._sandboxes.get(sandbox_id)
        return known.meta if known is not None else {}

    async def _state(self, sandbox_id: str) -> str | None:
        code, out = await self._runsc(
            "state", sandbox_id, limit_s=10, meta=self._meta_of(sandbox_id)
        )
        if code != 0:
            return None
        with contextlib.suppress(ValueError):
            return json.loads(out).get("status")
        return None

    # -- sandboxes ------------------------------------------------------------------------

    def _new_id(self) -> str:
        return ID_PREFIX + secrets.token_hex(12)

    def _load(self, sandbox_id: str) -> _Sandbox:
        if sandbox_id in self._sandboxes:
            return self._sandboxes[sandbox_id]
        if not SANDBOX_ID.fullmatch(sandbox_id):
            raise SandboxNotFound(sandbox_id)
        directory = self.root / "sandboxes" / sandbox_id
        try:
            meta = json.loads((directory / "sandbox.json").read_text())
        except (OSError, ValueError) as exc:
            raise SandboxNotFound(sandbox_id) from exc
        sandbox = _Sandbox(sandbox_id, directory, meta, self._cgroup_of(sandbox_id, meta))
        sandbox.oom_baseline = int(meta.get("oom_baseline", 0))
        self._sandboxes[sandbox_id] = sandbox
        return sandbox

    def _cgroup_of(self, sandbox_id: str, meta: dict[str, Any]) -> str:
        return str(meta.get("cgroup") or self.cgroup_path(sandbox_id))

    def _usable(self, sandbox_id: str) -> _Sandbox:
        sandbox = self._load(sandbox_id)
        if sandbox.meta.get("failure_reason"):
            raise SandboxFailed(sandbox_id, sandbox.meta["failure_reason"])
        self._adopt(sandbox)
        return sandbox

    async def _ready(self, sandbox_id: str) -> _Sandbox:
        """The sandbox, once no snapshot has it stopped; SandboxFailed if it failed."""
        sandbox = self._usable(sandbox_id)
        if not sandbox.ready.is_set():
            await sandbox.ready.wait()
            sandbox = self._usable(sandbox_id)
        return sandbox

    def _adopt(self, sandbox: _Sandbox) -> None:
        """A sandbox of a previous run that this process uses becomes this process's, so
        `reap_orphans` (here or in another process) leaves it alone."""
        if sandbox.meta.get("owner") != self._owner and not self._owned_by_live_process(
            sandbox.meta
        ):
            sandbox.meta["owner"] = self._owner
            sandbox.save()

    def _close_link(self, sandbox: _Sandbox) -> None:
        if sandbox.link is not None:
            sandbox.link.close()
            sandbox.link = None

    def _mark_failed(self, sandbox: _Sandbox, reason: str) -> None:
        if not sandbox.meta.get("failure_reason"):
            log.warning("sandbox %s failed: %s", sandbox.id, reason)
            sandbox.meta["failure_reason"] = reason
            sandbox.save()

    def _info(self, sandbox: _Sandbox, state: str = "running") -> SandboxInfo:
        meta = sandbox.meta
        reason = meta.get("failure_reason")
        return SandboxInfo(
            id=sandbox.id,
            runtime=self.name,
            image=meta["image"],
            image_digest=meta["image_digest"],
            spec=sandbox.spec,
            state="failed" if reason else state,  # type: ignore[arg-type]
            created_at=meta["created_at"],
            failure_reason=reason,
            from_snapshot=meta.get("from_snapshot"),
        )

    def _write_bundle(self, sandbox: _Sandbox, rootfs: Path, image: images.ImageInfo) -> None:
        spec = sandbox.spec
        home = _home_of(rootfs)
        init = images.INIT_PATH
        init_argv = [init] if os.path.lexists(rootfs / init.lstrip("/")) else []
        init_argv = init_argv or gvisor_spec.INIT_FALLBACK
        agent = bool(sandbox.meta.get("agent"))
        config = gvisor_spec.bundle_config(
            sandbox_id=sandbox.id,
            rootfs=rootfs,
            spec=spec,
            cgroups_path=sandbox.cgroup.path,
            home=home,
            init_argv=agent_link.init_argv(init_argv) if agent else init_argv,
            net_dir=sandbox.dir / "net" if sandbox.meta.get("net") else None,
            init_caps=agent_link.CAPS if agent else None,
            extra_mounts=[agent_link.mount()] if agent else None,
        )
        sandbox.bundle.mkdir(parents=True, exist_ok=True)
        sandbox.meta["rootfs"] = str(rootfs)
        sandbox.save()
        (sandbox.bundle / "config.json").write_text(json.dumps(config, indent=1))

    def _new_sandbox(
        self,
        image: images.ImageInfo,
        spec: SandboxSpec,
        path_env: str,
        snapshot: str | None,
        rootfs: Path,
        agent: bool,
    ) -> _Sandbox:
        sandbox_id = self._new_id()
        limit = gvisor_spec.memory_limit_mib(spec, _home_of(rootfs) is not None)
        self.host_memory.admit(sandbox_id, limit)  # before anything is made
        directory = self.root / "sandboxes" / sandbox_id
        try:  # nothing is tracked until it is saved: a failure before gives the room back
            (directory / "exec").mkdir(parents=True)
            meta = {
                "id": sandbox_id,
                "image": image.name,
                "image_digest": image.digest,
                "spec": msgspec.to_builtins(spec),
                "path_env": path_env,
                "created_at": _now(),
                "owner": self._owner,
                "from_snapshot": snapshot,
                "cgroup": self.cgroup_path(sandbox_id),
                "agent": agent,
                "memory_limit_mib": limit,
            }
            sandbox = _Sandbox(sandbox_id, directory, meta, meta["cgroup"])
            sandbox.save()
            return sandbox
        except BaseException:
            self.host_memory.release(sandbox_id)
            raise

    async def _launch(self, sandbox: _Sandbox, *args: str) -> tuple[int, str]:
        """`runsc run|restore --detach` the bundle. A sandbox with the exec agent gets two
        pipes as PID 1's stdin/stdout: its link. After a restore, a ping proves the agent
        answers on the new pipes (else its execs go through `runsc exec`)."""
        stdio: tuple[int, int] | None = None  # the agent's ends: runsc hands them to PID 1
        ours: tuple[int, int] | None = None  # the link's ends: what it reads, where it writes
        if sandbox.meta.get("agent"):
            agent_stdin, to_agent = os.pipe()
            from_agent, agent_stdout = os.pipe()
            stdio, ours = (agent_stdin, agent_stdout), (from_agent, to_agent)
        try:
            code, out = await self._reap_while(
                self._runsc(
                    *args,
                    "--detach",
                    f"--bundle={sandbox.bundle}",
                    sandbox.id,
                    log_file=sandbox.dir / "runsc.log",
                    meta=sandbox.meta,
                    stdio=stdio,
                )
            )
        finally:
            for fd in stdio or ():
                os.close(fd)
        if ours is None or code != 0:
            for fd in ours or ():
                os.close(fd)
            return code, out
        sandbox.link = await AgentLink.connect(sandbox.id, *ours)
        if args[0] == "restore":
            await sandbox.link.ping()
        return code, out

    async def _start(self, sandbox: _Sandbox, *args: str) -> None:
        """`runsc run|restore --detach` the bundle; on failure clean up and raise."""
        self._ensure_reaper()
        code, out = await self._launch(sandbox, *args)
        if code != 0:
            await self._teardown(sandbox)
            raise SandboxRuntimeError(f"runsc {args[0]} failed for {sandbox.id}: {out.strip()}")
        sandbox.oom_baseline = sandbox.cgroup.oom_kills()
        sandbox.meta["oom_baseline"] = sandbox.oom_baseline
        sandbox.save()

    async def check_image(self, image: str) -> None:
        """Raise ImageNotFound (or InvalidImage) unless `create` could use `image`."""
        await asyncio.to_thread(images.get_image, self.state_dir, image)

    async def create(self, image: str, spec: SandboxSpec) -> SandboxInfo:
        gvisor_spec.validate(spec)
        info, rootfs = await asyncio.to_thread(images.ensure_rootfs, self.state_dir, image)
        path_env = next(
            (e[5:] for e in info.config.get("Env", []) or [] if str(e).startswith("PATH=")),
            gvisor_spec.DEFAULT_PATH,
        )
        agent = self.use_agent and agent_link.available(rootfs)
        sandbox = self._new_sandbox(info, spec, str(path_env), None, rootfs, agent)
        self._sandboxes[sandbox.id] = sandbox
        if spec.network != "none":
            try:
                slot = await asyncio.to_thread(
                    self.networks.setup,
                    sandbox.id,
                    sandbox.dir,
                    spec.network,
                    spec.network_allow,
                    spec.network_private,
                )
            except BaseException:
                await self._teardown(sandbox)
                raise
            sandbox.meta["net"] = slot.to_meta()
            sandbox.save()
        self._write_bundle(sandbox, rootfs, info)
        await self._start(sandbox, "run")
        return self._info(sandbox)

    async def get(self, sandbox_id: str) -> SandboxInfo:
        sandbox = self._load(sandbox_id)
        if sandbox.meta.get("failure_reason"):
            return self._info(sandbox)
        self._adopt(sandbox)
        state = await self._state(sandbox_id)
        return self._info(sandbox, "running" if state == "running" else "stopped")

    async def list_sandboxes(self) -> list[SandboxInfo]:
        code, out = await self._runsc("list", "--format=json", limit_s=20)
        states: dict[str, str] = {}
        if code == 0:
            with contextlib.suppress(ValueError, TypeError):
                states = {c["id"]: c["status"] for c in json.loads(out) or []}
        found = []
        for directory in sorted((self.root / "sandboxes").glob(f"{ID_PREFIX}*")):
            with contextlib.suppress(SandboxNotFound, KeyError):
                sandbox = self._load(directory.name)
                status = states.get(sandbox.id)
                found.append(self._info(sandbox, "running" if status == "running" else "stopped"))
        return found

    async def _teardown(self, sandbox: _Sandbox) -> None:
        """Remove the runsc container, its processes, cgroup and directory."""
        self._close_link(sandbox)
        meta = sandbox.meta
        has_netns = await asyncio.to_thread(os.path.exists, f"/run/netns/{sandbox.id}")
        if has_netns and not meta.get("net"):  # its record was lost: still run in its namespace
            meta = {**meta, "id": sandbox.id, "net": {"record": "lost"}}
        await self._reap_while(
            self._runsc("kill", sandbox.id, "KILL", limit_s=KILL_TIMEOUT_S, meta=meta)
        )
        await self._reap_while(self._runsc("delete", "--force", sandbox.id, limit_s=30, meta=meta))
        hostproc.kill_mentioning(str(sandbox.dir))
        reaper.reap_adopted()
        if "net" in meta:
            await asyncio.to_thread(self.networks.remove, sandbox.id)
        left = await asyncio.to_thread(sandbox.cgroup.remove)
        if left:
            log.warning("sandbox %s: cgroup directories left: %s", sandbox.id, left)
        cgroups.remove_if_empty(self.cgroup_parent)
        shutil.rmtree(sandbox.dir, ignore_errors=True)
        self._sandboxes.pop(sandbox.id, None)
        self.host_memory.release(sandbox.id)

    async def destroy(self, sandbox_id: str) -> None:
        try:
            sandbox = self._load(sandbox_id)
        except SandboxNotFound:
            return
        async with sandbox.lock:
            for execution in list(sandbox.execs.values()):
                with contextlib.suppress(Exception):
                    await execution.kill()
            await self._teardown(sandbox)

    def _owned_by_live_process(self, meta: dict[str, Any]) -> bool:
        owner = meta.get("owner") or {}
        pid = owner.get("pid")
        return isinstance(pid, int) and hostproc.start_time(pid) == owner.get("start")

    async def reap_orphans(self) -> list[str]:
        """Destroy sandboxes whose owning process is gone, and runsc leftovers without one."""
        removed = []
        for directory in sorted((self.root / "sandboxes").glob(f"{ID_PREFIX}*")):
            try:
                meta = json.loads((directory / "sandbox.json").read_text())
            except (OSError, ValueError):
                meta = {}
            if self._owned_by_live_process(meta):
                continue
            sandbox = _Sandbox(
                directory.name, directory, meta, self._cgroup_of(directory.name, meta)
            )
            self._sandboxes.pop(sandbox.id, None)
            await self._teardown(sandbox)
            removed.append(sandbox.id)
        code, out = await self._runsc("list", "--format=json", limit_s=20)
        if code == 0:
            with contextlib.suppress(ValueError, TypeError):
                for container in json.loads(out) or []:
                    cid = container["id"]
                    if cid.startswith(ID_PREFIX) and not (self.root / "sandboxes" / cid).exists():
                        directory = self.root / "sandboxes" / cid
                        await self._teardown(_Sandbox(cid, directory, {}, self.cgroup_path(cid)))
                        removed.append(cid)
        for kind in cgroups.Cgroup(self.cgroup_parent).dirs():
            for leftover in kind.glob(f"{ID_PREFIX}*") if kind.is_dir() else []:
                if not (self.root / "sandboxes" / leftover.name).exists():
                    cgroups.Cgroup(self.cgroup_path(leftover.name)).remove()
        await asyncio.to_thread(self._prune_rootfs)
        return sorted(set(removed))

    def _prune_rootfs(self) -> list[str]:
        """Remove unpacked root filesystems no image, sandbox or snapshot refers to."""
        in_use = {info.digest for info in images.list_images(self.state_dir)}
        for kind, name in (("sandboxes", "sandbox.json"), ("snapshots", "snapshot.json")):
            for meta_file in (self.root / kind).glob(f"*/{name}"):
                with contextlib.suppress(OSError, ValueError, KeyError):
                    in_use.add(json.loads(meta_file.read_text())["image_digest"])
        keep = {digest.split(":", 1)[1] for digest in in_use}
        pruned = []
        for marker in (self.state_dir / "rootfs").glob("*.complete"):
            hexpart = marker.name.removesuffix(".complete")
            if hexpart not in keep:
                marker.unlink()
                shutil.rmtree(marker.with_name(hexpart), ignore_errors=True)
                pruned.append(hexpart)
        return pruned

    async def close(self) -> None:
        if self._reaper_task is not None:
            self._reaper_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper_task
        for sandbox in self._sandboxes.values():
            self._close_link(sandbox)
        self._sandboxes.clear()

    async def stats(self, sandbox_id: str) -> SandboxStats:
        sandbox = self._load(sandbox_id)
        if not sandbox.cgroup.exists():
            raise SandboxFailed(sandbox_id, sandbox.meta.get("failure_reason") or "stopped")
        usage = await asyncio.to_thread(sandbox.cgroup.usage)
        return SandboxStats(
            cpu_seconds=usage.cpu_seconds,
            memory_bytes=usage.memory_bytes,
            memory_limit_bytes=usage.memory_limit_bytes,
            pids=usage.pids,
            pids_limit=usage.pids_limit,
        )

    # -- network --------------------------------------------------------------------------

    async def update_network(
        self,
        sandbox_id: str,
        mode: str,
        allow: list[str] | None = None,
        private: list[str] | None = None,
    ) -> SandboxInfo:
        """Change a running sandbox's egress policy between "allowlist" and "open" (`private`:
        the tenant's granted ranges now; None keeps the sandbox's). A sandbox made with "none"
        has no interface to open later, and one with a network cannot be reduced to "none"
        (an empty allowlist blocks everything instead)."""
        sandbox = await self._ready(sandbox_id)
        grants = sandbox.spec.network_private if private is None else list(private)
        spec = msgspec.structs.replace(
            sandbox.spec, network=mode, network_allow=list(allow or []), network_private=grants
        )
        gvisor_spec.validate(spec)
        if not sandbox.meta.get("net") or mode == "none":
            raise InvalidSpec(
                "the network of a sandbox can change between 'allowlist' and 'open' only; "
                "give the sandbox a network when it is created"
            )
        async with sandbox.lock:
            slot = network.Slot.from_meta(sandbox.id, sandbox.meta["net"])
            await asyncio.to_thread(
                self.networks.apply,
                slot,
                sandbox.dir,
                spec.network,
                spec.network_allow,
                spec.network_private,
            )
            sandbox.meta["spec"] = msgspec.to_builtins(spec)
            sandbox.save()
        return self._info(sandbox)

    async def network_counters(self, sandbox_id: str) -> dict[str, int] | None:
        """Packets the sandbox sent so far that its policy allowed and blocked; None without a
        network (nothing can leave)."""
        sandbox = self._load(sandbox_id)
        if not sandbox.meta.get("net"):
            return None
        slot = network.Slot.from_meta(sandbox.id, sandbox.meta["net"])
        return await asyncio.to_thread(self.networks.counters, slot)

    # -- exec -----------------------------------------------------------------------------

    async def agent_ready(self, sandbox_id: str, timeout_s: float = 10.0) -> bool:
        """Whether execs in this sandbox go through its exec agent, waiting up to `timeout_s`
        for a freshly started agent to say hello (until then execs use `runsc exec`)."""
        link = self._load(sandbox_id).link
        return link is not None and await link.wait_ready(timeout_s)

    async def _spawn_exec(
        self, sandbox: _Sandbox, exec_id: str, process: dict[str, Any], with_stdin: bool
    ) -> Spawned:
        base = sandbox.dir / "exec" / exec_id
        process_file = base.with_suffix(".json")
        try:
            # 0600: the process carries the exec's environment, secrets included.
            fd = os.open(process_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(process))
        except FileNotFoundError as exc:  # destroyed meanwhile
            raise SandboxNotFound(sandbox.id) from exc
        argv = self._cmd(
            "exec",
            f"--process={process_file}",
            f"--internal-pid-file={base.with_suffix('.pid')}",
            sandbox.id,
            meta=sandbox.meta,
        )
        return await spawn(argv, with_stdin=with_stdin)

    # The service's own root helpers (kill, hostname, snapshot checks) never take the tenant's
    # environment: a tenant PATH or LD_PRELOAD would run its code with their privileges.
    HELPER_ENV: ClassVar[list[str]] = [f"PATH={HELPER_PATH}"]

    def _exec_env(self, sandbox: _Sandbox, extra: dict[str, str]) -> list[str]:
        env = {"PATH": sandbox.meta.get("path_env") or gvisor_spec.DEFAULT_PATH}
        env.update(sandbox.spec.env)
        env.update(extra)
        return gvisor_spec.env_list(env)

    async def _start_exec(
        self,
        sandbox: _Sandbox,
        argv: list[str],
        *,
        cwd: str = "/",
        env: dict[str, str] | None = None,
        user: str | None = None,
        stdin: bytes | AsyncIterable[bytes] | None = None,
        timeout_s: float = 60.0,
        output_cap: int = 1 << 20,
        helper: bool = False,
        exec_id: str | None = None,
    ) -> ExecutionBase:
        requested = time.monotonic()
        if not argv or not all(isinstance(a, str) and "\x00" not in a for a in argv):
            raise InvalidSpec("argv must be a non-empty list of strings without NUL")
        exec_id = exec_id or new_exec_id()
        if not EXEC_ID.fullmatch(exec_id) or exec_id in sandbox.execs:
            raise InvalidSpec(f"exec id {exec_id!r} is malformed or in use")
        if timeout_s <= 0 or output_cap < 0:
            raise InvalidSpec("timeout_s must be positive and output_cap not negative")
        uid, gid = gvisor_spec.parse_user(user or sandbox.spec.user)
        process = gvisor_spec.exec_process(
            argv=argv,
            cwd=sandbox_path(cwd),
            env=self.HELPER_ENV if helper else self._exec_env(sandbox, env or {}),
            uid=uid,
            gid=gid,
        )
        if sandbox.agent is not None:
            with contextlib.suppress(AgentLost):  # lost on the way: `runsc exec` takes over
                return await self._agent_exec(
                    sandbox,
                    process,
                    exec_id=exec_id,
                    stdin=stdin,
                    timeout_s=timeout_s,
                    output_cap=output_cap,
                    requested=requested,
                )
        spawned = await self._spawn_exec(sandbox, exec_id, process, stdin is not None)
        kill_tree, classify, on_done = self._hooks(sandbox, exec_id)
        return self._track(
            sandbox,
            SupervisedExecution(
                exec_id,
                spawned,
                stdin=stdin,
                timeout_s=timeout_s,
                output_cap=output_cap,
                kill_tree=kill_tree,
                classify=classify,
                requested_at=requested,
                on_done=on_done,
            ),
        )

    async def _agent_exec(
        self,
        sandbox: _Sandbox,
        process: dict[str, Any],
        *,
        stdin: bytes | AsyncIterable[bytes] | None,
        timeout_s: float,
        output_cap: int,
        requested: float,
        stream: bool = False,
        exec_id: str | None = None,
    ) -> AgentExecution:
        """Start `process` through the sandbox's exec agent (AgentLost: use `runsc exec`)."""
        link = sandbox.link
        if link is None:
            raise AgentLost("no agent")
        channel, pid = await link.start(
            {
                "argv": process["args"],
                "cwd": process["cwd"],
                "env": process["env"],
                "uid": process["user"]["uid"],
                "gid": process["user"]["gid"],
                "stdin": stdin is not None,
                "cap": None if stream else output_cap,
            }
        )
        exec_id = exec_id or new_exec_id()
        if pid is not None:  # so `kill_exec` works from another process too (after a restart)
            with contextlib.suppress(OSError):
                (sandbox.dir / "exec" / f"{exec_id}.pid").write_text(str(pid))
        kill_tree, classify, on_done = self._hooks(sandbox, exec_id)
        return self._track(
            sandbox,
            AgentExecution(
                exec_id,
                channel,
                pid,
                stdin=stdin,
                timeout_s=timeout_s,
                output_cap=output_cap,
                kill_fallback=kill_tree,
                classify=classify,
                requested_at=requested,
                stream=stream,
                on_done=on_done,
            ),
        )

    def _hooks(
        self, sandbox: _Sandbox, exec_id: str
    ) -> tuple[KillTree, Classify, Callable[[ExecutionBase], None]]:
        """An exec's kill (its tree, from outside), outcome and end callbacks."""
        return (
            functools.partial(self._kill_tree, sandbox, exec_id),
            functools.partial(self._classify, sandbox),
            lambda execution: self._exec_done(sandbox, execution.id),
        )

    def _track(self, sandbox: _Sandbox, execution: _E) -> _E:
        sandbox.execs[execution.id] = execution
        return execution

    def _exec_done(self, sandbox: _Sandbox, exec_id: str) -> None:
        sandbox.execs.pop(exec_id, None)
        base = sandbox.dir / "exec" / exec_id
        for suffix in (".json", ".pid"):
            with contextlib.suppress(OSError):
                base.with_suffix(suffix).unlink()

    async def _kill_tree(self, sandbox: _Sandbox, exec_id: str) -> None:
        """Kill an exec's process tree inside the sandbox (see KILL_SCRIPT)."""
        pid = 0
        for _ in range(20):  # the pid file appears once runsc has started the process
            try:
                pid = int((sandbox.dir / "exec" / f"{exec_id}.pid").read_text().strip())
                break
            except (OSError, ValueError):
                await asyncio.sleep(0.05)
        if not pid:
            log.warning("sandbox %s: no pid for exec %s, cannot kill its tree", sandbox.id, exec_id)
            return
        await self._root_helper(
            sandbox, "kill", ["/bin/sh", "-c", KILL_SCRIPT, "sh", str(pid)], "CAP_KILL"
        )

    async def _root_helper(
        self, sandbox: _Sandbox, kind: str, argv: list[str], capability: str
    ) -> int | None:
        """Run a short root process inside the sandbox holding just `capability`; its exit
        code, or None when it did not finish within the kill timeout."""
        process = gvisor_spec.exec_process(
            argv=argv,
            cwd="/",
            env=self.HELPER_ENV,
            uid=0,
            gid=0,
            caps=[capability],
        )
        helper_id = f"{kind}-{secrets.token_hex(8)}"
        spawned = await self._spawn_exec(sandbox, helper_id, process, with_stdin=False)
        try:
            return await asyncio.wait_for(spawned.proc.wait(), KILL_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                spawned.proc.kill()
            return None
        finally:
            spawned.close()
            self._exec_done(sandbox, helper_id)

    async def _classify(self, sandbox: _Sandbox, code: int | None) -> Outcome:
        if sandbox.cgroup.oom_kills() > sandbox.oom_baseline:
            reaper.reap_adopted()
            if await self._state(sandbox.id) != "running":
                self._mark_failed(sandbox, "oom")
            return "oom"
        if code is None or code >= 128:
            reaper.reap_adopted()
            if await self._state(sandbox.id) != "running":
                self._mark_failed(sandbox, "pids" if sandbox.cgroup.pids_max_hits() else "crashed")
                return "killed"
        return "exited"

    async def exec(self, sandbox_id: str, request: ExecRequest) -> ExecutionBase:
        sandbox = await self._ready(sandbox_id)
        return await self._start_exec(
            sandbox,
            list(request.argv),
            cwd=request.cwd,
            env=request.env,
            user=request.user,
            stdin=request.stdin,
            timeout_s=request.timeout_s,
            helper=request.helper,
            output_cap=request.output_cap,
            exec_id=request.exec_id,
        )

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        return await (await self.exec(sandbox_id, request)).wait()

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        """Kill a running exec. Works for execs started by an earlier process too (after a
        restart) while their pid file is still there; unknown or finished: ExecNotFound."""
        sandbox = self._load(sandbox_id)
        execution = sandbox.execs.get(exec_id)
        if execution is not None:
            await execution.kill()
            return
        pid_file = sandbox.dir / "exec" / f"{exec_id}.pid"
        if not EXEC_ID.fullmatch(exec_id) or not pid_file.exists():
            raise ExecNotFound(exec_id)
        await self._kill_tree(sandbox, exec_id)
        self._exec_done(sandbox, exec_id)

    # -- files ----------------------------------------------------------------------------

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
        sandbox = await self._ready(sandbox_id)
        if not 0 <= mode <= 0o7777:
            raise InvalidSpec("mode must be between 0 and 0o7777")
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

        token = secrets.token_hex(8)
        execution = await self._start_exec(
            sandbox,
            [
                "/bin/sh",
                "-c",
                files.WRITE_SCRIPT,
                "sh",
                target,
                f"{mode:o}",
                files.upload_temp_name(token),
            ],
            user=user,
            stdin=counted(),
            timeout_s=TRANSFER_TIMEOUT_S,
            output_cap=64 * 1024,
            helper=True,
        )
        result = await execution.wait()
        if execution.feed_error is not None or result.outcome != "exited":
            with contextlib.suppress(SandboxRuntimeError):
                cleanup = await self._start_exec(
                    sandbox,
                    ["rm", "-f", "--", files.upload_temp_path(target, token)],
                    user=user,
                    helper=True,
                )
                await cleanup.wait()
        if execution.feed_error is not None:
            raise execution.feed_error
        files.raise_for(result.exit_code, target, result.stderr)
        return written

    async def read_file(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> AsyncIterator[bytes]:
        target = sandbox_path(path)
        sandbox = await self._ready(sandbox_id)

        def finish(code: int | None, errors: bytes) -> None:
            files.raise_for(code, target, errors)

        argv = ["/bin/sh", "-c", files.READ_SCRIPT, "sh", target]
        async for chunk in self._stream_out(sandbox, argv, user, repr(target), finish):
            yield chunk

    async def _stream_out(
        self,
        sandbox: _Sandbox,
        argv: list[str],
        user: str | None,
        what: str,
        finish: Callable[[int | None, bytes], None],
    ) -> AsyncIterator[bytes]:
        """The stdout of `argv` run in the sandbox, as it comes; `finish(exit code, stderr)`
        raises for a failed end once the output is read."""
        uid, gid = gvisor_spec.parse_user(user or sandbox.spec.user)
        process = gvisor_spec.exec_process(
            argv=argv, cwd="/", env=self.HELPER_ENV, uid=uid, gid=gid
        )
        if sandbox.agent is not None:
            try:
                execution = await self._agent_exec(
                    sandbox,
                    process,
                    stdin=None,
                    timeout_s=TRANSFER_TIMEOUT_S,
                    output_cap=0,
                    requested=time.monotonic(),
                    stream=True,
                )
            except AgentLost:
                pass
            else:
                async for chunk in self._read_through_agent(execution, what, finish):
                    yield chunk
                return
        read_id = "read-" + secrets.token_hex(8)
        spawned = await self._spawn_exec(sandbox, read_id, process, with_stdin=False)
        errors = asyncio.create_task(spawned.stderr.read(64 * 1024))
        try:
            while chunk := await spawned.stdout.read(256 * 1024):
                yield chunk
            code = await spawned.proc.wait()
            finish(code, await errors)
        finally:
            errors.cancel()
            if spawned.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    spawned.proc.kill()
                await spawned.proc.wait()
            spawned.close()
            self._exec_done(sandbox, read_id)

    async def _read_through_agent(
        self,
        execution: AgentExecution,
        what: str,
        finish: Callable[[int | None, bytes], None],
    ) -> AsyncIterator[bytes]:
        errors = bytearray()
        try:
            async for chunk in execution.output():
                if chunk.stream == "stdout":
                    yield chunk.data
                elif len(errors) < 64 * 1024:
                    errors += chunk.data
            result = await execution.wait()
            if result.outcome != "exited":
                raise SandboxRuntimeError(f"reading {what} ended: {result.outcome}")
            finish(result.exit_code, bytes(errors))
        finally:
            if not execution.done:  # the reader went away early
                await execution.kill()

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]:
        target = sandbox_path(path)
        sandbox = await self._ready(sandbox_id)
        execution = await self._start_exec(
            sandbox,
            ["/bin/sh", "-c", files.LIST_SCRIPT, "sh", target],
            user=user,
            timeout_s=120,
            output_cap=64 << 20,
            helper=True,
        )
        result = await execution.wait()
        files.raise_for(result.exit_code, target, result.stderr)
        if result.stdout_truncated:
            raise SandboxRuntimeError(f"directory listing of {target!r} is too large")
        return files.parse_listing(result.stdout)

    async def copy_files(self, source_id: str, target_id: str) -> int:
        """Copy what the source sandbox wrote into the target: everything under its writable
        mounts (the root is read-only), streamed from a `tar` in one into a `tar` in the
        other, each as its sandbox's user. The host only passes bytes along; it never opens
        the archive. Returns the bytes moved; SandboxRuntimeError with tar's words if either
        end fails. Processes and memory are not carried, only files."""
        source = await self._ready(source_id)
        target = await self._ready(target_id)

        def finish(code: int | None, errors: bytes) -> None:
            if code != 0:
                text = errors.decode(errors="replace").strip()[-400:]
                raise SandboxRuntimeError(f"packing the files of {source_id} failed: {text}")

        moved = 0

        async def packed() -> AsyncIterator[bytes]:
            nonlocal moved
            argv = ["/bin/sh", "-c", PACK_SCRIPT]
            async for chunk in self._stream_out(source, argv, None, "the packed files", finish):
                moved += len(chunk)
                yield chunk

        execution = await self._start_exec(
            target,
            ["/bin/sh", "-c", UNPACK_SCRIPT],
            stdin=packed(),
            timeout_s=TRANSFER_TIMEOUT_S,
            helper=True,
        )
        result = await execution.wait()
        if execution.feed_error is not None:
            raise execution.feed_error
        if result.outcome != "exited" or result.exit_code != 0:
            text = result.stderr.decode(errors="replace").strip()[-400:]
            raise SandboxRuntimeError(
                f"unpacking files into {target_id} ended {result.outcome} "
                f"{result.exit_code}: {text}"
            )
        return moved

    # -- snapshots ------------------------------------------------------------------------

    def _snapshot_dir(self, snapshot_id: str) -> Path:
        if not SNAPSHOT_ID.fullmatch(snapshot_id):
            raise SnapshotNotFound(snapshot_id)
        return self.root / "snapshots" / snapshot_id

    def _snapshot_info(self, meta: dict[str, Any], directory: Path) -> SnapshotInfo:
        size = sum(f.stat().st_size for f in (directory / "image").rglob("*") if f.is_file())
        return SnapshotInfo(
            id=meta["id"],
            runtime=self.name,
            sandbox_id=meta["sandbox_id"],
            image=meta["image"],
            image_digest=meta["image_digest"],
            spec=msgspec.convert(meta["spec"], SandboxSpec),
            created_at=meta["created_at"],
            size_bytes=size,
        )

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        """Checkpoint the sandbox, then restore it in place so it keeps running."""
        sandbox = self._usable(sandbox_id)
        if sandbox.meta.get("net"):
            # runsc: "checkpoint not supported when using hostinet" (see README.md).
            raise InvalidSpec(
                "a gVisor sandbox with a network cannot be snapshotted: it runs on the host "
                "network stack of its namespace, which runsc cannot checkpoint"
            )
        async with sandbox.lock:
            # New work waits from here until the sandbox runs again.
            sandbox.ready.clear()
            try:
                await self._check_quiet(sandbox)
                return await self._checkpoint_and_resume(sandbox)
            finally:
                sandbox.ready.set()

    async def _check_quiet(self, sandbox: _Sandbox) -> None:
        """Refuse a snapshot while an exec runs or a process holds an exec's pipe."""
        if any(not e.done for e in sandbox.execs.values()):
            raise SandboxBusy(f"sandbox {sandbox.id} has running execs")
        check = await self._start_exec(
            sandbox, ["/bin/sh", "-c", HELD_PIPES_SCRIPT], user="0:0", timeout_s=30, helper=True
        )
        held = [line for line in (await check.wait()).stdout.decode().split("\n") if line]
        if held:
            raise SandboxBusy(
                f"sandbox {sandbox.id}: processes still hold an exec's output "
                f"({', '.join(held)}); start long-lived processes with "
                "their stdio redirected (</dev/null >file 2>&1) to snapshot them"
            )

    async def _checkpoint_and_resume(self, sandbox: _Sandbox) -> SnapshotInfo:
        sandbox_id = sandbox.id
        snapshot_id = SNAPSHOT_PREFIX + secrets.token_hex(12)
        directory = self._snapshot_dir(snapshot_id)
        (directory / "image").mkdir(parents=True)
        if (link := sandbox.agent) is not None:
            # A round trip with nothing after it: no frame is half-way through either pipe
            # when the agent is frozen, so it starts clean on the restored sandbox's pipes.
            await link.ping()
        code, out = await self._runsc(
            "checkpoint", f"--image-path={directory / 'image'}", sandbox.id
        )
        if code != 0:
            shutil.rmtree(directory, ignore_errors=True)
            if await self._state(sandbox.id) != "running":
                self._mark_failed(sandbox, "checkpoint")
            raise SandboxRuntimeError(f"checkpoint of {sandbox_id} failed: {out.strip()}")
        meta = {
            "id": snapshot_id,
            "sandbox_id": sandbox.id,
            "image": sandbox.meta["image"],
            "image_digest": sandbox.meta["image_digest"],
            "spec": sandbox.meta["spec"],
            "path_env": sandbox.meta.get("path_env"),
            "rootfs": sandbox.meta.get("rootfs"),
            "created_at": _now(),
            "agent": bool(sandbox.meta.get("agent")),
        }
        (directory / "snapshot.json").write_text(json.dumps(meta, indent=1))
        self._close_link(sandbox)
        await self._reap_while(self._runsc("delete", "--force", sandbox.id, limit_s=30))
        code, out = await self._launch(sandbox, "restore", f"--image-path={directory / 'image'}")
        if code != 0:
            self._mark_failed(sandbox, "restore")
            raise SandboxFailed(sandbox_id, "restore", out.strip()[-500:])
        sandbox.oom_baseline = sandbox.cgroup.oom_kills()
        sandbox.meta["oom_baseline"] = sandbox.oom_baseline
        sandbox.save()
        return self._snapshot_info(meta, directory)

    def _load_snapshot(self, snapshot_id: str) -> tuple[dict[str, Any], Path]:
        directory = self._snapshot_dir(snapshot_id)
        try:
            return json.loads((directory / "snapshot.json").read_text()), directory
        except (OSError, ValueError) as exc:
            raise SnapshotNotFound(snapshot_id) from exc

    async def create_from_snapshot(self, snapshot_id: str) -> SandboxInfo:
        meta, directory = self._load_snapshot(snapshot_id)
        # Restore on the very root filesystem the checkpoint was taken on.
        rootfs = Path(meta.get("rootfs") or images.rootfs_dir(self.state_dir, meta["image_digest"]))
        if not (rootfs.parent / f"{rootfs.name}.complete").exists():
            info, rootfs = await asyncio.to_thread(
                images.ensure_rootfs, self.state_dir, meta["image"]
            )
            if info.digest != meta["image_digest"]:
                raise SnapshotNotFound(f"{snapshot_id} (its image {meta['image']} changed)")
        image = images.ImageInfo(
            name=meta["image"], digest=meta["image_digest"], size_bytes=0, created_at=0, path=""
        )
        spec = msgspec.convert(meta["spec"], SandboxSpec)
        path_env = meta.get("path_env") or gvisor_spec.DEFAULT_PATH
        agent = bool(meta.get("agent"))
        sandbox = self._new_sandbox(image, spec, path_env, snapshot_id, rootfs, agent)
        self._sandboxes[sandbox.id] = sandbox
        self._write_bundle(sandbox, rootfs, image)
        await self._start(sandbox, "restore", f"--image-path={directory / 'image'}")
        await self._set_hostname(sandbox)
        return self._info(sandbox)

    async def _set_hostname(self, sandbox: _Sandbox) -> None:
        """A restored sandbox comes back with the hostname it was checkpointed under: give it
        its own, through a root helper that holds only CAP_SYS_ADMIN for the call."""
        name = gvisor_spec.hostname_for(sandbox.id)
        code = await self._root_helper(sandbox, "host", ["/bin/hostname", name], "CAP_SYS_ADMIN")
        if code != 0:
            log.warning("sandbox %s: could not set its hostname (exit %s)", sandbox.id, code)

    async def list_snapshots(self) -> list[SnapshotInfo]:
        found = []
        for directory in sorted((self.root / "snapshots").glob(f"{SNAPSHOT_PREFIX}*")):
            with contextlib.suppress(SnapshotNotFound, KeyError, OSError):
                meta, _ = self._load_snapshot(directory.name)
                found.append(self._snapshot_info(meta, directory))
        return found

    async def delete_snapshot(self, snapshot_id: str) -> None:
        directory = self._snapshot_dir(snapshot_id)
        await asyncio.to_thread(shutil.rmtree, directory, True)
