"""Adopt and reap orphaned runsc processes.

`runsc run/restore --detach` leave their sandbox and gofer processes behind when the client
exits. They are re-parented to the nearest child subreaper; if that is PID 1 they can linger
as zombies, which makes `runsc delete` slow. The service makes itself a subreaper and reaps
the adopted ones: a thread does so every quarter second for as long as the process lives (it
stays a subreaper), and a wait on runsc reaps every 10 ms while it lasts (`runsc.reap_while`),
so a delete returns as soon as its sandbox has ended. A process that
runs a node and later starts others (a supervisor, a test run restarting its servers) thus
also reaps the helpers those leave behind when they die: unreaped, a sandbox process killed
by `runsc delete --force` would stay a zombie and the delete wait for it until its limit.
Only adopted runsc helpers (command name `exe`, since runsc re-executes
/proc/self/exe) are reaped, so the statuses of children that asyncio waits for are never
stolen.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
import time

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
_ADOPTED_COMM = "exe"
_REAP_EVERY_S = 0.25
_lock = threading.Lock()
_enabled = False


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux only); True when it is one."""
    global _enabled
    with _lock:
        if _enabled:
            return True
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                log.warning("prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d", ctypes.get_errno())
                return False
        except (OSError, AttributeError) as exc:
            log.warning("cannot become a child subreaper: %s", exc)
            return False
        _enabled = True
        threading.Thread(target=_reap_forever, name="airlock-reaper", daemon=True).start()
        return True


def _reap_forever() -> None:
    while True:
        time.sleep(_REAP_EVERY_S)
        try:
            reap_adopted()
        except Exception:  # a bad pass must not end the thread
            log.exception("reaping adopted runsc helpers failed")


def _children() -> set[int]:
    """This process's children. Orphans are re-parented to a subreaper's thread-group
    leader, so the adopted helpers are all there; a child a worker thread started is that
    thread's, and never an adopted one."""
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as fh:
            return {int(p) for p in fh.read().split()}
    except OSError:
        return set()


def _a_child_has_ended() -> bool:
    """Whether any child waits to be reaped, without reaping it (one system call: the pass
    reads /proc only when there is something to reap)."""
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return False


def _zombie_children() -> list[int]:
    found = []
    for pid in _children():
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        comm = stat[stat.find(b"(") + 1 : stat.rfind(b")")]
        state = stat[stat.rfind(b")") + 2 :].split()[:1]
        if state == [b"Z"] and comm == _ADOPTED_COMM.encode():
            found.append(pid)
    return found


def reap_adopted() -> int:
    """Reap zombie runsc helpers re-parented to this process; return how many."""
    reaped = 0
    if not _a_child_has_ended():
        return reaped
    for pid in _zombie_children():
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
            reaped += 1
    return reaped
