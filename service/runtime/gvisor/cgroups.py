"""Read-only view of a sandbox's host cgroup (v1, v2 or hybrid), plus removal of leftovers.

runsc creates and fills the cgroup from the bundle's `linux.cgroupsPath`; Airlock reads
usage and OOM counters from it and removes it if runsc left it behind.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SYS_ROOT = Path("/sys/fs/cgroup")
ROOT = SYS_ROOT
V1_CONTROLLERS = ("memory", "cpu", "cpuacct", "pids", "cpuset", "devices", "freezer", "blkio")
# runsc also makes the sandbox's directory in systemd's named hierarchy, where there is one:
# removed with the others, or it would stay below the parent (and the node's own cgroup).
V1_HIERARCHIES = (*V1_CONTROLLERS, "systemd")
Layout = Literal["v1", "v2", "hybrid", "none"]


def detect(root: Path = ROOT) -> Layout:
    """The host's layout: kept once read for the real root (an exec reads its sandbox's
    cgroup twice, and the layout of a running host does not change)."""
    if root == SYS_ROOT:
        return _host_layout()
    return _detect(root)


@functools.cache
def _host_layout() -> Layout:
    return _detect(SYS_ROOT)


def _detect(root: Path) -> Layout:
    if (root / "cgroup.controllers").exists():
        return "v2"
    if (root / "memory").is_dir():
        return "hybrid" if (root / "unified" / "cgroup.controllers").exists() else "v1"
    return "none"


def _read_int(path: Path) -> int:
    try:
        text = path.read_text().strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def _keyed(text: str) -> dict[str, int]:
    """The `name value` lines of a cgroup file such as memory.events."""
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            values[name] = int(value)
    return values


def _read_keyed(path: Path, key: str) -> int:
    try:
        return _keyed(path.read_text()).get(key, 0)
    except OSError:
        return 0


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float
    memory_bytes: int
    memory_limit_bytes: int
    pids: int
    pids_limit: int


@dataclass(frozen=True)
class Cgroup:
    """The host cgroup at `path` (an OCI cgroupsPath such as /airlock/alk-...)."""

    path: str
    root: Path = ROOT

    @property
    def layout(self) -> Layout:
        return detect(self.root)

    def _v1(self, controller: str) -> Path:
        return self.root / controller / self.path.lstrip("/")

    def _v2(self) -> Path:
        return self.root / self.path.lstrip("/")

    def dirs(self) -> list[Path]:
        if self.layout == "v2":
            return [self._v2()]
        return [self._v1(c) for c in V1_HIERARCHIES]

    def exists(self) -> bool:
        return any(d.is_dir() for d in self.dirs())

    def oom_kills(self) -> int | None:
        """The kernel's OOM kills in it so far; None when that cannot be read (it is gone)."""
        if self.layout == "v2":
            path = self._v2() / "memory.events"
        else:
            path = self._v1("memory") / "memory.oom_control"
        try:
            return _keyed(path.read_text()).get("oom_kill", 0)
        except OSError:
            return None

    def pids_max_hits(self) -> int:
        base = self._v2() if self.layout == "v2" else self._v1("pids")
        return _read_keyed(base / "pids.events", "max")

    def cpu_quota(self) -> float | None:
        """CPUs granted by the CFS quota, or None when unlimited."""
        if self.layout == "v2":
            try:
                quota, period = (self._v2() / "cpu.max").read_text().split()
            except (OSError, ValueError):
                return None
            return None if quota == "max" else int(quota) / int(period)
        quota = _read_int(self._v1("cpu") / "cpu.cfs_quota_us")
        period = _read_int(self._v1("cpu") / "cpu.cfs_period_us")
        return quota / period if quota > 0 and period else None

    def cpus(self) -> str | None:
        """The cpuset's CPUs (`0-1`), None when it cannot be read."""
        base = self._v2() if self.layout == "v2" else self._v1("cpuset")
        name = "cpuset.cpus.effective" if self.layout == "v2" else "cpuset.cpus"
        try:
            return (base / name).read_text().strip() or None
        except OSError:
            return None

    def fill_cpuset_parents(self) -> None:
        """Under cgroup v1 a new cpuset has no CPUs and no memory nodes, and no child can be
        given one its parent lacks: give this cgroup's parents their own parent's (runsc makes
        them empty), so runsc can narrow the sandbox's cpuset (bundle.boot_cpus)."""
        if self.layout == "v2":
            return
        top = self.root / "cpuset"
        directory = top
        for part in Path(self.path.lstrip("/")).parent.parts:
            directory = directory / part
            with contextlib.suppress(OSError):
                directory.mkdir(exist_ok=True)
                for name in ("cpuset.cpus", "cpuset.mems"):
                    if not (directory / name).read_text().strip():
                        (directory / name).write_text((directory.parent / name).read_text())

    def widen_cpus(self) -> bool:
        """Give the cgroup every CPU its parent has (a sandbox starts on fewer so its kernel
        counts its own CPUs: bundle.boot_cpus); False when that could not be written."""
        if self.layout == "v2":
            target, value = self._v2() / "cpuset.cpus", ""
        else:
            target = self._v1("cpuset") / "cpuset.cpus"
            try:
                value = (target.parent.parent / "cpuset.cpus").read_text().strip()
            except OSError:
                return False
        try:
            target.write_text(value)
        except OSError:
            return False
        return True

    def usage(self) -> Usage:
        if self.layout == "v2":
            base = self._v2()
            cpu = _read_keyed(base / "cpu.stat", "usage_usec") / 1e6
            mem, mem_limit = _read_int(base / "memory.current"), _read_int(base / "memory.max")
            pids, pids_limit = _read_int(base / "pids.current"), _read_int(base / "pids.max")
        else:
            cpu = _read_int(self._v1("cpuacct") / "cpuacct.usage") / 1e9
            mem = _read_int(self._v1("memory") / "memory.usage_in_bytes")
            mem_limit = _read_int(self._v1("memory") / "memory.limit_in_bytes")
            pids = _read_int(self._v1("pids") / "pids.current")
            pids_limit = _read_int(self._v1("pids") / "pids.max")
        return Usage(cpu, mem, mem_limit, pids, pids_limit)

    def remove(self) -> list[Path]:
        """Kill what is left in the cgroup and remove its directories; return ones that stay.
        What it killed gets one short wait, shared by all the directories, to leave."""
        deadline = time.monotonic() + RMDIR_WAIT_S
        left = []
        for directory in self.dirs():
            if not directory.is_dir():
                continue
            for sub in sorted(directory.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if sub.is_dir():
                    _kill_and_rmdir(sub, deadline)
            if not _kill_and_rmdir(directory, deadline):
                left.append(directory)
        return left


# How long one removal waits, in all, for what it killed to leave the cgroup: a killed process
# is listed (and the directory busy) until it has exited, a few ms for runsc's processes.
RMDIR_WAIT_S = 2.0


def _kill_and_rmdir(directory: Path, deadline: float) -> bool:
    """Kill the processes listed in `directory` and remove it; when it killed any, a busy
    directory is tried again until `deadline` (a monotonic time)."""
    procs = directory / "cgroup.procs"
    killed = False
    with contextlib.suppress(OSError, ValueError):
        for line in procs.read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(line), 9)
                killed = True
    while True:
        try:
            directory.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or not killed or time.monotonic() > deadline:
                return False
        time.sleep(0.01)


SANDBOX_PID_SHARE = 0.5  # of the host's pid space, for all sandboxes together


def pid_max() -> int | None:
    """The host's pid space (`kernel.pid_max`), None when it cannot be read."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return None


def cap_parent_pids(
    parent: str, fraction: float = SANDBOX_PID_SHARE, root: Path = ROOT
) -> int | None:
    """Bound the host tasks of all sandboxes together to a share of the host's pid space.

    Each sandbox has its own pids cap; this parent cap keeps many misbehaving sandboxes
    together from exhausting the host's pids. Returns the cap set, or None if not possible.
    """
    space = pid_max()
    if space is None:
        return None
    cap = int(space * fraction)
    layout = detect(root)
    directory = root / ("pids" if layout in ("v1", "hybrid") else "") / parent.lstrip("/")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "pids.max").write_text(str(cap))
    except OSError:
        return None
    return cap


def remove_if_empty(path: str, root: Path = ROOT) -> None:
    """rmdir a parent cgroup once nothing is left in it (never kills anything)."""
    for directory in Cgroup(path, root).dirs():
        with contextlib.suppress(OSError):
            directory.rmdir()
