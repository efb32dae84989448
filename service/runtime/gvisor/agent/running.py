"""An exec the agent runs: its descriptors, what it sent and holds back, how it ended; its
stdin written and its output read for the host (`send`: a frame to the host)."""

import errno
import os
import struct
import time

from wire import CHUNK, STDERR, STDIN_ACK, STDOUT


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

    def write_stdin(self, send):
        while self.pending_in and self.stdin is not None:
            try:
                n = os.write(self.stdin, self.pending_in[:CHUNK])
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    return
                n = len(self.pending_in)  # the process stopped reading: drop the rest
                self.close_stdin()
            del self.pending_in[:n]
            send(STDIN_ACK, self.channel, struct.pack(">I", n))
        if self.stdin is None and self.pending_in:
            send(STDIN_ACK, self.channel, struct.pack(">I", len(self.pending_in)))
            self.pending_in = bytearray()
        if self.close_in and not self.pending_in:
            self.close_stdin()

    def close_stdin(self):
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def read_output(self, fd, send):
        index = 0 if fd == self.out else 1
        try:
            data = os.read(fd, CHUNK)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return
            data = b""
        if not data:
            os.close(fd)
            if index == 0:
                self.out = None
            else:
                self.err = None
            return
        self.total[index] += len(data)
        room = len(data) if self.cap is None else self.cap - self.sent[index]
        if room > 0:
            data = data[:room]
            self.sent[index] += len(data)
            if self.cap is None:
                self.in_flight += len(data)
            send(STDOUT if index == 0 else STDERR, self.channel, data)
