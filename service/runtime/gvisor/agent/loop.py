"""The exec agent's loop: frames from and to the host, execs' pipes, reaping."""

import errno
import json
import os
import select
import signal
import struct
import time

import become
import launch
import ports
import terminal
import tree
import usage
from running import Exec
from wire import (
    ACK,
    ANSWERS,
    DETACH,
    DRAIN_AFTER_EXIT_S,
    END_EXECS,
    EOF_KEY,
    EXIT,
    HEADER,
    HELLO,
    HOLD,
    IGNORED,
    KILL,
    MAX_FRAME_IN,
    OUT_WINDOW,
    PING,
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
        self.launcher = launch.Launcher()  # empties the bounding set
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
                ex.write_stdin(self.send)
        elif kind == STDIN_CLOSE:
            if ex.terminal is not None and ex.stdin is not None and not ex.close_in:
                ex.pending_in += EOF_KEY  # the terminal stays open: end of input is a key
            ex.close_in = True
            ex.write_stdin(self.send)
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
            ex.close_stdin()
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
        try:
            pid, fds, path = self.launcher.launch(req)
        except OSError as exc:
            message = f"executing command {req['argv'][0]!r} in sandbox: {exc}\n"
            self.send(STDERR, channel, message.encode())
            end = {"code": 128, "signal": None, "out": 0, "err": 0, "ran": 0.0}
            self.send_json(EXIT, channel, end)
            return
        ex = Exec(channel, pid, fds, req.get("cap"), path)
        self.execs[channel] = ex
        self.by_pid[pid] = ex
        self.send_json(STARTED, channel, {"pid": pid})

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
        ex.close_stdin()
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
        # Children are reaped when a SIGCHLD woke us (the wakeup fd), an exec's output ended,
        # or nothing woke us: each system call costs tens of microseconds in a sandbox, and
        # most steps only relay bytes.
        signalled = not events
        for fd, mask in events:
            if fd in sockets:
                self.ports.ready(sockets[fd], mask)
            elif fd == self.wake_r:
                signalled = True
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
                    ex.write_stdin(self.send)
                elif fd in (ex.out, ex.err):
                    ex.read_output(fd, self.send)
                    # Its end of output: the process has most likely exited too, and its
                    # SIGCHLD may not have arrived yet.
                    signalled = signalled or fd not in (ex.out, ex.err)
        if signalled:
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
