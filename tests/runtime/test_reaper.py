"""The process that runs the gVisor runtime is a child subreaper: runsc's sandbox and gofer
helpers that lose their parent (a `runsc run --detach` client that exited, a node process that
was killed) come to it, and it reaps them without being asked. A zombie helper left unreaped
keeps `runsc delete --force` waiting for it until the delete's limit (30 s)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from service.runtime.gvisor import reaper


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None  # gone: reaped
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def test_an_adopted_helper_that_dies_is_reaped_unasked(tmp_path: Path) -> None:
    assert reaper.become_subreaper()
    helper = tmp_path / "exe"  # runsc's helpers run as /proc/self/exe: their name is `exe`
    shutil.copy(shutil.which("sleep") or "/bin/sleep", helper)
    # The shell starts the helper and exits: the helper is re-parented to this process.
    out = subprocess.run(
        ["/bin/sh", "-c", f"{helper} 300 >/dev/null 2>&1 & echo $!"],
        check=True,
        capture_output=True,
        text=True,
    )
    pid = int(out.stdout)
    assert _state(pid) in {"S", "R"}
    subprocess.run(["kill", "-KILL", str(pid)], check=True)
    states = []
    for _ in range(100):  # up to 10 s, where the reaper passes every quarter second
        states.append(_state(pid))
        if states[-1] is None:
            break
        time.sleep(0.1)
    assert states[-1] is None, f"still there after 10 s: {states[-3:]}"


def test_a_child_the_service_waits_for_is_left_to_it(tmp_path: Path) -> None:
    """Only adopted runsc helpers are reaped: a child of another name keeps its status for
    the code that waits on it (asyncio, subprocess)."""
    assert reaper.become_subreaper()
    child = subprocess.Popen(["/bin/sh", "-c", "exit 7"])
    time.sleep(1.0)  # four of the reaper's passes
    assert child.wait(timeout=5) == 7
