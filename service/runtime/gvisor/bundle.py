"""OCI bundle and process documents for gVisor sandboxes (pure data, no runsc calls).

Layout of a sandbox ("disk", every sandbox made now): the image's root filesystem, shared by
every sandbox of that image and never written, under a writable overlay whose upper layer is
a file on the sandbox's own file system on the node's disk (disk.py; runsc's
`--overlay2=root:dir=…`). The host memory cgroup's limit is the sandbox's `memory_mib`, the
sandbox kernel's own memory included, as a virtual machine's kernel lives in the machine's
memory; the sandbox kernel reads that limit as its MemTotal, and the CPUs of the cpuset it
starts in as its CPU count (`nproc`), so the cgroup starts on `ceil(vcpus)` CPUs and is widened
to the host's once it runs (`widen_after_start`: the quota, not the cpuset, is the cap).

Records and snapshots from before kept everything writable in size-limited tmpfs mounts,
which live in the sandbox kernel's memory, under one limit for memory, writable space and
kernel together ("tmpfs"); they are restored in that layout.

Caps are set twice: the host cgroup (`linux.resources`) bounds the whole sandbox, and
`process.rlimits` (inherited by every exec) make a single runaway process fail gracefully
before the sandbox does.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import images
from ..errors import InvalidSpec
from ..specs import parse_user
from ..types import SandboxSpec
from . import agent_boot, netstack, network

if TYPE_CHECKING:
    from .store import Sandbox

MIB = 1 << 20
DEFAULT_PATH = "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SENTRY_OVERHEAD_MIB = 96  # the sandbox kernel's own memory, charged to the same cgroup
HOST_TASKS_PER_PROCESS = 32  # ptrace: ~10 host tasks per live guest process, more under churn
HOST_TASKS_BASE = 512
INIT_FALLBACK = ["/bin/sh", "-c", "trap '' TERM INT HUP; while :; do sleep 3600 & wait; done"]
NO_CAPS: dict[str, list[str]] = {
    k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")
}


def cpu_quota_us(spec: SandboxSpec) -> int:
    """The host CFS quota per 100 ms period: the vCPUs the tenant asked for, and no more. The
    sandbox kernel (the Sentry, and under systrap its stub processes) spends its CPU inside
    the same quota, so a sandbox never uses more of the host than its `cpus` (a quarter of a
    CPU more for the kernel ran bench/runtime.py's suite 1.50x native against 1.83x, but let
    every sandbox use 1.25 cores of a host that sold it one)."""
    return round(spec.vcpus * 100_000)


# A sandbox's writable space: on its disk (disk.py), or, in records from before, in tmpfs.
DISK, TMPFS = "disk", "tmpfs"


def layout_of(writable: object) -> str:
    """The writable layout a sandbox record or snapshot names in its `writable` (records
    without one: tmpfs)."""
    return DISK if writable == DISK else TMPFS


def scratch_mib(spec: SandboxSpec) -> int:
    """Size of each of /tmp, /var/tmp and the home directory: a quarter of the disk cap."""
    return max(4, spec.disk_mib // 4)


# The sandbox's writable space: the tmpfs mounts of `config` a tenant's processes write to
# (the home directory where the image has one).
WRITABLE = ("/work", "/tmp", "/var/tmp", "/dev/shm", "/home/sandbox")  # noqa: S108


def writable_mib(spec: SandboxSpec, with_home: bool) -> int:
    return spec.disk_mib + scratch_mib(spec) * (3 if with_home else 2) + 16


def memory_limit_mib(spec: SandboxSpec, with_home: bool, layout: str = DISK) -> int:
    """The sandbox's host memory cgroup limit, what it can take of the host's memory and what
    host admission counts. On its disk: its `memory_mib`, the kernel and the small tmpfs
    mounts (/dev/shm, /run) inside it. In tmpfs: its memory, every writable mount (tmpfs lives
    in the sandbox kernel's memory) and the kernel on top."""
    if layout == DISK:
        return spec.memory_mib
    return spec.memory_mib + writable_mib(spec, with_home) + SENTRY_OVERHEAD_MIB


def boot_cpus(spec: SandboxSpec, sandbox_id: str, host_cpus: list[int]) -> str | None:
    """The cpuset a sandbox starts in, so its kernel counts `ceil(vcpus)` CPUs (runsc takes
    the smaller of the cpuset's size and the quota rounded up, but at least 2); None when it
    may count them all. Sandboxes start on different CPUs, by their id."""
    wanted = max(1, math.ceil(spec.vcpus - 1e-9))
    if wanted >= len(host_cpus):
        return None
    first = int(sandbox_id.rsplit("-", 1)[-1][-4:], 16) % len(host_cpus)
    chosen = sorted(host_cpus[(first + i) % len(host_cpus)] for i in range(wanted))
    return ",".join(str(c) for c in chosen)


def _tmpfs(dest: str, size_mib: int, mode: str, uid: int = 0, gid: int = 0) -> dict[str, Any]:
    options = ["nosuid", "nodev", f"size={size_mib}m", f"mode={mode}"]
    if uid or gid:
        options += [f"uid={uid}", f"gid={gid}"]
    return {"destination": dest, "type": "tmpfs", "source": "tmpfs", "options": options}


def rlimits(spec: SandboxSpec) -> list[dict[str, Any]]:
    address_space = (spec.memory_mib * 2 + 1024) * MIB
    values = {
        "RLIMIT_NPROC": spec.pids,
        "RLIMIT_NOFILE": 4096,
        "RLIMIT_FSIZE": spec.disk_mib * 2 * MIB,  # above the disk cap: ENOSPC comes first
        "RLIMIT_AS": address_space,
        "RLIMIT_CORE": 0,
    }
    return [{"type": k, "hard": v, "soft": v} for k, v in values.items()]


def env_list(env: dict[str, str]) -> list[str]:
    for key in env:
        if not key or "=" in key or "\x00" in key or "\x00" in env[key]:
            raise InvalidSpec(f"invalid environment variable {key!r}")
    return [f"{k}={v}" for k, v in env.items()]


def hostname_for(sandbox_id: str) -> str:
    """Each sandbox's own hostname (sandboxes restored from one snapshot get theirs too)."""
    return "sbx-" + sandbox_id.rsplit("-", 1)[-1][-12:]


def bundle_config(
    *,
    sandbox_id: str,
    rootfs: Path,
    spec: SandboxSpec,
    cgroups_path: str,
    home: str | None,
    init_argv: list[str],
    net_dir: Path | None = None,
    netns: str | None = None,
    init_caps: list[str] | None = None,
    extra_mounts: list[dict[str, Any]] | None = None,
    layout: str = DISK,
    cpus: str | None = None,
) -> dict[str, Any]:
    """The bundle's config.json. `net_dir`: the sandbox has a network (its hosts and
    resolv.conf are there); `netns`: the path of its namespace, for netstack, which takes
    the interfaces of the namespace the spec names (without one runsc makes an empty one).
    `init_caps`: capabilities PID 1 keeps (the exec agent needs a few to switch users and
    kill trees; execs never inherit them). `layout`: where the writable space is (DISK: the
    root is writable, runsc overlays it; TMPFS: read-only root, tmpfs mounts). `cpus`: the
    cpuset it starts in (`boot_cpus`)."""
    uid, gid = parse_user(spec.user)
    scratch = scratch_mib(spec)
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {
            "destination": "/dev",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=1m"],
        },
        {
            "destination": "/dev/pts",
            "type": "devpts",
            "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
        },
        _tmpfs("/dev/shm", 16, "1777"),  # noqa: S108 (paths inside the sandbox)
        {
            "destination": "/sys",
            "type": "sysfs",
            "source": "sysfs",
            "options": ["nosuid", "noexec", "nodev", "ro"],
        },
        _tmpfs("/run", 4, "0755"),
    ]
    if layout == TMPFS:
        mounts += [
            _tmpfs("/work", spec.disk_mib, "0755", uid, gid),
            _tmpfs("/tmp", scratch, "1777"),  # noqa: S108
            _tmpfs("/var/tmp", scratch, "1777"),  # noqa: S108
        ]
        if home:
            mounts.append(_tmpfs(home, scratch, "0755", uid, gid))
    namespaces: list[dict[str, str]] = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
    if net_dir is None:
        namespaces.append({"type": "network"})
    else:
        # runsc starts inside the namespace the runtime made (see network.py); the policy's
        # names and a resolver that answers nothing come from files the host keeps.
        if netns is not None:
            namespaces.append({"type": "network", "path": netns})
        mounts += [
            {"destination": f"/etc/{name}", "type": "bind", "source": str(net_dir / name),
             "options": ["rbind", "ro", "nosuid", "nodev", "noexec"]}
            for name in ("hosts", "resolv.conf")
        ]  # fmt: skip
    mounts += extra_mounts or []
    memory = memory_limit_mib(spec, bool(home), layout) * MIB
    cpu: dict[str, Any] = {"quota": cpu_quota_us(spec), "period": 100_000}
    if cpus is not None:
        cpu["cpus"] = cpus
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": init_argv,
            "env": [f"PATH={DEFAULT_PATH}"],
            "cwd": "/",
            "capabilities": _caps(init_caps),
            "noNewPrivileges": True,
            "rlimits": rlimits(spec),
        },
        "root": {"path": str(rootfs), "readonly": layout == TMPFS},
        "hostname": hostname_for(sandbox_id),
        "mounts": mounts,
        "annotations": {"dev.airlock.sandbox": sandbox_id},
        "linux": {
            "cgroupsPath": cgroups_path,
            "resources": {
                "memory": {"limit": memory},
                "cpu": cpu,
                "pids": {"limit": spec.pids * HOST_TASKS_PER_PROCESS + HOST_TASKS_BASE},
            },
            "namespaces": namespaces,
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
            "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"],
        },
    }


