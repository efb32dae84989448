"""What the sync and async sandboxes share: the connection, request bodies, results, retries,
server-sent events and tar archives. Nothing here does I/O on the network itself."""

from __future__ import annotations

import json
import os
import shlex
import tarfile
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from airlock_client import AuthenticatedClient
from airlock_client.models import (
    ContextCreate,
    ContextCreateEnv,
    Exec,
    ExecCreate,
    ExecCreateEnv,
    ExecCreateSecrets,
    Run,
    RunCreate,
    SandboxCreate,
    SandboxFork,
)
from airlock_client.models.sandbox_create_env import SandboxCreateEnv
from airlock_client.models.sandbox_create_labels import SandboxCreateLabels
from airlock_client.models.sandbox_fork_labels_type_0 import SandboxForkLabelsType0
from airlock_client.models.sandbox_network import SandboxNetwork
from airlock_client.types import UNSET

from . import errors
from .config import Config
from .errors import unwrap  # noqa: F401 (what the SDK's calls use)

T = TypeVar("T")

# A create or an exec is sent again (with the same Idempotency-Key, so it happens once) when the
# connection failed before an answer came: this many tries in all, this far apart.
ATTEMPTS = 3
BACKOFF_S = (0.2, 0.5, 1.0)
# The longest a call waits on one `rate_limited` answer before sending it again.
MAX_RATE_WAIT_S = 30.0


def rate_wait(exc: errors.RateLimited) -> float:
    """How long to wait before sending again a call refused for its rate."""
    return min(MAX_RATE_WAIT_S, exc.retry_after if exc.retry_after is not None else 1.0)


def client_for(config: Config, timeout: float | None) -> AuthenticatedClient:
    return AuthenticatedClient(
        base_url=config.url,
        token=config.api_key,
        timeout=httpx.Timeout(timeout, connect=10.0),
        raise_on_unexpected_status=False,
    )


def new_key() -> str:
    return f"sdk-{uuid.uuid4().hex}"


def argv(cmd: str | Sequence[str]) -> list[str]:
    """A string runs through `sh -c` (pipes, globs and `&&` work); a list runs as it is."""
    if isinstance(cmd, str):
        return ["sh", "-c", cmd]
    return [str(part) for part in cmd]


def sandbox_body(
    *,
    template: str | None,
    size: str | None,
    ttl: int | None,
    network: str | Mapping[str, Any] | None,
    env: Mapping[str, str] | None,
    labels: Mapping[str, str] | None,
    image: str | None,
) -> SandboxCreate:
    body = SandboxCreate()
    if template is not None:
        body.template = template
    if size is not None:
        body.size = size  # type: ignore[assignment]
    if ttl is not None:
        body.ttl_s = ttl
    if image is not None:
        body.image = image
    if env:
        body.env = SandboxCreateEnv.from_dict(dict(env))
    if labels:
        body.labels = SandboxCreateLabels.from_dict(dict(labels))
    if network is not None:
        policy = {"mode": network} if isinstance(network, str) else dict(network)
        body.network = SandboxNetwork.from_dict(policy)
    return body


def fork_body(ttl: int | None, labels: Mapping[str, str] | None) -> SandboxFork:
    body = SandboxFork()
    if ttl is not None:
        body.ttl_s = ttl
    if labels is not None:
        body.labels = SandboxForkLabelsType0.from_dict(dict(labels))
    return body


def exec_body(
    cmd: str | Sequence[str],
    *,
    timeout: float | None,
    env: Mapping[str, str] | None,
    secrets: Mapping[str, str] | None,
    cwd: str | None,
    user: str | None,
    stdin: str | None,
    wait: bool,
    stdin_open: bool = False,
    tty: bool = False,
    rows: int | None = None,
    cols: int | None = None,
    max_output_bytes: int | None = None,
) -> ExecCreate:
    body = ExecCreate(cmd=argv(cmd), wait=wait)
    if max_output_bytes is not None:
        body.max_output_bytes = max_output_bytes
    if stdin_open:
        body.stdin_open = True
    if tty:
        body.tty = True
    if rows is not None:
        body.rows = rows
    if cols is not None:
        body.cols = cols
    if timeout is not None:
        body.timeout_s = timeout
    if env:
        body.env = ExecCreateEnv.from_dict(dict(env))
    if secrets:
        body.secrets = ExecCreateSecrets.from_dict(dict(secrets))
    if cwd is not None:
        body.cwd = cwd
    if user is not None:
        body.user = user
    if stdin is not None:
        body.stdin = stdin
    return body


