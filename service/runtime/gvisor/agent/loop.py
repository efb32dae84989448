"""The exec agent's loop: frames from and to the host, execs' pipes, reaping."""

import errno
import fcntl
import json
import os
import select
import signal
import struct
import sys
import time

import become
import ports
import terminal
import tree
import usage
from running import Exec
from wire import (
    ACK,
    ANSWERS,
    CHUNK,
    DETACH,
    DRAIN_AFTER_EXIT_S,
    END_EXECS,
    EOF_KEY,
    EXIT,
    F_SETPIPE_SZ,
    HEADER,
    HELLO,
    HOLD,
    IGNORED,
    KILL,
    MAX_FRAME_IN,
    OUT_WINDOW,
    PING,
    PIPE_SIZE,
    PONG,
    PORT_KINDS,
    RELEASE,
    RESIZE,
    START,
    STARTED,
    STDERR,
    STDIN,
    STDIN_ACK,
    STDIN_CLOSE,
    STDOUT,
    USAGE,
    USAGE_OF,
    VERSION,
    log,
    set_nonblocking,
)


class Agent:
    def __init__(self):
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.host = True
        self.retry_at = 0.0
        self.retried = False  # the channel is back on trial after being lost
        self.execs = {}  # channel -> Exec
        self.by_pid = {}
        # Held around a checkpoint: frames the host did not ask for wait in `deferred`.
        self.held = False
        self.deferred = bytearray()
        self.detached = []  # execs of channels a new host does not know: they run on unwatched
        self.ports = ports.Ports(self.send)  # connections to ports inside
        self.caps = become.bounding_caps()
        self.permitted = become.permitted_mask()
        # Empty the bounding set (our own capabilities stay): nothing we start, root
        # included, can gain a capability when it executes a program.
        for cap in self.caps:
            become.libc.prctl(become.PR_CAPBSET_DROP, cap, 0, 0, 0)
        self.spawn_ok = hasattr(os, "posix_spawn") and sys.version_info >= (3, 8)
        self.signals = [getattr(signal, n) for n in IGNORED]
        self.wake_r, wake_w = os.pipe()
        set_nonblocking(self.wake_r)
        set_nonblocking(wake_w)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for name in IGNORED:
            signal.signal(getattr(signal, name), signal.SIG_IGN)
        set_nonblocking(0)
        set_nonblocking(1)

    # -- frames to the host ---------------------------------------------------------------

    def send(self, kind, channel, payload=b""):
        if not self.host:
            return
        frame = HEADER.pack(len(payload), kind, channel) + payload
        if self.held and kind not in ANSWERS:
            self.deferred += frame
        else:
            self.outbuf += frame

    def about(self, **extra):
        """What the host learns in a hello or a pong: the protocol and what we can do."""
        return dict(v=VERSION, tty=True, hold=True, **extra)

    def room(self):
        """Whether more output may be read for the host."""
        return len(self.outbuf) + len(self.deferred) < OUT_WINDOW

    def send_json(self, kind, channel, value):
        self.send(kind, channel, json.dumps(value, separators=(",", ":")).encode())

    def flush(self):
        while self.outbuf and self.host:
            try:
                n = os.write(1, self.outbuf[: 1 << 20])
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    return
                self.host_gone(f"write: {exc}")
                return
            del self.outbuf[:n]

    def host_gone(self, why):
        """The service lost us (it restarted, or closed the channel): nobody will read the
        output of running execs, so their process trees end; the sandbox stays."""
        if not self.host:
            return
        if self.execs or not self.retried:
            log(f"host channel closed ({why}); ending {len(self.execs)} exec(s)")
        self.host = False
        self.retry_at = time.monotonic() + 1.0
        self.outbuf = bytearray()
        self.inbuf = bytearray()
        self.held = False
        self.deferred = bytearray()
        for ex in list(self.execs.values()):
            self.kill_tree(ex)
        self.ports.close_all()

    def retry_host(self):
        """Listen to the channel again: a restore hands the sandbox new pipes. One still closed
        answers EOF (or a broken pipe) at once, and we try again a second later."""
        self.retried = True
        self.host = True
        self.send_json(HELLO, 0, self.about(pid=os.getpid()))

    # -- frames from the host -------------------------------------------------------------

    def read_host(self):
        try:
            data = os.read(0, 1 << 20)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return
            data = b""
        if not data:
            self.host_gone("eof")
            return
        self.retried = False
        self.inbuf += data
        self.parse_host()

    def parse_host(self):
        while self.host and len(self.inbuf) >= HEADER.size:
            size, kind, channel = HEADER.unpack_from(self.inbuf)
            if size > MAX_FRAME_IN:
                self.host_gone(f"frame of {size} bytes")
                return
            if len(self.inbuf) < HEADER.size + size:
                return
            payload = bytes(self.inbuf[HEADER.size : HEADER.size + size])
            del self.inbuf[: HEADER.size + size]
            try:
                self.handle(kind, channel, payload)
            except Exception as exc:  # one bad request never takes PID 1 down
                log(f"frame {kind} on channel {channel} failed: {exc!r}")

    def handle(self, kind, channel, payload):
        ex = self.execs.get(channel)
        if kind in PORT_KINDS:
            self.ports.handle(kind, channel, payload)
        elif kind == PING:
            self.send_json(PONG, channel, self.about(token=payload.decode()))
        elif kind == HOLD:
            self.held = True
            self.send_json(PONG, channel, self.about(token=payload.decode()))
        elif kind == RELEASE:
            self.release()
        elif kind == DETACH:
            self.detach(end=payload == END_EXECS)
        elif kind == USAGE:
            req = json.loads(payload.decode())
            self.send_json(USAGE_OF, 0, dict(usage.usage(req["paths"]), token=req["token"]))
        elif kind == START:
            self.start(channel, json.loads(payload.decode()))
        elif ex is None:
            if kind == STDIN:
                self.send(STDIN_ACK, channel, struct.pack(">I", len(payload)))
        elif kind == STDIN:
            if ex.stdin is None:
                self.send(STDIN_ACK, channel, struct.pack(">I", len(payload)))
            else:
                ex.pending_in += payload
                self.write_stdin(ex)
        elif kind == STDIN_CLOSE:
            if ex.terminal is not None and ex.stdin is not None and not ex.close_in:
                ex.pending_in += EOF_KEY  # the terminal stays open: end of input is a key
            ex.close_in = True
            self.write_stdin(ex)
        elif kind == RESIZE and len(payload) == 4:
            if ex.terminal is not None and ex.out is not None:
                rows, cols = struct.unpack(">HH", payload)
                terminal.resize(ex.out, ex.pid, rows, cols)
        elif kind == KILL:
            self.kill_tree(ex)
        elif kind == ACK and len(payload) == 4:
            ex.in_flight = max(0, ex.in_flight - struct.unpack(">I", payload)[0])

    def release(self):
        self.held = False
        self.outbuf += self.deferred
        self.deferred = bytearray()

    def detach(self, end=False):
        """The host on the other end does not know our channels: their execs run on
        unwatched (we were restored into another sandbox), their output read and dropped so
        they never block on it, their end reaped, not reported; with `end` their trees end
        first, as when the host is gone (the sandbox's own service restarted meanwhile)."""
        for ex in list(self.execs.values()):
            if end:
                self.kill_tree(ex)
            self.close_stdin(ex)
            ex.pending_in = bytearray()
            ex.cap = 0
            self.detached.append(ex)
        self.execs = {}
        self.deferred = bytearray()
        self.ports.close_all()

    # -- execs ----------------------------------------------------------------------------

    def start(self, channel, req):
        if channel in self.execs:
            raise ValueError(f"channel {channel} in use")
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
        except OSError as exc:
            for fd in set(fds) - {None}:
                os.close(fd)
            message = f"executing command {req['argv'][0]!r} in sandbox: {exc}\n"
            self.send(STDERR, channel, message.encode())
            end = {"code": 128, "signal": None, "out": 0, "err": 0, "ran": 0.0}
            self.send_json(EXIT, channel, end)
            return
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
        ex = Exec(channel, pid, (out_r, err_r, in_w), req.get("cap"), path)
        self.execs[channel] = ex
        self.by_pid[pid] = ex
        self.send_json(STARTED, channel, {"pid": pid})

    def spawn(self, req, env, stdin, stdout, stderr):
        if self.spawn_ok:
            return become.spawn(req, env, stdin, stdout, stderr, self.signals, self.permitted)
        pid = os.fork()
        if pid == 0:
            become.child(req, env, stdin, stdout, stderr, self.caps)
        return pid

    def write_stdin(self, ex):
        while ex.pending_in and ex.stdin is not None:
            try:
                n = os.write(ex.stdin, ex.pending_in[:CHUNK])
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    return
                n = len(ex.pending_in)  # the process stopped reading: drop the rest
                self.close_stdin(ex)
            del ex.pending_in[:n]
            self.send(STDIN_ACK, ex.channel, struct.pack(">I", n))
        if ex.stdin is None and ex.pending_in:
            self.send(STDIN_ACK, ex.channel, struct.pack(">I", len(ex.pending_in)))
            ex.pending_in = bytearray()
        if ex.close_in and not ex.pending_in:
            self.close_stdin(ex)

    def close_stdin(self, ex):
        if ex.stdin is not None:
            os.close(ex.stdin)
            ex.stdin = None

    def read_output(self, ex, fd):
        index = 0 if fd == ex.out else 1
        try:
            data = os.read(fd, CHUNK)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return
            data = b""
        if not data:
            os.close(fd)
            if index == 0:
                ex.out = None
            else:
                ex.err = None
            return
        ex.total[index] += len(data)
        room = len(data) if ex.cap is None else ex.cap - ex.sent[index]
        if room > 0:
            data = data[:room]
            ex.sent[index] += len(data)
            if ex.cap is None:
                ex.in_flight += len(data)
            self.send(STDOUT if index == 0 else STDERR, ex.channel, data)

    def kill_tree(self, ex):
        tree.kill_tree(ex, self.reap)

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                return
            if pid == 0:
                return
            ex = self.by_pid.pop(pid, None)
            if ex is not None:
                ex.status = status
                ex.ran = time.monotonic() - ex.started
                ex.drain_until = time.monotonic() + DRAIN_AFTER_EXIT_S

    def finish(self, ex):
        for fd in (ex.out, ex.err):
            if fd is not None:
                os.close(fd)
        ex.out = ex.err = None
        self.close_stdin(ex)
        if ex in self.detached:
            self.detached.remove(ex)
            return
        status = ex.status
        code = sig = None
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            code = 128 + sig
        else:
            code = os.WEXITSTATUS(status)
        self.execs.pop(ex.channel, None)
        self.send_json(
            EXIT,
            ex.channel,
            {"code": code, "signal": sig, "out": ex.total[0], "err": ex.total[1], "ran": ex.ran},
        )

    # -- the loop -------------------------------------------------------------------------

    def step(self):
        poller = select.poll()
        poller.register(self.wake_r, select.POLLIN)
        if not self.host and time.monotonic() >= self.retry_at:
            self.retry_host()
        if self.host:
            poller.register(0, select.POLLIN)
            if self.outbuf:
                poller.register(1, select.POLLOUT)
        now = time.monotonic()
        timeout = 1.0
        watch = {}
        for ex in [*self.execs.values(), *self.detached]:
            if ex.drain_until is not None:
                if self.host and ex.cap is None and ex.in_flight >= OUT_WINDOW:
                    ex.drain_until = now + DRAIN_AFTER_EXIT_S  # a slow reader is no stall
                timeout = min(timeout, max(0.0, ex.drain_until - now))
            if ex.cap == 0 or (self.room() and (ex.cap is not None or ex.in_flight < OUT_WINDOW)):
                for fd in (ex.out, ex.err):
                    if fd is not None:
                        watch[fd] = ex
                        poller.register(fd, select.POLLIN)
            if ex.stdin is not None and ex.pending_in:
                watch[ex.stdin] = ex
                poller.register(ex.stdin, select.POLLOUT)
        sockets = self.ports.watch(poller, self.host and self.room())
        try:
            events = poller.poll(timeout * 1000)
        except InterruptedError:
            events = []
        for fd, mask in events:
            if fd in sockets:
                self.ports.ready(sockets[fd], mask)
            elif fd == self.wake_r:
                try:
                    while os.read(self.wake_r, 4096):
                        pass
                except OSError:
                    pass
            elif fd == 0:
                self.read_host()
            elif fd == 1:
                self.flush()
            elif fd in watch:
                ex = watch[fd]
                if fd == ex.stdin:
                    self.write_stdin(ex)
                elif fd in (ex.out, ex.err):
                    self.read_output(ex, fd)
        self.reap()
        now = time.monotonic()
        for ex in [*self.execs.values(), *self.detached]:
            if ex.status is not None and (
                (ex.out is None and ex.err is None) or now >= ex.drain_until
            ):
                self.finish(ex)
        self.flush()

    def run(self):
        self.send_json(HELLO, 0, self.about(pid=os.getpid()))
        self.flush()
        while True:
            try:
                self.step()
            except Exception as exc:  # PID 1 must stay up: log and go on
                log(f"loop: {exc!r}")
                time.sleep(0.1)


def main():
    become.libc.prctl(become.PR_SET_NAME, b"airlock-agent", 0, 0, 0)
    become.libc.prctl(become.PR_SET_DUMPABLE, 0, 0, 0, 0)
    Agent().run()
