"""Airlock's exec agent: PID 1 of a gVisor sandbox whose image has /usr/bin/python3.

Bind-mounted read-only into the sandbox and started by `BOOT` (see `agent_link.py`), it talks
to the host over its own stdin/stdout (pipes held by the service) with length-prefixed frames,
and keeps the duties of an init: it reaps every child and orphan, ignores TERM/INT/HUP, and
survives `kill -9 -1`. Each exec is a child in its own session with exactly the argv, cwd,
environment and uid/gid asked for and no capabilities; rlimits come from the sandbox spec.

Frames: a header `>IBI` (payload length, kind, channel) and the payload. The host is trusted
here (it made the sandbox); the host trusts nothing from this side. When the host goes away
(EOF or a broken pipe) every exec's process tree is killed and the agent stays on as a plain
init. Stdlib only, and Python 3.6 syntax: images bring their own python3.
"""

import ctypes
import errno
import fcntl
import json
import os
import select
import signal
import struct
import sys
import time

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
PING, START, STDIN, STDIN_CLOSE, KILL, ACK = 1, 2, 3, 4, 5, 6
# agent -> host
HELLO, PONG, STARTED, STDOUT, STDERR, EXIT, STDIN_ACK = 64, 65, 66, 67, 68, 69, 70

PR_SET_DUMPABLE, PR_SET_NAME, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 15, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
IGNORED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGXFSZ")

libc = ctypes.CDLL(None, use_errno=True)


def log(message):
    try:
        os.write(2, f"airlock-agent: {message}\n".encode(errors="replace"))
    except OSError:
        pass


