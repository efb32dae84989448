"""Small helpers shared by the runtime tests."""

from __future__ import annotations

import os
from typing import Any

from service.runtime import ExecRequest, ExecResult, SandboxRuntime


async def sh(runtime: SandboxRuntime, sandbox_id: str, script: str, **kw: Any) -> ExecResult:
    """Run a shell script in the sandbox and return its result."""
    return await runtime.run(sandbox_id, ExecRequest(argv=["sh", "-c", script], **kw))


def host_processes_mentioning(text: str) -> list[str]:
    """Command lines of host processes that mention `text` (e.g. a sandbox id)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(cmdline)
    return found


# Allocates 16 MiB at a time until something stops it.
MEMORY_HOG = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n"
