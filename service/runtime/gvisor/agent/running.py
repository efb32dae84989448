"""An exec the agent runs: its descriptors, what it sent and holds back, how it ended."""

import os
import time


class Exec:
    def __init__(self, channel, pid, fds, cap, terminal_path=None):
        self.channel = channel
        self.pid = pid
        self.out, self.err, self.stdin = fds
        self.cap = cap  # bytes sent per stream; None: everything (the host acknowledges)
        self.sent = [0, 0]
        self.total = [0, 0]
        self.in_flight = 0
        self.pending_in = bytearray()
        self.close_in = False
        self.status = None
        self.started = time.monotonic()
        self.ran = 0.0
        self.drain_until = None
        # Under a terminal (its path), `out` is its master end, `err` is None, and a resize
        # goes to `out`.
        self.terminal = terminal_path
        # What its processes hold as stdout/stderr, by which ones that escaped are found.
        if terminal_path is not None:
            self.pipes = {terminal_path}
        else:
            self.pipes = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in (self.out, self.err)}