def bounding_caps():
    """Capabilities in our bounding set, dropped in every child before it runs anything."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapBnd:"):
                mask = int(line.split()[1], 16)
                return [c for c in range(64) if mask >> c & 1]
    return list(range(41))


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]


def set_caps(mask):
    """Effective and permitted = `mask`, inheritable empty."""
    header = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (CapData * 2)()
    for half in (0, 1):
        data[half].effective = data[half].permitted = (mask >> (32 * half)) & 0xFFFFFFFF
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def permitted_mask():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapPrm:"):
                return int(line.split()[1], 16)
    return 0


def find_program(name, env):
    """`name` on the exec's own PATH, checked as the exec's user (we run as it here)."""
    if "/" in name:
        return name
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    for entry in env:
        if entry.startswith("PATH="):
            path = entry[5:]
    for directory in path.split(":"):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(errno.ENOENT, "no such file or directory in $PATH", name)


def home_of(uid):
    try:
        with open("/etc/passwd", "rb") as passwd:
            for line in passwd:
                fields = line.rstrip(b"\n").split(b":")
                if len(fields) >= 6 and fields[2] == str(uid).encode():
                    return fields[5].decode(errors="surrogateescape") or "/"
    except OSError:
        pass
    return "/"


def set_nonblocking(fd):
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)


class Exec:
    def __init__(self, channel, pid, fds, cap):
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
        self.pipes = set()
        for fd in (self.out, self.err):
            self.pipes.add(f"pipe:[{os.fstat(fd).st_ino}]")


class Agent:
    def __init__(self):
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.host = True
        self.retry_at = 0.0
        self.retried = False  # the channel is back on trial after being lost
        self.execs = {}  # channel -> Exec
        self.by_pid = {}
        self.caps = bounding_caps()
        self.permitted = permitted_mask()
        # Empty the bounding set (our own capabilities stay): nothing we start, root
        # included, can gain a capability when it executes a program.
        for cap in self.caps:
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
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
        if self.host:
            self.outbuf += HEADER.pack(len(payload), kind, channel) + payload

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
        for ex in list(self.execs.values()):
            self.kill_tree(ex)

    def retry_host(self):
        """Listen to the channel again: a restore hands the sandbox new pipes. One still closed
        answers EOF (or a broken pipe) at once, and we try again a second later."""
        self.retried = True
        self.host = True
        self.send_json(HELLO, 0, {"v": VERSION, "pid": os.getpid()})

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
        if kind == PING:
            self.send_json(PONG, channel, {"v": VERSION, "token": payload.decode()})
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
            ex.close_in = True
            self.write_stdin(ex)
        elif kind == KILL:
            self.kill_tree(ex)
        elif kind == ACK and len(payload) == 4:
            ex.in_flight = max(0, ex.in_flight - struct.unpack(">I", payload)[0])

    # -- execs ----------------------------------------------------------------------------

    def start(self, channel, req):
        if channel in self.execs:
            raise ValueError(f"channel {channel} in use")
        env = list(req["env"])
        if not any(e.startswith("HOME=") for e in env):
            env.append("HOME=" + home_of(req["uid"]))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if req.get("stdin"):
            in_r, in_w = os.pipe()
        else:
            in_r, in_w = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC), None
        try:
            if self.spawn_ok:
                pid = self.spawn(req, env, in_r, out_w, err_w)
            else:
                pid = os.fork()
                if pid == 0:
                    self.child(req, env, in_r, out_w, err_w)
        except OSError as exc:
            for fd in (out_r, out_w, err_r, err_w, in_r, in_w):
                if fd is not None:
                    os.close(fd)
            message = f"executing command {req['argv'][0]!r} in sandbox: {exc}\n"
            self.send(STDERR, channel, message.encode())
            end = {"code": 128, "signal": None, "out": 0, "err": 0, "ran": 0.0}
            self.send_json(EXIT, channel, end)
            return
        for fd in (out_w, err_w, in_r):
            os.close(fd)
        for fd in (out_r, err_r, in_w):
            if fd is not None:
                set_nonblocking(fd)
        for fd in (out_r, in_w):
            if fd is not None:
                try:
                    fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
                except OSError:
                    pass
        ex = Exec(channel, pid, (out_r, err_r, in_w), req.get("cap"))
        self.execs[channel] = ex
        self.by_pid[pid] = ex
        self.send_json(STARTED, channel, {"pid": pid})

    def spawn(self, req, env, stdin, stdout, stderr):
        """posix_spawn (vfork: no copy of our address space, ~2x faster than fork here)
        under the exec's uid/gid, which we take for the call and give back: the saved uid
        stays 0, so our permitted capabilities survive and come back with it."""
        uid, gid, argv = int(req["uid"]), int(req["gid"]), req["argv"]
        try:
            os.setgroups([gid])
            os.setresgid(gid, gid, 0)
            os.setresuid(uid, uid, 0)
            try:
                os.chdir(req["cwd"])
            except OSError as exc:
                raise OSError(
                    exc.errno, f"failed to find initial working directory {req['cwd']!r}"
                ) from None
            try:
                program = find_program(argv[0], env)
            except OSError as exc:
                raise OSError(exc.errno, f"failed to load {argv[0]}: {exc.strerror}") from None
            return os.posix_spawn(
                program,
                argv,
                dict(e.split("=", 1) for e in env),
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin, 0),
                    (os.POSIX_SPAWN_DUP2, stdout, 1),
                    (os.POSIX_SPAWN_DUP2, stderr, 2),
                ],
                setsid=True,
                setsigdef=self.signals,
            )
        finally:
            os.setresuid(0, 0, 0)
            os.setresgid(0, 0, 0)
            os.setgroups([])
            set_caps(self.permitted)
            os.chdir("/")

    def child(self, req, env, stdin, stdout, stderr):
        """In the forked child: become the exec, or report why not on its stderr (128)."""
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, *(getattr(signal, n) for n in IGNORED)):
                signal.signal(sig, signal.SIG_DFL)
            os.setsid()
            os.dup2(stdin, 0)
            os.dup2(stdout, 1)
            os.dup2(stderr, 2)
            uid, gid = int(req["uid"]), int(req["gid"])
            for cap in self.caps:
                libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
            libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            os.setgroups([gid])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            set_caps(0)
            cwd, argv = req["cwd"], req["argv"]
            try:
                os.chdir(cwd)
            except OSError as exc:
                raise OSError(f"failed to find initial working directory {cwd!r}: {exc}") from None
            environ = dict(e.split("=", 1) for e in env)
            try:
                os.execvpe(argv[0], argv, environ)  # noqa: S606 (the exec itself)
            except OSError as exc:
                raise OSError(f"failed to load {argv[0]}: {exc.strerror or exc}") from None
        except BaseException as exc:
            try:
                message = f"executing command {req['argv'][0]!r} in sandbox: {exc}\n"
                os.write(2, message.encode(errors="replace"))
            finally:
                os._exit(128)

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
        """SIGKILL the exec's process group (looping, so a fork bomb cannot outrun it), then
        every process in its session, parented by it, or holding its output pipes (children
        that escaped with setsid). Other execs and detached daemons are left alone. Returns
        once none is left, zombies included (reaped here, up to KILL_SETTLE_S): until then
        they hold their slots under the pids cap, and the next exec could not start."""
        target = ex.pid
        for _ in range(1000):
            try:
                os.killpg(target, signal.SIGKILL)
            except OSError:
                break
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
        me = os.getpid()
        deadline = time.monotonic() + KILL_SETTLE_S
        while True:
            found = False
            for name in os.listdir("/proc"):
                if not name.isdigit() or int(name) in (1, me):
                    continue
                pid = int(name)
                try:
                    with open(f"/proc/{pid}/stat", "rb") as stat:
                        fields = stat.read().rsplit(b")", 1)[1].split()
                    ppid, pgrp, session = int(fields[1]), int(fields[2]), int(fields[3])
                except (OSError, IndexError, ValueError):
                    continue
                hit = target in (ppid, pgrp, session)
                if not hit and ex.pipes:
                    for fd in (1, 2):
                        try:
                            if os.readlink(f"/proc/{pid}/fd/{fd}") in ex.pipes:
                                hit = True
                        except OSError:
                            pass
                if hit:
                    found = True
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            self.reap()
            if not found or time.monotonic() > deadline:
                break
            time.sleep(0.01)

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
        for ex in self.execs.values():
            if ex.drain_until is not None:
                if self.host and ex.cap is None and ex.in_flight >= OUT_WINDOW:
                    ex.drain_until = now + DRAIN_AFTER_EXIT_S  # a slow reader is no stall
                timeout = min(timeout, max(0.0, ex.drain_until - now))
            if len(self.outbuf) < OUT_WINDOW and (ex.cap is not None or ex.in_flight < OUT_WINDOW):
                for fd in (ex.out, ex.err):
                    if fd is not None:
                        watch[fd] = ex
                        poller.register(fd, select.POLLIN)
            if ex.stdin is not None and ex.pending_in:
                watch[ex.stdin] = ex
                poller.register(ex.stdin, select.POLLOUT)
        try:
            events = poller.poll(timeout * 1000)
        except InterruptedError:
            events = []
        for fd, _mask in events:
            if fd == self.wake_r:
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
        for ex in list(self.execs.values()):
            if ex.status is not None and (
                (ex.out is None and ex.err is None) or now >= ex.drain_until
            ):
                self.finish(ex)
        self.flush()

    def run(self):
        self.send_json(HELLO, 0, {"v": VERSION, "pid": os.getpid()})
        self.flush()
        while True:
            try:
                self.step()
            except Exception as exc:  # PID 1 must stay up: log and go on
                log(f"loop: {exc!r}")
                time.sleep(0.1)


def main():
    libc.prctl(PR_SET_NAME, b"airlock-agent", 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    Agent().run()


if __name__ == "__main__":
    main()
