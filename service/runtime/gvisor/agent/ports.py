"""Connections the host asks for to TCP ports inside the sandbox.

The host opens one on a channel of its own (PORT_OPEN, `{"port": n}`); the agent connects to
127.0.0.1:n (then [::1]:n) from inside the sandbox, so a sandbox without a network still
serves its ports over its loopback and gains no network by it. Data flows both ways as
frames: what the host sends is written to the socket and acknowledged (PORT_SENT, the host's
window); what the socket gives is sent while less than PORT_WINDOW bytes await the host's
PORT_ACK. PORT_SHUT half-closes the connection once what the host sent is written; the end
of the socket's data is PORT_RECV_END; PORT_CLOSED (with the error, if any) ends the channel.
"""

import errno
import json
import select
import socket
import struct

from wire import (
    CHUNK,
    PORT_ACK,
    PORT_CLOSE,
    PORT_CLOSED,
    PORT_OPEN,
    PORT_OPENED,
    PORT_RECV,
    PORT_RECV_END,
    PORT_SEND,
    PORT_SENT,
    PORT_SHUT,
    PORT_WINDOW,
    log,
)

ADDRESSES = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))
WAITING = (errno.EINPROGRESS, errno.EAGAIN, errno.EALREADY)
RETRY = (errno.EAGAIN, errno.EINTR)
READABLE = select.POLLIN | select.POLLHUP | select.POLLERR


class Conn:
    def __init__(self, channel, port):
        self.channel = channel
        self.port = port
        self.sock = None
        self.tried = 0  # how many of ADDRESSES were tried
        self.connecting = True
        self.pending = bytearray()  # from the host, not yet written
        self.shut = False  # the host ended its side: shut writing once `pending` is out
        self.write_shut = False
        self.read_done = False
        self.in_flight = 0


class Ports:
    def __init__(self, send):
        self.send = send
        self.conns = {}  # channel -> Conn

    def send_json(self, kind, channel, value):
        self.send(kind, channel, json.dumps(value, separators=(",", ":")).encode())

    # -- frames from the host -------------------------------------------------------------

    def handle(self, kind, channel, payload):
        conn = self.conns.get(channel)
        if kind == PORT_OPEN:
            if conn is not None:
                raise ValueError(f"channel {channel} in use")
            port = int(json.loads(payload.decode())["port"])
            if not 0 < port < 65536:
                raise ValueError(f"port {port}")
            conn = Conn(channel, port)
            self.conns[channel] = conn
            self.connect(conn)
        elif conn is None:
            if kind == PORT_SEND:  # a connection that ended: its data is dropped
                self.send(PORT_SENT, channel, struct.pack(">I", len(payload)))
        elif kind == PORT_SEND:
            conn.pending += payload
            self.write(conn)
        elif kind == PORT_SHUT:
            conn.shut = True
            self.write(conn)
        elif kind == PORT_CLOSE:
            self.drop(conn)
        elif kind == PORT_ACK and len(payload) == 4:
            conn.in_flight = max(0, conn.in_flight - struct.unpack(">I", payload)[0])

    # -- the socket -----------------------------------------------------------------------

    def connect(self, conn):
        """Try the next address; answer PORT_OPENED once one connects or none did."""
        while conn.tried < len(ADDRESSES):
            family, host = ADDRESSES[conn.tried]
            conn.tried += 1
            try:
                sock = socket.socket(family, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            except OSError:
                continue
            sock.setblocking(False)
            code = sock.connect_ex((host, conn.port))
            if code == 0 or code in WAITING:
                conn.sock = sock
                if code == 0:
                    self.connected(conn)
                return
            sock.close()
        self.conns.pop(conn.channel, None)
        self.send_json(PORT_OPENED, conn.channel, {"ok": False, "error": "refused"})

    def connected(self, conn):
        code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code != 0:
            conn.sock.close()
            conn.sock = None
            self.connect(conn)  # the next address, or the refusal
            return
        conn.connecting = False
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_json(PORT_OPENED, conn.channel, {"ok": True})
        self.write(conn)

    def write(self, conn):
        if conn.connecting or conn.sock is None:
            return
        while conn.pending:
            try:
                n = conn.sock.send(conn.pending[:CHUNK])
            except OSError as exc:
                if exc.errno in RETRY:
                    return
                self.drop(conn, str(exc))
                return
            del conn.pending[:n]
            self.send(PORT_SENT, conn.channel, struct.pack(">I", n))
        if conn.shut:
            try:
                conn.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            conn.shut = False
            conn.write_shut = True
            self.maybe_done(conn)

    def read(self, conn):
        try:
            data = conn.sock.recv(CHUNK)
        except OSError as exc:
            if exc.errno in RETRY:
                return
            self.drop(conn, str(exc))
            return
        if not data:
            conn.read_done = True
            self.send(PORT_RECV_END, conn.channel)
            self.maybe_done(conn)
            return
        conn.in_flight += len(data)
        self.send(PORT_RECV, conn.channel, data)

    def maybe_done(self, conn):
        """Both ways ended (the host shut its side and the socket's data ended): close."""
        if conn.read_done and conn.write_shut:
            self.drop(conn)

    def drop(self, conn, error=None):
        if self.conns.pop(conn.channel, None) is None:
            return
        if conn.sock is not None:
            conn.sock.close()
            conn.sock = None
        self.send_json(PORT_CLOSED, conn.channel, {"error": error})

    def readable(self, conn):
        return not conn.read_done and conn.in_flight < PORT_WINDOW

    def close_all(self):
        for conn in list(self.conns.values()):
            if conn.sock is not None:
                conn.sock.close()
        self.conns = {}

    # -- the loop's side --------------------------------------------------------------------

    def watch(self, poller, room):
        """Register the sockets with something to do; `room`: the host channel takes more."""
        watched = {}
        for conn in self.conns.values():
            if conn.sock is None:
                continue
            events = 0
            if conn.connecting or conn.pending:
                events |= select.POLLOUT
            if not conn.connecting and room and self.readable(conn):
                events |= select.POLLIN
            if events:
                fd = conn.sock.fileno()
                poller.register(fd, events)
                watched[fd] = conn
        return watched

    def ready(self, conn, mask):
        if conn.channel not in self.conns:
            return
        try:
            if conn.connecting:
                self.connected(conn)
                return
            if conn.pending and mask & (select.POLLOUT | select.POLLERR):
                self.write(conn)
            if conn.sock is not None and self.readable(conn) and mask & READABLE:
                self.read(conn)
        except OSError as exc:
            log(f"port connection on channel {conn.channel}: {exc!r}")
            self.drop(conn, str(exc))
