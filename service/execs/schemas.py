from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from service.sandboxes.schemas import EnvName, EnvValue

Arg = Annotated[str, Meta(max_length=65_536)]
SecretValue = Annotated[str, Meta(min_length=4, max_length=65_536)]
# A numeric uid[:gid]: the image's names are not resolved before the process starts.
User = Annotated[str, Meta(pattern=r"^[0-9]{1,10}(:[0-9]{1,10})?$")]
ExecState = Literal["running", "finished", "interrupted", "failed"]

MAX_OUTPUT_BYTES = 8 << 20
DEFAULT_OUTPUT_BYTES = 1 << 20
MAX_STDIN_CHARS = 16 << 20
# The JSON body of an exec: room for the largest stdin and the rest of the request.
BODY_LIMIT = MAX_STDIN_CHARS + (2 << 20)
Rows = Annotated[int, Meta(ge=1, le=1000, description="Lines of the terminal's window")]
Cols = Annotated[int, Meta(ge=1, le=1000, description="Columns of the terminal's window")]
DEFAULT_ROWS, DEFAULT_COLS = 24, 80


class ExecCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One command. `secrets` reach the process as environment variables only and are masked
    in the output of every exec of the sandbox, for the sandbox's life; they are never
    stored."""

    cmd: Annotated[list[Arg], Meta(min_length=1, max_length=4096)]
    cwd: Annotated[str, Meta(min_length=1, max_length=1024, pattern=r"^/")] = "/work"
    env: Annotated[dict[EnvName, EnvValue], Meta(max_length=128)] = msgspec.field(
        default_factory=dict
    )
    secrets: Annotated[dict[EnvName, SecretValue], Meta(max_length=64)] = msgspec.field(
        default_factory=dict
    )
    stdin: Annotated[str, Meta(max_length=MAX_STDIN_CHARS)] | None = None
    timeout_s: Annotated[float, Meta(gt=0, le=86_400)] = 60.0
    user: User | None = None
    wait: bool = True
    max_output_bytes: Annotated[int, Meta(ge=1, le=MAX_OUTPUT_BYTES)] = DEFAULT_OUTPUT_BYTES
    # Keep stdin open after `stdin` (if any): `POST …/execs/{id}/stdin` writes more and closes it.
    stdin_open: bool = False
    # Run under a pseudo-terminal: it is the process's stdin, stdout and stderr (so stderr
    # arrives in `stdout`) and its controlling terminal; `POST …/execs/{id}/resize` resizes it.
    tty: bool = False
    # The terminal's first window (24 x 80 unless given); only with `tty`.
    rows: Rows | None = None
    cols: Cols | None = None

    # A size without a terminal is refused (422), as the schema says.
    schema_rules: ClassVar[dict[str, Any]] = {
        "if": {"not": {"properties": {"tty": {"const": True}}, "required": ["tty"]}},
        "then": {"properties": {"rows": {"type": "null"}, "cols": {"type": "null"}}},
    }

    def __post_init__(self) -> None:
        if not self.tty and (self.rows is not None or self.cols is not None):
            raise ValueError("`rows` and `cols` size a terminal: they need `tty: true`")


class TerminalSize(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A terminal's window, in characters."""

    rows: Rows
    cols: Cols


class StdinWritten(msgspec.Struct, kw_only=True):
    written: int
    closed: bool


class Exec(msgspec.Struct, kw_only=True):
    id: str
    sandbox_id: str
    state: ExecState
    cmd: list[str]
    cwd: str
    user: str | None
    env: dict[str, str]
    secret_names: list[str]
    timeout_s: float
    exit_code: int | None
    outcome: str | None
    stdout: str | None
    stderr: str | None
    # The output was deleted (older than the tenant's output_retention_days, or the oldest
    # past its max_stored_output_mib): `stdout` and `stderr` are empty, the record stays.
    output_purged: bool = False
    stdout_bytes: int
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    # It ran under a pseudo-terminal: its stderr is in `stdout`.
    tty: bool = False


class ExecSummary(msgspec.Struct, kw_only=True):
    """An entry of the exec history: no output, argv with secrets masked."""

    id: str
    sandbox_id: str
    state: ExecState
    cmd: list[str]
    exit_code: int | None
    outcome: str | None
    stdout_bytes: int
    stderr_bytes: int
    duration_ms: int | None
    created_at: datetime
    finished_at: datetime | None
    output_purged: bool = False


class ExecPage(msgspec.Struct, kw_only=True):
    items: list[ExecSummary]
    next_cursor: str | None