def _value(value: Any) -> Any:
    return None if value is UNSET else value


@dataclass
class ExecResult:
    """A finished command: a non-zero exit is data here, never an exception."""

    id: str
    exit_code: int | None
    outcome: str | None  # exited, timeout, oom, killed, failed
    stdout: str
    stderr: str
    duration_ms: int | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "exited" and self.exit_code == 0

    @classmethod
    def from_exec(cls, done: Exec) -> ExecResult:
        return cls(
            id=done.id,
            exit_code=_value(done.exit_code),
            outcome=_value(done.outcome),
            stdout=_value(done.stdout) or "",
            stderr=_value(done.stderr) or "",
            duration_ms=_value(done.duration_ms),
            stdout_truncated=bool(_value(done.stdout_truncated)),
            stderr_truncated=bool(_value(done.stderr_truncated)),
            error=_value(done.error),
        )


@dataclass
class CodeError:
    """The exception that ended a run of code: its type's name, its message and its traceback
    (the lines of the code's own frames)."""

    name: str
    value: str
    traceback: list[str]

    def __str__(self) -> str:
        return "".join(self.traceback) or f"{self.name}: {self.value}"


@dataclass
class CodeRun:
    """One run of code in an execution context: what it printed, its results by MIME type (the
    last expression's value, each matplotlib figure: `image/png` as base64), and the exception
    that ended it. `context_lost`: the interpreter was killed (the code overran its deadline by
    5 s) and the context with it."""

    context_id: str
    ok: bool
    stdout: str
    stderr: str
    results: list[dict[str, Any]]
    error: CodeError | None
    execution_count: int | None
    timed_out: bool
    context_lost: bool
    duration_ms: float

    @property
    def text(self) -> str | None:
        """The last result's `text/plain` (the value's repr), if the run had a result."""
        for data in reversed(self.results):
            if "text/plain" in data:
                return str(data["text/plain"])
        return None

    @classmethod
    def from_run(cls, run: Run) -> CodeRun:
        raw = run.to_dict()
        error = raw.get("error")
        return cls(
            context_id=raw["context_id"],
            ok=bool(raw["ok"]),
            stdout=raw["stdout"],
            stderr=raw["stderr"],
            results=[dict(result["data"]) for result in raw["results"]],
            error=CodeError(error["name"], error["value"], list(error["traceback"])) if error else None,
            execution_count=raw.get("execution_count"),
            timed_out=bool(raw["timed_out"]),
            context_lost=bool(raw["context_lost"]),
            duration_ms=float(raw["duration_ms"]),
        )


def context_body(cwd: str | None, env: Mapping[str, str] | None, user: str | None) -> ContextCreate:
    body = ContextCreate()
    if cwd is not None:
        body.cwd = cwd
    if env:
        body.env = ContextCreateEnv.from_dict(dict(env))
    if user is not None:
        body.user = user
    return body


def run_body(code: str, timeout: float | None) -> RunCreate:
    body = RunCreate(code=code)
    if timeout is not None:
        body.timeout_s = timeout
    return body


@dataclass
class OutputEvent:
    """One event of a running exec: `stdout` or `stderr` text, then one `exit`."""

    kind: str
    text: str = ""
    exit: dict[str, Any] = field(default_factory=dict)


