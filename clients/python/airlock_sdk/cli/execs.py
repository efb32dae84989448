"""`sbx exec`: a command in a sandbox, its output streamed (its stdin fed from a pipe or a file),
its exit code returned; `sbx output`: a past command's stored output and exit."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import click

from airlock_client.models import Exec

from .. import errors
from ..sandbox import Sandbox
from .base import Context, context_of, json_option, main, pairs

# How `sbx exec` exits when the command did not exit by itself (as timeout(1) and shells do).
OUTCOME_EXIT = {"timeout": 124, "killed": 137, "oom": 137, "failed": 125}
# What the service keeps of each of stdout and stderr unless asked, and the most it keeps.
DEFAULT_OUTPUT_BYTES, MAX_OUTPUT_BYTES = 1 << 20, 8 << 20
# One write to the exec's stdin: under the 1 MiB the service takes at once.
STDIN_CHUNK = 256 << 10
CUT_HINT = (
    "--max-output-bytes keeps up to 8 MiB of each stream; for more, write it to a file in the "
    "sandbox and copy that out with `sbx cp`"
)


@main.command(name="exec", context_settings={"ignore_unknown_options": True})
@click.argument("sandbox_id")
@click.option("--timeout", type=float, help="Seconds before the command's tree is killed (default 60).")
@click.option("--env", "env", multiple=True, help="NAME=VALUE (repeatable).")
@click.option("--secret", "secrets", multiple=True, help="NAME=VALUE, never stored, masked in output (repeatable).")
@click.option("--cwd", help="Working directory (default /work).")
@click.option("--user", help="uid[:gid] to run as.")
@click.option(
    "--max-output-bytes",
    type=click.IntRange(1, MAX_OUTPUT_BYTES),
    default=DEFAULT_OUTPUT_BYTES,
    show_default=True,
    help="How much of stdout, and of stderr, is kept (at most 8 MiB); past it the output is cut.",
)
@json_option
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def exec_(
    ctx: click.Context,
    sandbox_id: str,
    timeout: float | None,
    env: tuple[str, ...],
    secrets: tuple[str, ...],
    cwd: str | None,
    user: str | None,
    max_output_bytes: int,
    as_json: bool,
    cmd: tuple[str, ...],
) -> None:
    """Run CMD in a sandbox, streaming its output; exits with the command's exit code. A pipe or
    a file on stdin is the command's stdin (a terminal is not read)."""
    c = context_of(ctx, as_json)
    stdin_fd = piped_stdin()
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        exec_id = sandbox.start(
            list(cmd),
            timeout=timeout,
            env=pairs(env, "--env"),
            secrets=pairs(secrets, "--secret"),
            cwd=cwd,
            user=user,
            stdin_open=stdin_fd is not None,
            max_output_bytes=max_output_bytes,
        )
        feeder = StdinFeeder(sandbox, exec_id, stdin_fd) if stdin_fd is not None else None
        try:
            end = follow(c, sandbox, exec_id)
        finally:
            if feeder is not None:
                feeder.ended.set()
        record = functools.cache(lambda: sandbox.exec_record(exec_id))
        code = report_end(c, end, record, kept=max_output_bytes)
    sys.exit(code)


