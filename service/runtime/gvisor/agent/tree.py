"""Ending an exec's process tree, however it spread."""

import os
import signal
import time

from wire import KILL_SETTLE_S


def kill_tree(ex, reap):
    """SIGKILL the exec's process group (looping, so a fork bomb cannot outrun it), then
    every process in its session, parented by it, or holding its output pipes (children
    that escaped with setsid). Other execs and detached daemons are left alone. Returns
    once none is left, zombies included (reaped here, up to KILL_SETTLE_S): until then
    they hold their slots under the pids cap, and the next exec could not start."""
    target = ex.pid
    for _ in range(1000):
        try:
            os.killpg(target, signal.SIGKILL)
        except OSError:
            break
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
    me = os.getpid()
    deadline = time.monotonic() + KILL_SETTLE_S
    while True:
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (1, me):
                continue
            pid = int(name)
            try:
                with open(f"/proc/{pid}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                ppid, pgrp, session = int(fields[1]), int(fields[2]), int(fields[3])
            except (OSError, IndexError, ValueError):
                continue
            hit = target in (ppid, pgrp, session)
            if not hit and ex.pipes:
                for fd in (1, 2):
                    try:
                        if os.readlink(f"/proc/{pid}/fd/{fd}") in ex.pipes:
                            hit = True
                    except OSError:
                        pass
            if hit:
                found = True
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        reap()
        if not found or time.monotonic() > deadline:
            break
        time.sleep(0.01)
