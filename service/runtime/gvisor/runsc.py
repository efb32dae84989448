"""runsc command lines, running them, and reaping the helpers runsc leaves behind.

The only module that starts `runsc`. A sandbox with a network runs in its own namespace
(made by network.py), on gVisor's netstack or on that namespace's host stack (netstack.py),
so every runsc call for it runs there too (runsc's control socket is an abstract unix socket).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from . import hostproc, netstack, network, reaper
from .record import SandboxRecord

RUNSC_TIMEOUT_S = 60.0
KILL_TIMEOUT_S = 10.0
STARTS = ("run", "restore")  # the commands that start a sandbox kernel

_T = TypeVar("_T")


class Runsc:
    """One runsc binary on one `--root` and platform."""

    def __init__(self, binary: str, root: Path, platform: str) -> None:
        self.binary = binary
        self.root = root
        self.platform = platform

    def command(self, *args: str, meta: SandboxRecord | None = None) -> list[str]:
        """A runsc command line. A sandbox with a network runs in its own namespace, on the
        stack its record names (`net_stack`; hostinet for records older than netstack)."""
        meta = meta or SandboxRecord()
        stack = network.stack_of(meta)
        if stack is None:
            prefix: list[str] = []
            flags: tuple[str, ...] = ("--network=none",)
        else:
            starts = stack == netstack.NETSTACK and bool(args) and args[0] in STARTS
            prefix = netstack.wrapper(network.netns_path(meta.id), starts)
            flags = netstack.FLAGS[stack]
        # A sandbox whose writable space is on its own disk (disk.py): runsc keeps the root's
        # overlay upper layer in a file on that file system.
        disk = meta.disk
        overlay = (f"--overlay2=root:dir={disk}",) if disk else ()
        return [
            *prefix,
            self.binary,
            f"--root={self.root}",
            f"--platform={self.platform}",
            *flags,
            *overlay,
            "--cpu-num-from-quota",
            *args,
        ]

    async def run(
        self,
        *args: str,
        limit_s: float = RUNSC_TIMEOUT_S,
        log_file: Path | None = None,
        meta: SandboxRecord | None = None,
        stdio: tuple[int, int] | None = None,
    ) -> tuple[int, str]:
        """Run a runsc command; returns (exit code, combined output).

        Commands that start a sandbox hand their stdio to it, so they write to a file, or
        (`stdio`: the agent's stdin and stdout) to the exec agent's pipes.
        """
        if log_file is not None:
            with log_file.open("ab") as out:
                proc = await asyncio.create_subprocess_exec(
                    *self.command(*args, meta=meta),
                    stdin=stdio[0] if stdio else asyncio.subprocess.DEVNULL,
                    stdout=stdio[1] if stdio else out,
                    stderr=out,
                )
        else:
            proc = await asyncio.create_subprocess_exec(
                *self.command(*args, meta=meta),
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
        except asyncio.CancelledError:
            # The caller is gone (a create cancelled midway): runsc does not go on behind the
            # clean-up that follows, making what it tears down again.
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        text = (raw or b"").decode(errors="replace")
        if log_file is not None:
            text = hostproc.tail(log_file)
        return proc.returncode or 0, text

    async def state(self, sandbox_id: str, meta: SandboxRecord | None) -> str | None:
        code, out = await self.run("state", sandbox_id, limit_s=10, meta=meta)
        if code != 0:
            return None
        with contextlib.suppress(ValueError):
            return json.loads(out).get("status")
        return None

    async def containers(self) -> list[dict[str, Any]] | None:
        """`runsc list` (every container under the root), None when it failed."""
        code, out = await self.run("list", "--format=json", limit_s=20)
        if code != 0:
            return None
        try:
            return json.loads(out) or []
        except ValueError:
            return None


async def reap_while(awaitable: Awaitable[_T]) -> _T:
    """Await while reaping adopted runsc helpers, so runsc's waits end promptly."""
    task = asyncio.ensure_future(awaitable)
    while not task.done():
        reaper.reap_adopted()
        await asyncio.wait([task], timeout=0.01)
    reaper.reap_adopted()
    return task.result()
