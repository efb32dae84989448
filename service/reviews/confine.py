"""Git on the host, confined like any parser of untrusted input.

What a remote git host sends (packs, deltas, ref adverts, error text) is parsed by git on the
host, so each git process of a review's fetch runs:

- as an unprivileged uid (`AIRLOCK_REVIEW_FETCH_UID`, default 65534 `nobody`) with no
  supplementary groups, no capabilities and `no_new_privs`, through util-linux `setpriv`, when
  the service runs as root (a service that is not root runs git as its own uid);
- under rlimits set by util-linux `prlimit` before git starts: address space
  (`AIRLOCK_REVIEW_FETCH_MEMORY_MIB`), CPU seconds (the fetch's deadline), file size and
  processes (only under the fetch uid, whose processes are git's alone), no core dumps;
- in a private directory that uid owns, inside a directory only root writes (so git cannot
  move its own directory away and have the service follow a link), with `HOME` and `TMPDIR`
  there and nothing else of the service's environment (no proxy variables: a proxy would
  resolve the host name again and undo the address pinning);
- with a byte cap (`AIRLOCK_REVIEW_FETCH_MAX_MIB`): every file git writes is capped by
  RLIMIT_FSIZE (the fetched objects arrive as one pack), and a watchdog measures the
  repository while git runs and kills git when the whole is over the cap.

A gVisor sandbox would be a stronger boundary, but the fetch must reach the git host at the
address pinned on the host, with the tenant's secret, and neither the secret nor a network
policy toward an arbitrary git host belongs in a sandbox; the confinement above bounds what an
exploited git can take: one unprivileged uid's files, for the length of one fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from service.settings import Settings

MIB = 1 << 20
WATCH_INTERVAL_S = 0.1
# Processes git needs at once: git, the remote helper, index-pack, rev-list and a few more.
MAX_PROCESSES = 32
# The bare repository under the workspace's home, whose size the byte cap watches.
REPO = "repo.git"


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int = 2048 * MIB
    memory_bytes: int = 2048 * MIB
    uid: int = 65534

    @classmethod
    def from_settings(cls, settings: Settings) -> FetchLimits:
        return cls(
            max_bytes=settings.review_fetch_max_mib * MIB,
            memory_bytes=settings.review_fetch_memory_mib * MIB,
            uid=settings.review_fetch_uid,
        )

    @property
    def drops_uid(self) -> bool:
        return os.geteuid() == 0

    def wrap(self, argv: list[str], cpu_s: float, *, drop: bool) -> list[str]:
        """`argv` run under the fetch uid (when `drop` and the service is root) and rlimits."""
        prefix = ["setpriv", "--no-new-privs"]
        limits = [
            f"--as={self.memory_bytes}",
            f"--cpu={max(1, int(cpu_s))}",
            f"--fsize={self.max_bytes}",
            "--core=0",
        ]
        if drop and self.drops_uid:
            prefix += [
                f"--reuid={self.uid}",
                f"--regid={self.uid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
            ]
            limits.append(f"--nproc={MAX_PROCESSES}")
        return [*prefix, "--", "prlimit", *limits, "--", *argv]


class Workspace:
    """`outer` (root's, 0711) holding `home` (the fetch uid's, 0700), where git works."""

    def __init__(self, limits: FetchLimits, *, drop: bool) -> None:
        self.limits = limits
        self.drop = drop and limits.drops_uid
        self.outer = Path(tempfile.mkdtemp(prefix="airlock-fetch-"))
        os.chmod(self.outer, 0o711)  # noqa: S103 (traversable, never listable)
        self.home = self.outer / "home"
        self.home.mkdir(mode=0o700)
        if self.drop:
            os.chown(self.home, limits.uid, limits.uid)

    def give(self, source: Path, name: str) -> Path:
        """A copy of the service's file `source` that git may read."""
        target = self.home / name
        shutil.copyfile(source, target)
        if self.drop:
            os.chown(target, self.limits.uid, self.limits.uid)
        return target

    def take(self, name: str, target: Path) -> int:
        """Copy git's file `name` out to `target` without following any link git made; its size."""
        home_fd = os.open(self.home, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=home_fd)
        finally:
            os.close(home_fd)
        with os.fdopen(fd, "rb") as src:
            info = os.fstat(src.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise OSError(f"{name} is not a plain file")
            with open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        return info.st_size

    def usage(self) -> int:
        """Bytes of disk the fetched repository takes (links are not followed)."""
        total = 0
        for top, dirs, files in os.walk(self.home / REPO):
            for name in dirs + files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(top, name)).st_blocks * 512
        return total

    def at_cap(self) -> bool:
        """Whether the repository reached the cap: in all, or in one file (RLIMIT_FSIZE stops
        the writer there; git reports only that its index-pack went away)."""
        if self.usage() > self.limits.max_bytes:
            return True
        for top, _, files in os.walk(self.home / REPO):
            for name in files:
                with contextlib.suppress(OSError):
                    if os.lstat(os.path.join(top, name)).st_size >= self.limits.max_bytes:
                        return True
        return False

    def remove(self) -> None:
        shutil.rmtree(self.outer, ignore_errors=True)


@contextlib.asynccontextmanager
async def workspace(limits: FetchLimits, *, drop: bool) -> AsyncIterator[Workspace]:
    space = await asyncio.to_thread(Workspace, limits, drop=drop)
    try:
        yield space
    finally:
        await asyncio.shield(asyncio.to_thread(space.remove))


async def watch(space: Workspace, proc: asyncio.subprocess.Process, tripped: list[bool]) -> None:
    """Kill `proc`'s process group once `space` holds more than the cap."""
    while proc.returncode is None:
        if await asyncio.to_thread(space.usage) > space.limits.max_bytes:
            tripped.append(True)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            return
        await asyncio.sleep(WATCH_INTERVAL_S)
