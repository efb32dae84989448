"""How the exec agent (`agent/`) gets into a gVisor sandbox: the directory bind-mounted
read-only, the program PID 1 runs (the agent, or the plain init when it cannot start) and the
capabilities PID 1 keeps for it. Only images with /usr/bin/python3 get it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).with_name("agent")  # a directory, run by its __main__.py
IN_SANDBOX = "/run/airlock-agent.d"
# Where sandboxes of earlier versions had the agent, one file: their snapshots restore with a
# file mounted there (the restored agent runs from memory and never reads it).
LEGACY_IN_SANDBOX = "/run/airlock-agent"
PYTHON = "/usr/bin/python3"
# What the agent needs to become an exec's user, drop its capabilities and kill its tree.
CAPS = ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL"]

# PID 1's program: run the agent; if it cannot start (or ever returns), become the plain init.
BOOT = """import os, sys
try:
    import runpy
    runpy.run_path(sys.argv[1], run_name="__main__")
except BaseException as e:
    try:
        os.write(2, ("airlock-agent: stopped (%r), plain init\\n" % (e,)).encode())
    except BaseException:
        pass
os.execv(sys.argv[2], sys.argv[2:])
"""


def init_argv(fallback: list[str]) -> list[str]:
    return [PYTHON, "-E", "-s", "-S", "-c", BOOT, IN_SANDBOX, *fallback]


def mounted_at(recorded: object) -> str | None:
    """Where a sandbox's record says its agent is mounted (None: it has no agent); records
    of earlier versions say only `true`."""
    if not recorded:
        return None
    return recorded if isinstance(recorded, str) else LEGACY_IN_SANDBOX


def mount(destination: str = IN_SANDBOX) -> dict[str, Any]:
    legacy = destination == LEGACY_IN_SANDBOX
    return {
        "destination": destination,
        "type": "bind",
        "source": str(SOURCE / "__main__.py" if legacy else SOURCE),
        "options": ["rbind", "ro", "nosuid", "nodev"],
    }


def available(rootfs: Path) -> bool:
    """The image has a python3 where the agent expects it."""
    return os.path.lexists(rootfs / PYTHON.lstrip("/"))