def _caps(caps: list[str] | None) -> dict[str, list[str]]:
    return NO_CAPS if not caps else {k: list(caps) for k in NO_CAPS if k != "ambient"}


def exec_process(
    *,
    argv: list[str],
    cwd: str,
    env: list[str],
    uid: int,
    gid: int,
    caps: list[str] | None = None,
) -> dict[str, Any]:
    """A `runsc exec --process` document: exactly this argv, env, user and capabilities."""
    capabilities = _caps(caps)
    return {
        "terminal": False,
        "user": {"uid": uid, "gid": gid, "additionalGids": [gid]},
        "args": argv,
        "env": env,
        "cwd": cwd,
        "capabilities": capabilities,
        "noNewPrivileges": True,
    }


def home_of(rootfs: Path) -> str | None:
    return "/home/sandbox" if (rootfs / "home" / "sandbox").is_dir() else None


TMP_KEEP = ".airlock-keep"


def keep_tmp_on_disk(rootfs: Path) -> None:
    """runsc mounts a tmpfs (sandbox memory, no size limit) over the root's /tmp when the
    bundle has no /tmp mount and the image's /tmp is empty: an empty file in the image's /tmp
    keeps /tmp on the sandbox's disk like the rest of its root."""
    tmp = rootfs / "tmp"
    if not tmp.is_dir():
        tmp.mkdir(exist_ok=True)
        os.chmod(tmp, 0o1777)  # noqa: S103 (the sandbox's /tmp, as every image has it)
    if not any(tmp.iterdir()):
        (tmp / TMP_KEEP).touch(mode=0o444)


