"""What an exec's start is made of: the request as asked (`ExecStart`), the request as its
record shows it (`Masked`), and from them the start row, its audit event and what the runtime
is asked to run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from service.audit.recorder import AuditContext
from service.execs.masking import SecretValues
from service.execs.recording import Event, ExecRow
from service.execs.schemas import DEFAULT_COLS, DEFAULT_ROWS, ExecCreate
from service.execs.stdin import StdinPipe
from service.ids import new_id
from service.runtime import ExecRequest, TtySize, new_exec_id


@dataclass(frozen=True)
class ExecStart:
    """An exec asked for: by whom, in which sandbox, and the request's own identity (its
    Idempotency-Key and the hash a retry with that key must match)."""

    tenant_id: str
    only_sandbox: str | None  # the sandbox a bound token is limited to
    ctx: AuditContext
    sandbox_id: str
    data: ExecCreate
    idempotency_key: str | None
    request_hash: str

    @property
    def secret_values(self) -> list[str]:
        return list(self.data.secrets.values())


@dataclass(frozen=True)
class Masked:
    """The request as its record and audit event show it: every secret value known to the
    sandbox, this exec's included, written `***`."""

    cmd: list[str]
    cwd: str
    env: dict[str, str]

    @classmethod
    def of(cls, data: ExecCreate, masks: SecretValues) -> Masked:
        return cls(
            cmd=[masks.mask_text(arg) for arg in data.cmd],
            cwd=masks.mask_text(data.cwd),
            env={k: masks.mask_text(v) for k, v in data.env.items()},
        )


def start_row(start: ExecStart, masked: Masked, now: datetime) -> ExecRow:
    """The exec's row as its start writes it: running from `now`."""
    data = start.data
    return ExecRow(
        id=new_id("exe"),
        tenant_id=start.tenant_id,
        sandbox_id=start.sandbox_id,
        state="running",
        cmd=masked.cmd,
        cwd=masked.cwd,
        user=data.user,
        env=masked.env,
        secret_names=sorted(data.secrets),
        timeout_s=data.timeout_s,
        has_stdin=data.stdin is not None or data.stdin_open,
        tty=data.tty,
        stdout_bytes=0,
        stderr_bytes=0,
        stdout_truncated=False,
        stderr_truncated=False,
        idempotency_key=start.idempotency_key,
        request_hash=start.request_hash,
        created_at=now,
        started_at=now,
        runtime_exec_id=new_exec_id(),
    )


def start_event(start: ExecStart, row: ExecRow) -> Event:
    """The audit event written with the start row."""
    data = start.data
    return Event(
        start.ctx,
        chain=start.tenant_id,
        action="exec.start",
        target=row.id,
        outcome="started",
        details={
            "sandbox_id": start.sandbox_id,
            "cmd": row.cmd,
            "cwd": row.cwd,
            "user": data.user,
            "env_names": sorted(data.env),
            "secret_names": sorted(data.secrets),
            "timeout_s": data.timeout_s,
            "tty": data.tty,
        },
    )


def runtime_request(
    data: ExecCreate, row: ExecRow, sandbox_env: dict[str, str] | None, pipe: StdinPipe | None
) -> ExecRequest:
    """What the runtime runs: the request unmasked, under the id the start row recorded."""
    first_stdin = data.stdin.encode() if data.stdin is not None else None
    return ExecRequest(
        argv=list(data.cmd),
        cwd=data.cwd,
        # The sandbox's own env under the request's: a sandbox claimed from the warm pool
        # was started before its tenant's env was known, so the runtime does not have it.
        env={**(sandbox_env or {}), **data.env, **data.secrets},
        stdin=pipe.chunks() if pipe is not None else first_stdin,
        user=data.user,
        timeout_s=data.timeout_s,
        output_cap=data.max_output_bytes,
        exec_id=row.runtime_exec_id,
        tty=TtySize(rows=data.rows or DEFAULT_ROWS, cols=data.cols or DEFAULT_COLS)
        if data.tty
        else None,
    )


def stdin_pipe(data: ExecCreate) -> StdinPipe | None:
    """Where more stdin is written, for an exec started with `stdin_open` (its first chunk
    `stdin`, if any)."""
    if not data.stdin_open:
        return None
    return StdinPipe(data.stdin.encode() if data.stdin is not None else None)
