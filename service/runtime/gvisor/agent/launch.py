"""Starting an exec: its pipes or its terminal, and the child that becomes it.

The agent's own capabilities stay (it switches users and kills trees with them); the
bounding set is emptied once, so nothing it starts, root included, gains a capability when
it executes a program.
"""

import fcntl
import os
import signal
import sys

import become
import terminal
from wire import F_SETPIPE_SZ, IGNORED, PIPE_SIZE, set_nonblocking


class Launcher:
    def __init__(self):
        self.caps = become.bounding_caps()
        self.permitted = become.permitted_mask()
        for cap in self.caps:
            become.libc.prctl(become.PR_CAPBSET_DROP, cap, 0, 0, 0)
        self.spawn_ok = hasattr(os, "posix_spawn") and sys.version_info >= (3, 8)
        self.signals = [getattr(signal, n) for n in IGNORED]

    def launch(self, req):
        """The started exec: its pid, the descriptors the agent keeps (output, errors,
        stdin: each None when it has none) and its terminal's path (None: pipes). OSError
        when it could not start, with every descriptor made for it closed."""
        env = list(req["env"])
        if not any(e.startswith("HOME=") for e in env):
            env.append("HOME=" + become.home_of(req["uid"]))
        size = req.get("tty")
        fds = [None] * 6  # out_r, out_w, err_r, err_w, in_r, in_w
        path = None
        try:
            if size:
                fds[0], fds[1], path = terminal.open_pty(int(size[0]), int(size[1]))
                if req.get("stdin"):
                    fds[5] = os.dup(fds[0])
                pid = os.fork()
                if pid == 0:
                    become.child(req, env, fds[1], fds[1], fds[1], self.caps, tty=True)
            else:
                fds[0:2] = os.pipe()
                fds[2:4] = os.pipe()
                if req.get("stdin"):
                    fds[4:] = os.pipe()
                else:
                    fds[4] = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
                pid = self.spawn(req, env, fds[4], fds[1], fds[3])
        except OSError:
            for fd in set(fds) - {None}:
                os.close(fd)
            raise
        out_r, out_w, err_r, err_w, in_r, in_w = fds
        for fd in {out_w, err_w, in_r} - {None}:
            os.close(fd)
        for fd in (out_r, err_r, in_w):
            if fd is not None:
                set_nonblocking(fd)
        for fd in (out_r, in_w):
            if fd is not None and path is None:
                try:
                    fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
                except OSError:
                    pass
        return pid, (out_r, err_r, in_w), path

    def spawn(self, req, env, stdin, stdout, stderr):
        if self.spawn_ok:
            return become.spawn(req, env, stdin, stdout, stderr, self.signals, self.permitted)
        pid = os.fork()
        if pid == 0:
            become.child(req, env, stdin, stdout, stderr, self.caps)
        return pid
