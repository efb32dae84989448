"""The interpreter of one execution context, run inside a sandbox as `python3 -c <this file>`.

It reads requests, one JSON object a line, on its stdin: `{"run": id, "code": source,
"timeout_s": seconds}`, and answers on its stdout with JSON lines, each with the `run` it
belongs to and a `type`:

- `ready` (once, run null): the kernel is up (its pid and Python version);
- `stdout` / `stderr`: text the code wrote, as it wrote it (a process it started included);
- `result`: a value to show, by MIME type: the last expression's (`text/plain` always, and
  `image/png`, `application/json`, `text/html`, `image/svg+xml`, `text/markdown` when the
  value offers them through `_repr_png_` and the like), and each open matplotlib figure;
- `error`: the exception that ended the run (`name`, `value`, `traceback` lines without this
  file's frames);
- `done`: the run is over (`ok`, `timed_out`, `count`: the runs so far, `duration_ms`).

Globals are kept from one run to the next. A run's deadline raises `RunTimeout` in its code
(a BaseException, as KeyboardInterrupt is, so `except Exception` does not swallow it); the
context goes on. What the code writes to fds 1 and 2 goes through a pipe this kernel reads and
frames, so the protocol's own stream carries nothing else; the code's stdin is empty.

Standard library only: it runs on whatever Python the sandbox's image has.
"""

import ast
import base64
import codecs
import io
import json
import linecache
import os
import select
import signal
import sys
import threading
import time
import traceback

SYNC = b"\x00\x1eairlock-sync\x1e\x00"
READ_SIZE = 65536
SYNC_WAIT_S = 5.0  # the code closed or took over fd 1 or 2: its output is not waited for
MIME_REPRS = (
    ("image/png", "_repr_png_"),
    ("image/svg+xml", "_repr_svg_"),
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("application/json", "_repr_json_"),
)


class RunTimeout(BaseException):
    """The run's deadline passed."""


class Frames:
    """The protocol's stream: one JSON object a line, written whole under a lock."""

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()

    def send(self, run, kind, **fields):
        self.write(self.line(run, kind, **fields))

    def line(self, run, kind, **fields):
        line = json.dumps({"run": run, "type": kind, **fields}, default=repr) + "\n"
        return line.encode("utf-8", "backslashreplace")

    def write(self, data):
        with self.lock:
            while data:
                data = data[os.write(self.fd, data) :]


class Pump(threading.Thread):
    """Reads what the code writes to fds 1 and 2 and sends it as `stdout`/`stderr` frames of
    the current run; `sync` returns once everything written before it has been sent."""

    def __init__(self, frames, streams):
        super().__init__(daemon=True)
        self.frames = frames
        self.streams = streams  # read fd -> name
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd in streams}
        self.held = {fd: b"" for fd in streams}
        self.synced = {fd: threading.Event() for fd in streams}
        self.run_id = None
        self.lock = threading.Lock()

    def run(self):
        while True:
            select.select(list(self.streams), [], [])
            with self.lock:
                self.drain()

    def drain(self):
        """Send what is waiting in the pipes (under the lock)."""
        ready, _, _ = select.select(list(self.streams), [], [], 0)
        for fd in ready:
            chunk = os.read(fd, READ_SIZE)
            if chunk:
                self.take(fd, self.held[fd] + chunk)
        return ready

    def take(self, fd, data):
        at = data.find(SYNC)
        while at >= 0:
            self.emit(fd, data[:at], final=True)
            self.synced[fd].set()
            data = data[at + len(SYNC) :]
            at = data.find(SYNC)
        keep = _partial_marker(data)
        self.held[fd] = data[len(data) - keep :] if keep else b""
        self.emit(fd, data[: len(data) - keep])

    def emit(self, fd, data, final=False):
        text = self.decoders[fd].decode(data, final)
        if text:
            self.frames.send(self.run_id, self.streams[fd], text=text)

    def sync(self, write_fds):
        """Once everything written to the pipes so far is sent: at once when they are empty
        (a write to a pipe is in it when the write returns), else by a marker written behind
        it, which the pump sees after the rest."""
        with self.lock:
            if not self.drain() and not any(self.held.values()):
                return
        for event in self.synced.values():
            event.clear()
        for fd in write_fds:
            os.write(fd, SYNC)
        for event in self.synced.values():
            event.wait(SYNC_WAIT_S)


def _partial_marker(data):
    """How many bytes at the end of `data` may be the start of a marker still arriving."""
    for size in range(min(len(SYNC) - 1, len(data)), 0, -1):
        if SYNC.startswith(data[-size:]):
            return size
    return 0


