"""Becoming an exec: its program on its PATH, its user, no capabilities, its own session."""

import ctypes
import errno
import os
import signal

import terminal
from wire import IGNORED

PR_SET_DUMPABLE, PR_SET_NAME, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 15, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4

libc = ctypes.CDLL(None, use_errno=True)


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


def spawn(req, env, stdin, stdout, stderr, signals, permitted):
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
            setsigdef=signals,
        )
    finally:
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)
        os.setgroups([])
        set_caps(permitted)
        os.chdir("/")


def child(req, env, stdin, stdout, stderr, caps, tty=False):
    """In the forked child: become the exec, or report why not on its stderr (128). With
    `tty`, stdin is a terminal that becomes the new session's controlling terminal."""
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, *(getattr(signal, n) for n in IGNORED)):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()
        if tty:
            terminal.take(stdin)
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        uid, gid = int(req["uid"]), int(req["gid"])
        for cap in caps:
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
