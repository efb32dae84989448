"""The exec agent's frames and constants, shared by its modules (see __main__.py)."""

import fcntl
import os
import struct

VERSION = 1
HEADER = struct.Struct(">IBI")
MAX_FRAME_IN = 4 << 20  # a START carries argv + env
CHUNK = 256 * 1024
PIPE_SIZE = 1 << 20
F_SETPIPE_SZ = 1031
OUT_WINDOW = 1 << 20  # output bytes in flight per exec before the host acknowledges
KILL_SETTLE_S = 2.0  # a killed tree's last processes and zombies are gone by then
DRAIN_AFTER_EXIT_S = 1.0  # processes left holding the output pipe do not hold up the result
# host -> agent
PING, START, STDIN, STDIN_CLOSE, KILL, ACK, USAGE, RESIZE = 1, 2, 3, 4, 5, 6, 7, 8
# agent -> host
HELLO, PONG, STARTED, STDOUT, STDERR, EXIT, STDIN_ACK, USAGE_OF = 64, 65, 66, 67, 68, 69, 70, 71
# Around a checkpoint (host -> agent). HOLD (payload: a token) is answered with a PONG once
# everything sent before it is in the output; from then on the agent sends nothing unasked, so
# nothing is half-way through a pipe when it is frozen, and what it has to say waits for
# RELEASE. DETACH: the host on the other end does not know our channels: their execs run on
# as detached processes (a restore into another sandbox) or, with the payload END_EXECS, end
# as when the host is gone (the sandbox's own service restarted meanwhile, ending their records).
HOLD, RELEASE, DETACH = 14, 15, 16
END_EXECS = b"end"
ANSWERS = (PONG, USAGE_OF)  # sent while held: the host asked for them
# Connections to TCP ports inside the sandbox (ports.py), each on its own channel.
# host -> agent
PORT_OPEN, PORT_SEND, PORT_SHUT, PORT_CLOSE, PORT_ACK = 9, 10, 11, 12, 13
# agent -> host
PORT_OPENED, PORT_RECV, PORT_RECV_END, PORT_CLOSED, PORT_SENT = 72, 73, 74, 75, 76
PORT_KINDS = (PORT_OPEN, PORT_SEND, PORT_SHUT, PORT_CLOSE, PORT_ACK)
PORT_WINDOW = 1 << 20  # bytes read from a connection in flight before the host acknowledges
EOF_KEY = b"\x04"  # what closing a terminal's input types: Ctrl-D
IGNORED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGXFSZ")


def log(message):
    try:
        os.write(2, f"airlock-agent: {message}\n".encode(errors="replace"))
    except OSError:
        pass


def set_nonblocking(fd):
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
