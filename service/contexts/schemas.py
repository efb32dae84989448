from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from service.execs.schemas import User
from service.sandboxes.schemas import EnvName, EnvValue

MAX_CODE_CHARS = 1 << 20
# The most bytes one character of `code` can take in JSON: an escape is 6 bytes (`\uXXXX`),
# and a character outside the Basic Multilingual Plane is two of them (a surrogate pair), while
# MAX_CODE_CHARS counts it once.
MAX_JSON_CHAR_BYTES = 2 * len("\\uXXXX")
# The JSON body of a run: the longest code with its every character escaped, and room for the
# rest of the request (`timeout_s`, the keys, whitespace).
RUN_BODY_LIMIT = MAX_JSON_CHAR_BYTES * MAX_CODE_CHARS + (64 << 10)
ContextState = Literal["ready", "busy", "gone"]


class ContextCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A Python interpreter in the sandbox, kept between runs: it runs as an exec would (the
    sandbox's user unless `user`, its environment with `env` added, in `cwd`)."""

    language: Literal["python"] = "python"
    cwd: Annotated[str, Meta(min_length=1, max_length=1024, pattern=r"^/")] = "/work"
    env: Annotated[dict[EnvName, EnvValue], Meta(max_length=128)] = msgspec.field(
        default_factory=dict
    )
    user: User | None = None


class Context(msgspec.Struct, kw_only=True):
    id: str
    sandbox_id: str
    language: Literal["python"]
    state: ContextState
    created_at: datetime
    runs: int
    # The interpreter's version, as it reported it when it started.
    python: str | None = None
    # Why a context in state `gone` ended (its interpreter exited or was killed).
    gone_reason: str | None = None


class ContextList(msgspec.Struct, kw_only=True):
    items: list[Context]


class RunCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Code to run in the context. Its deadline interrupts the code (a `TimeoutError` in the
    answer) and the context goes on; code that does not stop within 5 s more (a long call
    that does not let Python's signal handlers run) ends the context with it."""

    code: Annotated[str, Meta(max_length=MAX_CODE_CHARS)]
    timeout_s: Annotated[float, Meta(gt=0, le=86_400)] = 60.0


class RunError(msgspec.Struct, kw_only=True):
    """The exception that ended the run: its type's name, its message, and the traceback's
    lines (the code's own frames)."""

    name: str
    value: str
    traceback: list[str]


class RunResult(msgspec.Struct, kw_only=True):
    """A value to show, by MIME type: `text/plain` always, and `image/png` (base64),
    `image/svg+xml`, `text/html`, `text/markdown` or `application/json` when it has them."""

    data: dict[str, Any]


class Run(msgspec.Struct, kw_only=True):
    """One run: what the code printed, the value of its last expression and each matplotlib
    figure it left open (`results`), and the exception that ended it (`error`)."""

    context_id: str
    ok: bool
    timed_out: bool
    # The interpreter is gone (killed past the deadline, or it exited): the context with it.
    context_lost: bool
    # The runs this context has made, this one included (None when it was lost first).
    execution_count: int | None
    duration_ms: float
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    results: list[RunResult]
    # Results past the answer's limits (32 of them, 16 MiB), counted but not sent.
    results_dropped: int
    error: RunError | None