@main.command()
@click.argument("sandbox_id")
@click.argument("exec_id")
@json_option
@click.pass_context
def output(ctx: click.Context, sandbox_id: str, exec_id: str, as_json: bool) -> None:
    """Print a past command's stored stdout and stderr; exits with its exit code, as `sbx exec`
    did. The ids are in `sbx history SANDBOX_ID`."""
    c = context_of(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        record = sandbox.exec_record(exec_id)
    end = record.to_dict()
    if c.as_json:
        c.emit(end)
    else:
        sys.stdout.write(end.get("stdout") or "")
        sys.stdout.flush()
        sys.stderr.write(end.get("stderr") or "")
        sys.stderr.flush()
    if end.get("output_purged") and not c.as_json:
        click.echo("sbx: the output of this command is no longer stored (past the tenant's retention)", err=True)
    if end.get("state") == "running":
        if not c.as_json:
            click.echo("sbx: the command is still running; this is its output so far", err=True)
        sys.exit(0)
    sys.exit(report_end(c, end, lambda: record, kept=None))


def follow(c: Context, sandbox: Sandbox, exec_id: str) -> dict[str, Any]:
    """Show an exec's events as they come; returns its `exit` event."""
    end: dict[str, Any] = {}
    for event in sandbox.events(exec_id):
        if c.as_json:
            body = {"text": event.text} if event.kind != "exit" else event.exit
            c.emit({"event": event.kind, "exec_id": exec_id, **body})
        elif event.kind == "stdout":
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif event.kind == "stderr":
            sys.stderr.write(event.text)
            sys.stderr.flush()
        if event.kind == "exit":
            end = event.exit
    return end


def report_end(c: Context, end: Mapping[str, Any], record: Callable[[], Exec], kept: int | None) -> int:
    """Say on stderr what a user would otherwise miss (output cut, an end other than an exit);
    returns the status `sbx` exits with. `kept`: the output limit the exec was given."""
    if not c.as_json:
        for stream in ("stdout", "stderr"):
            if end.get(f"{stream}_truncated"):
                click.echo(f"sbx: {cut_note(stream, record(), kept)}", err=True)
    outcome = end.get("outcome")
    code = end.get("exit_code")
    if outcome == "exited" and isinstance(code, int):
        return code
    if not c.as_json:
        click.echo(f"sbx: {why_it_ended(end, record)}", err=True)
    return OUTCOME_EXIT.get(str(outcome), 125)


def cut_note(stream: str, record: Exec, kept: int | None) -> str:
    text = getattr(record, stream)
    if kept is None:  # the limit is not in the record: what was stored tells it
        kept = len(text.encode()) if isinstance(text, str) else 0
    wrote = getattr(record, f"{stream}_bytes")
    return f"{stream} was cut at {size(kept)} (the command wrote {size(wrote)}); {CUT_HINT}"


def why_it_ended(end: Mapping[str, Any], record: Callable[[], Exec]) -> str:
    outcome, error = end.get("outcome"), end.get("error")
    if outcome == "timeout":
        return f"the command timed out after {record().timeout_s:g} s and was killed (--timeout sets the limit)"
    if outcome == "killed":
        return f"the command was killed{f': {error}' if error else ''}"
    if outcome == "oom":
        return "the command ran out of memory and was killed (a larger sandbox, `sbx new --type large`, has more)"
    if outcome == "failed":
        return f"the command could not run: {error or 'no reason given'}"
    if end.get("state") == "interrupted":
        return f"the command was interrupted{f': {error}' if error else ''}"
    return f"the command ended without an exit code ({outcome or end.get('state')}){f': {error}' if error else ''}"


def size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


def piped_stdin() -> int | None:
    """The descriptor of stdin when it is a pipe or a file; None for a terminal (a user who may
    never type anything) or no stdin at all."""
    try:
        fd = sys.stdin.fileno()
        os.fstat(fd)
    except (AttributeError, OSError, ValueError):
        return None
    return None if os.isatty(fd) else fd


class StdinFeeder(threading.Thread):
    """Sends what arrives on a descriptor to a running exec's stdin, and closes it at EOF. It
    reads the raw descriptor (not `sys.stdin`): a read still blocked when `sbx` exits holds no
    lock the interpreter's shutdown waits for."""

    def __init__(self, sandbox: Sandbox, exec_id: str, fd: int) -> None:
        super().__init__(name="sbx-stdin", daemon=True)
        self.sandbox, self.exec_id, self.fd = sandbox, exec_id, fd
        self.ended = threading.Event()  # the exec has ended: what fails from now on is moot
        self.start()

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, STDIN_CHUNK):
                self.write(chunk)
            self.write(b"", close=True)
        except errors.Conflict:
            pass  # the command ended or closed its stdin before reading it all, as in `yes | head`
        except Exception as exc:  # a thread's error would otherwise be a traceback
            if not self.ended.is_set():
                click.echo(f"sbx: stdin could not be sent: {exc}", err=True)

    def write(self, data: bytes, close: bool = False) -> None:
        while True:
            try:
                self.sandbox.write_stdin(self.exec_id, data, close=close)
                return
            except errors.QuotaExceeded as exc:  # stdin_full, rate_limited: nothing was taken
                if self.ended.is_set():
                    return
                time.sleep(exc.retry_after or 1.0)
