"""Errors typed by the problem `code` the API answers with (RFC 9457 documents).

Every 4xx and 5xx answer raises an `AirlockError`, or the subclass its `code` names, so callers
catch what they mean (`except NoCapacity:`) and never match message text. A command that exits
non-zero is not an error: it is an `ExecResult` with its `exit_code`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx


class AirlockError(Exception):
    """An answer the API gave as a problem, or a call that never got an answer."""

    status: int | None = None
    code: str = "error"

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        title: str | None = None,
        problem: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.title = title
        self.problem = problem or {}
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f"{self.status} " if self.status else ""
        return f"{where}{self.code}: {self.detail}"


class TransportError(AirlockError):
    """The service could not be reached (or broke off) even after the retries allowed."""

    code = "transport_error"


class BadRequest(AirlockError):
    code = "bad_request"


class Unauthenticated(AirlockError):
    code = "unauthenticated"


class Forbidden(AirlockError):
    code = "forbidden"


class MissingScope(Forbidden):
    code = "missing_scope"


class NotFound(AirlockError):
    code = "not_found"


class Conflict(AirlockError):
    code = "conflict"


class SandboxNotRunning(Conflict):
    code = "sandbox_not_running"


class InvalidTransition(Conflict):
    code = "invalid_state_transition"


class StdinNotOpen(Conflict):
    code = "stdin_not_open"


class TtyNotEnabled(Conflict):
    code = "tty_not_enabled"


class ExecNotRunning(Conflict):
    code = "exec_not_running"


class PayloadTooLarge(AirlockError):
    code = "payload_too_large"


class FileTooLarge(PayloadTooLarge):
    """A read with `max_bytes` met a longer file; `problem["size"]` is its size when known."""

    code = "file_too_large"


class SandboxSecretsFull(Conflict):
    """The sandbox's execs were given as many secret values as a sandbox holds."""

    code = "sandbox_secrets_full"


class ValidationFailed(AirlockError):
    code = "validation_failed"


class IdempotencyKeyReused(ValidationFailed):
    code = "idempotency_key_reused"


class TtyUnsupported(ValidationFailed):
    code = "tty_unsupported"


class QuotaExceeded(AirlockError):
    code = "quota_exceeded"


class StdinFull(QuotaExceeded):
    """The process has not read the stdin written before; nothing of this write was taken."""

    code = "stdin_full"


class RateLimited(QuotaExceeded):
    """More requests than the tenant's rate for this class of route (`route_class`); nothing
    was done. The SDK's sandbox calls wait `retry_after` and send it again."""

    code = "rate_limited"


class ServiceUnavailable(AirlockError):
    code = "unavailable"


class NoCapacity(ServiceUnavailable):
    code = "no_capacity"


class NodeUnavailable(ServiceUnavailable):
    code = "node_unavailable"


class SandboxMoved(ServiceUnavailable):
    """The sandbox moved to another node (a paused one whose node had no room) before the call
    did anything: the SDK sends it again at once."""

    code = "sandbox_moved"


_BY_CODE: dict[str, type[AirlockError]] = {
    cls.code: cls
    for cls in (
        BadRequest,
        Unauthenticated,
        Forbidden,
        MissingScope,
        NotFound,
        Conflict,
        SandboxNotRunning,
        InvalidTransition,
        StdinNotOpen,
        SandboxSecretsFull,
        TtyNotEnabled,
        ExecNotRunning,
        PayloadTooLarge,
        FileTooLarge,
        ValidationFailed,
        IdempotencyKeyReused,
        TtyUnsupported,
        QuotaExceeded,
        StdinFull,
        RateLimited,
        ServiceUnavailable,
        NoCapacity,
        NodeUnavailable,
        SandboxMoved,
    )
}
_BY_STATUS: dict[int, type[AirlockError]] = {
    400: BadRequest,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: ValidationFailed,
    429: QuotaExceeded,
    503: ServiceUnavailable,
}


def from_answer(status: int, body: bytes, headers: httpx.Headers | dict[str, str]) -> AirlockError:
    """The error for a problem answer: its class from `code`, else from the status."""
    try:
        problem = json.loads(body) if body else {}
    except ValueError:
        problem = {}
    if not isinstance(problem, dict):
        problem = {}
    code = problem.get("code")
    cls = _BY_CODE.get(code) if isinstance(code, str) else None
    cls = cls or _BY_STATUS.get(status, AirlockError)
    detail = problem.get("detail") or problem.get("title") or body[:200].decode(errors="replace")
    retry_after = None
    raw_retry = headers.get("retry-after") if headers else None
    if raw_retry:
        try:
            retry_after = float(raw_retry)
        except ValueError:
            retry_after = None
    return cls(
        str(detail) or f"HTTP {status}",
        status=status,
        code=code if isinstance(code, str) else None,
        title=problem.get("title"),
        problem=problem,
        retry_after=retry_after,
    )


def check(response: httpx.Response) -> httpx.Response:
    """`response` when it succeeded; the typed error otherwise (its body read if streamed)."""
    if response.status_code < 400:
        return response
    raise from_answer(response.status_code, response.read(), response.headers)


async def acheck(response: httpx.Response) -> httpx.Response:
    if response.status_code < 400:
        return response
    raise from_answer(response.status_code, await response.aread(), response.headers)
