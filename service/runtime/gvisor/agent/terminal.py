"""Execs under a pseudo-terminal: the pty pair, its window size, SIGWINCH."""

import fcntl
import os
import signal
import struct
import termios


def open_pty(rows, cols):
    """A pty pair (both ends close-on-exec) with the window `rows` x `cols`; and the path
    of its terminal end, by which processes holding it are found."""
    master, slave = os.openpty()
    try:
        set_size(master, rows, cols)
        return master, slave, os.ttyname(slave)
    except OSError:
        os.close(master)
        os.close(slave)
        raise


def set_size(master, rows, cols):
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def take(slave):
    """In the exec's child, a session leader now: make the terminal its controlling one."""
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)


def resize(master, session, rows, cols):
    """New window size, and SIGWINCH to the process groups of the exec's session. gVisor's
    kernel neither signals a size change made on the master end nor tells which group is in
    the foreground (TIOCGPGRP there, `tpgid` in /proc are not kept), so every group of the
    session is told: SIGWINCH is ignored unless a program asks for it, and a program that
    does reads the same new size wherever it runs."""
    set_size(master, rows, cols)
    groups = {session}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) == session:
                groups.add(int(fields[2]))
        except (OSError, IndexError, ValueError):
            continue
    for group in groups:
        try:
            os.killpg(group, signal.SIGWINCH)
        except OSError:
            pass