class EventCursor:
    """Where a stream of an exec's events has got to, so a dropped connection resumes after the
    last event it delivered (Last-Event-ID), never repeating or losing output."""

    def __init__(self, sandbox_id: str, exec_id: str) -> None:
        self.url = f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}/events"
        self.last_id: str | None = None
        # Drops in a row: a resumed stream that delivers an event starts the count again, so
        # only a stream that cannot be resumed at all gives up.
        self.drops = 0

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.last_id is not None:
            headers["Last-Event-ID"] = self.last_id
        return headers

    def take(self, event: str, data: str, event_id: str | None) -> OutputEvent | None:
        """The event to hand on (None for ones a reader does not see)."""
        if event_id:
            self.last_id = event_id
        if event in ("stdout", "stderr", "exit"):
            self.drops = 0
        if event in ("stdout", "stderr"):
            return OutputEvent(event, text=json.loads(data).get("text", ""))
        if event == "exit":
            return OutputEvent("exit", exit=json.loads(data))
        if event == "unauthenticated":
            detail = json.loads(data).get("detail", "the credential is no longer valid")
            raise errors.Unauthenticated(detail, status=401)
        return None

    def dropped(self, exc: Exception) -> None:
        self.drops += 1
        if self.drops >= ATTEMPTS:
            raise errors.TransportError(f"the event stream broke off {self.drops} times: {exc}") from exc


def result_of(exec_id: str, events: Sequence[OutputEvent]) -> ExecResult:
    out = "".join(e.text for e in events if e.kind == "stdout")
    err = "".join(e.text for e in events if e.kind == "stderr")
    end = next((e.exit for e in events if e.kind == "exit"), {})
    return ExecResult(
        id=exec_id,
        exit_code=end.get("exit_code"),
        outcome=end.get("outcome"),
        stdout=out,
        stderr=err,
        duration_ms=end.get("duration_ms"),
        stdout_truncated=bool(end.get("stdout_truncated")),
        stderr_truncated=bool(end.get("stderr_truncated")),
        error=end.get("error"),
    )


def pack(local_dir: str | os.PathLike[str]) -> Path:
    """A tar of `local_dir`'s content (members relative to it) in a temporary file."""
    root = Path(local_dir)
    if not root.is_dir():
        raise NotADirectoryError(str(root))
    handle, name = tempfile.mkstemp(prefix="airlock-", suffix=".tar")
    os.close(handle)
    with tarfile.open(name, "w") as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name)
    return Path(name)


def unpack(tar_path: Path, local_dir: str | os.PathLike[str]) -> None:
    """Unpack an archive the service sent; members that would leave `local_dir`, links out of it
    and devices are refused (tarfile's `data` filter)."""
    target = Path(local_dir)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tar_path, "r") as tar:
        tar.extractall(target, filter="data")


def remote_path(path: str) -> str:
    """An API file path: absolute inside the sandbox, or relative to /work."""
    return path if path.startswith("/") else f"/work/{path}"


def read_params(max_bytes: int | None) -> dict[str, int] | None:
    return {"max_bytes": max_bytes} if max_bytes is not None else None


def file_url(sandbox_id: str, path: str) -> str:
    return f"/v1/sandboxes/{quote(sandbox_id, safe='')}/files/{quote(remote_path(path), safe='')}"


def shell_join(cmd: Sequence[str]) -> str:
    return shlex.join(cmd)


def pack_target() -> Path:
    """An empty temporary file for an archive on its way in."""
    handle, name = tempfile.mkstemp(prefix="airlock-", suffix=".tar")
    os.close(handle)
    return Path(name)


def stdin_request(sandbox_id: str, exec_id: str, data: bytes | str, close: bool) -> dict[str, Any]:
    """The request that writes to a running exec's stdin (never sent twice: a write that may
    have arrived is not repeated)."""
    return {
        "url": f"/v1/sandboxes/{quote(sandbox_id, safe='')}/execs/{quote(exec_id, safe='')}/stdin",
        "content": data.encode() if isinstance(data, str) else data,
        "params": {"close": "true"} if close else None,
        "headers": {"Content-Type": "application/octet-stream"},
    }