def host_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def write(sandbox: Sandbox, rootfs: Path, *, exact_nproc: bool = True) -> None:
    """Write the sandbox's bundle (`config.json`) for `rootfs`; the record notes the rootfs.
    `exact_nproc`: it starts on `ceil(vcpus)` CPUs (`boot_cpus`), so its kernel counts as
    many; else runsc counts at least 2, and a 1-vCPU sandbox starts about 90 ms sooner and
    runs each exec about 12 ms sooner (runsc sets its kernel's GOMAXPROCS to that count)."""
    layout = layout_of(sandbox.meta.writable)
    if layout == DISK:
        keep_tmp_on_disk(rootfs)
    init_argv = [images.INIT_PATH] if os.path.lexists(rootfs / images.INIT_PATH.lstrip("/")) else []
    init_argv = init_argv or INIT_FALLBACK
    agent = agent_boot.mounted_at(sandbox.meta.agent)
    stack = network.stack_of(sandbox.meta)
    config = bundle_config(
        sandbox_id=sandbox.id,
        rootfs=rootfs,
        spec=sandbox.spec,
        cgroups_path=sandbox.cgroup.path,
        home=home_of(rootfs),
        init_argv=agent_boot.init_argv(init_argv) if agent else init_argv,
        net_dir=sandbox.dir / "net" if stack else None,
        netns=network.netns_path(sandbox.id) if stack == netstack.NETSTACK else None,
        init_caps=agent_boot.CAPS if agent else None,
        extra_mounts=[agent_boot.mount(agent)] if agent else None,
        layout=layout,
        cpus=boot_cpus(sandbox.spec, sandbox.id, host_cpus())
        if layout == DISK and exact_nproc
        else None,
    )
    sandbox.bundle.mkdir(parents=True, exist_ok=True)
    sandbox.meta.rootfs = str(rootfs)
    sandbox.save()
    (sandbox.bundle / "config.json").write_text(json.dumps(config, indent=1))