def display_data(value):
    """A value's representations by MIME type."""
    data = {"text/plain": repr(value)}
    for mime, method in MIME_REPRS:
        show = getattr(value, method, None)
        if not callable(show) or isinstance(value, type):
            continue
        try:
            shown = show()
        except Exception:  # noqa: S112 (a broken _repr_ never ends the run)
            continue
        if shown is None:
            continue
        if isinstance(shown, tuple):  # (data, metadata)
            shown = shown[0]
        if mime == "image/png" and isinstance(shown, bytes):
            shown = base64.b64encode(shown).decode()
        data[mime] = shown
    return data


def figures():
    """Each open matplotlib figure as PNG (closed once sent), when pyplot has been imported."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    shown = []
    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        shown.append(
            {
                "text/plain": repr(figure),
                "image/png": base64.b64encode(buffer.getvalue()).decode(),
            }
        )
    pyplot.close("all")
    return shown


def cell_traceback(exc, cell_names):
    """The exception's traceback in the code's own frames only: this file's are the
    kernel's, not the user's (a syntax error has none but its own lines)."""
    shown = traceback.TracebackException.from_exception(exc)
    shown.stack = traceback.StackSummary.from_list(
        [frame for frame in shown.stack if frame.filename in cell_names]
    )
    return list(shown.format())


class Kernel:
    def __init__(self, frames, pump, namespace):
        self.frames = frames
        self.pump = pump
        self.namespace = namespace
        self.count = 0
        self.cells = set()
        self.running = False

    def on_deadline(self, signum, frame):
        # The timer is left armed after a run (a system call saved on each): when it goes off
        # between runs, nothing is interrupted; the next run arms it again.
        if self.running:
            raise RunTimeout("the run's deadline passed")

    def execute(self, run, code, timeout_s):
        self.count += 1
        name = f"<cell {self.count}>"
        self.cells.add(name)
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        started = time.monotonic()
        self.pump.run_id = run
        ok, timed_out = True, False
        # The results and the error go out with `done`, after what the code printed, in one
        # write: one message out of the sandbox for the whole answer of a quiet run.
        shown = []
        try:
            # Armed for every run (without a deadline, disarmed): a timer an earlier run left
            # never goes off in this one.
            signal.setitimer(signal.ITIMER_REAL, float(timeout_s or 0))
            self.running = True
            try:
                value = self.evaluate(code, name)
            finally:
                self.running = False
            if value is not None:
                self.namespace["_"] = value
                shown.append(self.frames.line(run, "result", data=display_data(value)))
            for data in figures():
                shown.append(self.frames.line(run, "result", data=data))
        except BaseException as exc:  # the code's failure, reported; the context goes on
            ok = False
            timed_out = isinstance(exc, RunTimeout)
            error = {
                "name": "TimeoutError" if timed_out else type(exc).__name__,
                "value": str(exc),
                "traceback": cell_traceback(exc, self.cells),
            }
            shown.append(self.frames.line(run, "error", **error))
        self.flush()
        took = round((time.monotonic() - started) * 1000, 3)
        done = {"ok": ok, "timed_out": timed_out, "count": self.count, "duration_ms": took}
        shown.append(self.frames.line(run, "done", **done))
        self.pump.run_id = None
        self.frames.write(b"".join(shown))

    def evaluate(self, code, name):
        tree = ast.parse(code, name, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), self.namespace)  # noqa: S102 (the code to run)
        if last is None:
            return None
        return eval(compile(last, name, "eval"), self.namespace)  # noqa: S307

    def flush(self):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: S110 (the code closed or replaced it)
                pass
        self.pump.sync((1, 2))


def main():
    frames = Frames(os.dup(1))
    requests = os.fdopen(os.dup(0), "rb")
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    streams = {}
    for fd, stream in ((1, "stdout"), (2, "stderr")):
        read, write = os.pipe()
        os.dup2(write, fd)
        os.close(write)
        streams[read] = stream
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    os.environ.setdefault("MPLBACKEND", "Agg")
    pump = Pump(frames, streams)
    pump.start()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    kernel = Kernel(frames, pump, namespace)
    signal.signal(signal.SIGALRM, kernel.on_deadline)
    frames.send(None, "ready", pid=os.getpid(), python=sys.version.split()[0])
    for line in requests:
        try:
            request = json.loads(line)
            run, code = request["run"], request["code"]
        except (ValueError, KeyError, TypeError) as exc:
            frames.send(None, "refused", value=f"not a request: {exc}")
            continue
        kernel.execute(run, code, request.get("timeout_s"))


if __name__ == "__main__":
    main()
