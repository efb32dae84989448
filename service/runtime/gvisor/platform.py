"""Which runsc platform sandboxes run on, and why.

systrap (runsc 2023 and later) intercepts syscalls with seccomp in the traced process and
runs file- and syscall-heavy work several times faster than ptrace; it is the default where
this runsc offers it and a probe sandbox runs on it. ptrace is the fallback (Debian
bookworm's runsc 0.0~20221219 has nothing else that works under kvm-pvm: kvm hangs there).
`AIRLOCK_RUNSC_PLATFORM` forces one; a platform this runsc does not offer is refused.

The choice also says which network stack sandboxes with a network run on (netstack.py):
gVisor's own where a probe sandbox on the chosen platform shows it works, else the host stack
of the sandbox's namespace.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace

from ..errors import RuntimeUnavailable
from . import netstack
from .netstack import NetworkChoice

PROBE_TIMEOUT_S = 20.0
_OFFERED = re.compile(r"which platform to use: ([^\n]*)")


@dataclass(frozen=True)
class PlatformChoice:
    name: str
    reason: str
    # None: not probed (a runtime built by hand), and networked sandboxes use hostinet
    network: NetworkChoice | None = None

    @property
    def net_stack(self) -> str:
        return self.network.stack if self.network else netstack.HOSTINET

    def __str__(self) -> str:
        text = f"{self.name} ({self.reason})"
        return f"{text}; networked sandboxes on {self.network}" if self.network else text


def version(runsc: str) -> str:
    """The first line of `runsc --version` (`runsc version 0.0~20240729.0`)."""
    try:
        out = subprocess.run(
            [runsc, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


# The newest runsc measured to keep processes started by `runsc exec` across a checkpoint
# (Debian bookworm's); 0.0~20240729 restores PID 1's tree only, in the source as in clones.
KEEPS_EXEC_PROCESSES_UNTIL = 20221219


def release(version_line: str) -> int | None:
    """The release date of a Debian-style runsc version (`0.0~20240729.0` -> 20240729)."""
    found = re.search(r"(?:~|release-)(\d{8})", version_line)
    return int(found.group(1)) if found else None


def keeps_exec_processes(version_line: str) -> bool:
    """Whether this runsc's restore brings back processes started through `runsc exec`
    (an unknown version is taken not to: refusing a snapshot loses nothing)."""
    date = release(version_line)
    return date is not None and date <= KEEPS_EXEC_PROCESSES_UNTIL


# The oldest runsc measured to return from `checkpoint --leave-running` with the sandbox still
# running (0.0~20240729); bookworm's blocks until the sandbox exits.
LEAVES_RUNNING_FROM = 20240729


def checkpoint_leaves_running(version_line: str) -> bool:
    """Whether `runsc checkpoint --leave-running` works here (an unknown version: no, the
    checkpoint is followed by a restore in place, which works on every build)."""
    date = release(version_line)
    return date is not None and date >= LEAVES_RUNNING_FROM


def offered(runsc: str) -> tuple[str, ...]:
    """The platforms this runsc names in `runsc flags` (ptrace when it cannot tell)."""
    try:
        out = subprocess.run(
            [runsc, "flags"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ("ptrace",)
    found = _OFFERED.search(out.stdout + out.stderr)
    if found is None:
        return ("ptrace",)
    names = (n.replace("(default)", "").strip() for n in found.group(1).split(".")[0].split(","))
    return tuple(n for n in names if n) or ("ptrace",)


def probe(runsc: str, platform: str) -> tuple[bool, str]:
    """Run `/bin/true` in a throw-away sandbox on `platform` (`runsc do`, the host's root
    read-only under an overlay, no network); (worked, what happened)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="airlock-probe-") as root:
        argv = [runsc, f"--root={root}", f"--platform={platform}", "--network=none"]
        try:
            out = subprocess.run(
                [*argv, "do", "/bin/true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False, f"a probe sandbox did not finish within {PROBE_TIMEOUT_S:.0f} s"
        except OSError as exc:
            return False, f"cannot run {runsc}: {exc}"
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        return False, f"a probe sandbox failed (exit {out.returncode}: {tail[0][:200]})"
    return True, f"a probe sandbox ran /bin/true on it ({time.monotonic() - started:.2f} s)"


def choose_platform(runsc: str, configured: str | None = None) -> PlatformChoice:
    """The platform for `runsc`: `configured` if given (and offered), else systrap where it
    is offered and its probe works, else ptrace; with the network stack that works on it.
    Probed once per binary per process."""
    stat = os.stat(runsc)
    key = (os.path.realpath(runsc), stat.st_mtime_ns, stat.st_size)
    choice = _choose(*key, configured)
    return replace(choice, network=_network(*key, choice.name))


@functools.lru_cache(maxsize=8)
def _network(runsc: str, _mtime_ns: int, _size: int, platform: str) -> NetworkChoice:
    return netstack.probe(runsc, platform)


@functools.lru_cache(maxsize=8)
def _choose(runsc: str, _mtime_ns: int, _size: int, configured: str | None) -> PlatformChoice:
    platforms = offered(runsc)
    if configured:
        if configured not in platforms:
            raise RuntimeUnavailable(
                "gvisor",
                f"AIRLOCK_RUNSC_PLATFORM={configured}, but {runsc} offers only "
                f"{', '.join(platforms)}; fix: unset it, or install runsc from "
                "bookworm-backports (scripts/runtime-setup.sh)",
            )
        return PlatformChoice(configured, f"AIRLOCK_RUNSC_PLATFORM={configured}")
    if "systrap" not in platforms:
        return PlatformChoice(
            "ptrace",
            f"this runsc offers no systrap ({', '.join(platforms)}); a newer runsc "
            "(bookworm-backports, scripts/runtime-setup.sh) runs syscall-heavy work faster",
        )
    works, detail = probe(runsc, "systrap")
    if works:
        return PlatformChoice("systrap", f"offered by this runsc and {detail}")
    return PlatformChoice("ptrace", f"systrap is offered but {detail}; ptrace is the fallback")
