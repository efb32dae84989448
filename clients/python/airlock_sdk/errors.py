"""Errors typed by the problem `code` the API answers with (RFC 9457 documents).

Every 4xx and 5xx answer raises an `AirlockError`, or the subclass its `code` names, so callers
catch what they mean (`except NoCapacity:`) and never match message text. A command that exits
non-zero is not an error: it is an `ExecResult` with its `exit_code`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from airlock_client.types import Response


@dataclass(frozen=True)
class FieldError:
    """One refused value of a request: `field` is its path (`ttl_s`, `network.allow`; None when
    the request as a whole was refused), `message` the rule it broke, `source` where it was
    (`body`, `query`, `path`)."""

    field: str | None
    message: str
    source: str | None = None

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


# The bounds a validation message states, said as a rule (the message as it came otherwise).
_BOUNDS = (
    (re.compile(r"^Expected `[^`]+` <= (\S+)$"), "must be at most {}"),
    (re.compile(r"^Expected `[^`]+` >= (\S+)$"), "must be at least {}"),
    (re.compile(r"^Expected `[^`]+` < (\S+)$"), "must be less than {}"),
    (re.compile(r"^Expected `[^`]+` > (\S+)$"), "must be more than {}"),
    (re.compile(r"^Expected `[^`]+` of length <= (\S+)$"), "must be at most {} long"),
    (re.compile(r"^Expected `[^`]+` of length >= (\S+)$"), "must be at least {} long"),
)


def _rule(message: str) -> str:
    for pattern, rule in _BOUNDS:
        found = pattern.match(message)
        if found:
            return rule.format(found.group(1).removesuffix(".0"))
    return message


def field_errors(problem: dict[str, Any]) -> list[FieldError]:
    """The refused values a problem document lists (its `errors`), each with its rule."""
    found = problem.get("errors")
    if not isinstance(found, list):
        return []
    fields = []
    for item in found:
        if not isinstance(item, dict) or not item.get("message"):
            continue
        key, source = item.get("key"), item.get("source")
        fields.append(
            FieldError(
                field=str(key) if key else None,
                message=_rule(str(item["message"])),
                source=str(source) if source else None,
            )
        )
    return fields


class AirlockError(Exception):
    """An answer the API gave as a problem, or a call that never got an answer. `errors` lists
    the refused values of a request the API found invalid (`timeout_s: must be at most 86400`)."""

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
        errors: list[FieldError] | None = None,
    ) -> None:
        self.errors = list(errors or [])
        super().__init__(_with_fields(detail, self.errors))
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
        return f"{where}{self.code}: {_with_fields(self.detail, self.errors)}"


def _with_fields(detail: str, fields: list[FieldError]) -> str:
    return "; ".join([detail, *map(str, fields)]) if fields else detail


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
        errors=field_errors(problem),
    )


def unwrap(response: Response[Any]) -> Any:
    """The parsed body of a call of the generated client (`airlock_client`, made on a sandbox's
    `client`), or the typed error its answer was."""
    if response.status_code >= 400:
        raise from_answer(int(response.status_code), response.content, response.headers)
    return response.parsed


def check(response: httpx.Response) -> httpx.Response:
    """`response` when it succeeded; the typed error otherwise (its body read if streamed)."""
    if response.status_code < 400:
        return response
    raise from_answer(response.status_code, response.read(), response.headers)


async def acheck(response: httpx.Response) -> httpx.Response:
    if response.status_code < 400:
        return response
    raise from_answer(response.status_code, await response.aread(), response.headers)
