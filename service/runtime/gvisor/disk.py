"""A sandbox's writable space on the node's disk: one ext4 file system per sandbox.

The sandbox's root is an overlay: the image's root filesystem, shared and never written,
under an upper layer the sandbox kernel keeps in a file ("filestore") it makes in a directory
the runtime names (`runsc --overlay2=root:dir=…`). That directory is the mount point of a file
system in a file of its own (`disk.img` in the sandbox's directory, loop-mounted), sized from
the sandbox's `disk_mib`: whatever the sandbox writes anywhere (`/work`, `/tmp`, its home,
`pip install` into the image's venv) is on the node's disk, a full disk is ENOSPC inside,
and none of it counts against the sandbox's memory cap. The file is allocated in full
(`fallocate`), so a node never promises more disk than it has: a start that would leave less
than `HOST_RESERVE_MIB` free is refused (`HostDiskExhausted`, a 503 with Retry-After).

Deleting files inside gives the space back: the sandbox kernel punches the freed pages out of
its filestore.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ResourceExhausted, SandboxRuntimeError

IMAGE = "disk.img"
MOUNT = "disk"
TOOLS = ("fallocate", "mkfs.ext4", "mount", "umount")
COMMAND_TIMEOUT_S = 60.0
HOST_RESERVE_MIB = 1024  # of the node's free disk, never given to sandboxes
MOUNT_OPTIONS = "noatime,nosuid,nodev"


class HostDiskExhausted(ResourceExhausted):
    """The node's disk has no room for the sandbox's writable space."""


def image_mib(disk_mib: int) -> int:
    """The file system's size for `disk_mib` of room: ext4's own tables take about 1.6 % of a
    small file system with a handful of inodes and no journal (measured: 1,024 MiB leaves
    1,008 MiB), so the file is a little larger and the sandbox gets at least `disk_mib`."""
    return disk_mib + disk_mib // 50 + 4


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


@dataclass(frozen=True)
class Disk:
    """The writable space of the sandbox whose directory is `directory`."""

    directory: Path

    @property
    def image(self) -> Path:
        return self.directory / IMAGE

    @property
    def mount_point(self) -> Path:
        return self.directory / MOUNT

    def make(self, disk_mib: int) -> None:
        """Allocate, format and mount the file system; on failure nothing is left."""
        self.mount_point.mkdir(parents=True, exist_ok=True)
        try:
            self._allocate(image_mib(disk_mib))
            _run(
                "mkfs.ext4", "-q", "-F", "-m", "0", "-N", "32",
                "-O", "^has_journal,^resize_inode", "-E", "nodiscard", str(self.image),
            )  # fmt: skip
            # Not `noexec`: the sandbox kernel maps the pages of the files a sandbox writes
            # (its pip-installed extension modules, programs it builds) from its filestore
            # here, executable ones with PROT_EXEC, which the host refuses on a noexec mount.
            _run(
                "mount", "-o", f"loop,{MOUNT_OPTIONS}", str(self.image), str(self.mount_point)
            )  # fmt: skip
            os.chmod(self.mount_point, 0o700)
        except BaseException:
            self.remove()
            raise

    def _allocate(self, size_mib: int) -> None:
        free_mib = shutil.disk_usage(self.directory).free >> 20
        if free_mib - size_mib < HOST_RESERVE_MIB:
            raise HostDiskExhausted(
                f"this node's disk has no room for {size_mib} MiB of writable space now "
                f"({free_mib} MiB free, {HOST_RESERVE_MIB} MiB of it kept for the node); "
                "retry later or ask for a smaller disk"
            )
        with self.image.open("wb") as out:
            try:
                os.posix_fallocate(out.fileno(), 0, size_mib << 20)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise HostDiskExhausted(
                        f"this node's disk has no room for {size_mib} MiB of writable space "
                        "now; retry later or ask for a smaller disk"
                    ) from exc
                raise

    def mounted(self) -> bool:
        return os.path.ismount(self.mount_point)

    def allow_exec(self) -> bool:
        """A disk mounted `noexec` (as sandboxes made before were): remounted without it, in
        place, so the running sandbox kernel's next executable mappings from its filestore
        succeed. True when it was remounted."""
        if not self.mounted() or not os.statvfs(self.mount_point).f_flag & os.ST_NOEXEC:
            return False
        _run("mount", "-o", f"remount,{MOUNT_OPTIONS},exec", str(self.mount_point))
        return True

    def usage(self) -> tuple[int, int] | None:
        """(bytes used, bytes the sandbox can use in all) as the node sees the file system,
        None when it is not mounted."""
        if not self.mounted():
            return None
        stat = os.statvfs(self.mount_point)
        used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
        return used, used + stat.f_bavail * stat.f_frsize

    def remove(self) -> None:
        """Unmount (lazily, should something still hold it) and delete the file."""
        if self.mounted():
            _run("umount", "-l", str(self.mount_point))
        with contextlib.suppress(FileNotFoundError):
            self.image.unlink()
        with contextlib.suppress(OSError):
            self.mount_point.rmdir()


def _run(*argv: str) -> None:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxRuntimeError(f"{argv[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise SandboxRuntimeError(f"{argv[0]} failed: {(done.stderr or done.stdout).strip()}")
