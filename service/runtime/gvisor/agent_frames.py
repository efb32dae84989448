"""The exec agent's frames, host side: a header `>IBI` (payload length, kind, channel) and a
payload; the kinds each way (`agent/wire.py` has the agent's side) and the JSON answers of the
agent, decoded strictly (`decode`) since nothing it sends is trusted.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

from . import agent_ports

VERSION = 1
HEADER = struct.Struct(">IBI")
MAX_FRAME = 512 * 1024  # from the agent; its data frames are 256 KiB at most
MAX_START = 4 << 20  # the agent's limit on a frame from us
CHUNK = 256 * 1024
STDIN_WINDOW = 1 << 20

PING, START, STDIN, STDIN_CLOSE, KILL, ACK, USAGE, RESIZE = 1, 2, 3, 4, 5, 6, 7, 8
HOLD, RELEASE, DETACH = 14, 15, 16  # around a checkpoint (agent/wire.py says what they do)
END_EXECS = b"end"
HELLO, PONG, STARTED, STDOUT, STDERR, EXIT, STDIN_ACK, USAGE_OF = 64, 65, 66, 67, 68, 69, 70, 71
FROM_AGENT = {HELLO, PONG, STARTED, STDOUT, STDERR, EXIT, STDIN_ACK, USAGE_OF}
FROM_AGENT |= agent_ports.FROM_AGENT  # connections to the sandbox's ports


class Hello(msgspec.Struct, forbid_unknown_fields=True):
    v: int
    pid: int
    # Whether it runs execs under a terminal, and holds its output for a checkpoint; agents
    # of earlier versions (restored from their snapshots) do not say, and do not.
    tty: bool = False
    hold: bool = False


class Pong(msgspec.Struct, forbid_unknown_fields=True):
    v: int
    token: str
    tty: bool = False
    hold: bool = False


class Usage(msgspec.Struct, forbid_unknown_fields=True):
    token: str
    processes: int
    # mount point -> [bytes used, bytes in all]
    mounts: dict[str, tuple[int, int]]


class Started(msgspec.Struct, forbid_unknown_fields=True):
    pid: int


class Exit(msgspec.Struct, forbid_unknown_fields=True):
    code: int | None
    signal: int | None
    out: int
    err: int
    ran: float


def decode(payload: bytes, kind: type[Any]) -> Any:
    return msgspec.json.decode(payload, type=kind, strict=True)
