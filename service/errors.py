"""Error types with an HTTP status and a stable code; `problem_response` renders them (RFC 9457)."""

from __future__ import annotations

import logging
from typing import Any

from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
    ValidationException,
)
from sqlalchemy.exc import DataError, InterfaceError, OperationalError

from service.requestid import request_id_for

log = logging.getLogger("airlock.errors")

PROBLEM_MEDIA_TYPE = "application/problem+json"


class ConfigurationError(Exception):
    """The service cannot start with the settings it was given."""


class AppError(Exception):
    status = 500
    code = "internal_error"
    title = "Internal server error"
    # Seconds a caller should wait before trying again (a Retry-After header), if it should.
    retry_after_s: int | None = None

    def __init__(
        self,
        detail: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.headers = headers or {}
        self.extra = extra or {}
        retry_after_s = self.retry_after_s if retry_after_s is None else retry_after_s
        if retry_after_s is not None:
            self.headers["Retry-After"] = str(max(1, int(retry_after_s)))


class BadRequest(AppError):
    status, code, title = 400, "bad_request", "Bad request"


class Unauthenticated(AppError):
    status, code, title = 401, "unauthenticated", "Authentication required"

    def __init__(self, detail: str | None = None, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.headers.setdefault("WWW-Authenticate", 'Bearer realm="airlock"')


class Forbidden(AppError):
    status, code, title = 403, "forbidden", "Forbidden"


class MissingScope(Forbidden):
    code, title = "missing_scope", "The credential lacks a required scope"


class NotFound(AppError):
    status, code, title = 404, "not_found", "Not found"


class Conflict(AppError):
    status, code, title = 409, "conflict", "Conflict"


class InvalidTransition(Conflict):
    code, title = "invalid_state_transition", "The resource is not in a state that allows this"


class SandboxNotUsable(Conflict):
    code, title = "sandbox_not_running", "The sandbox is not running"


class Unprocessable(AppError):
    status, code, title = 422, "validation_failed", "The request is not valid"


class IdempotencyKeyReused(Unprocessable):
    code, title = "idempotency_key_reused", "This Idempotency-Key was used with another request"


class QuotaExceeded(AppError):
    status, code, title = 429, "quota_exceeded", "A tenant quota was exceeded"
    retry_after_s = 1


class ServiceUnavailable(AppError):
    status, code, title = 503, "unavailable", "The service cannot serve this now"


# On a node's refusal to take a sandbox for lack of room: the API replica that placed it there
# tries the next node instead of passing the refusal on (and strips the header).
NODE_FULL_HEADER = "Airlock-Node-Full"


class NoCapacity(ServiceUnavailable):
    code, title = "no_capacity", "No node has room for this sandbox now"
    retry_after_s = 5


MOVED_HEADER = "Airlock-Sandbox-Node"


class SandboxMoved(ServiceUnavailable):
    """The sandbox is on another node now (a paused one moved, a stale route): the API replica
    that forwarded the call sends it there; a caller that gets this retries at once."""

    code, title = "sandbox_moved", "The sandbox moved to another node"

    def __init__(self, sandbox_id: str, node_id: str) -> None:
        super().__init__(
            f"sandbox {sandbox_id} is on node {node_id} now: retry",
            headers={MOVED_HEADER: node_id, "Retry-After": "0"},
            extra={"node_id": node_id},
        )
        self.node_id = node_id


class NodeUnavailable(ServiceUnavailable):
    code, title = "node_unavailable", "The node that holds this sandbox cannot be reached"
    retry_after_s = 5


def problem_body(
    scope: Any,
    instance: str,
    *,
    status: int,
    code: str,
    title: str,
    detail: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The problem document (RFC 9457, with `code` and `request_id`) of the request `scope`
    at `instance` (its path)."""
    body: dict[str, Any] = {
        "type": f"https://airlock.dev/problems/{code}",
        "title": title,
        "status": status,
        "code": code,
        "detail": detail,
        "instance": instance,
        "request_id": request_id_for(scope),
    }
    if extra:
        body.update({k: v for k, v in extra.items() if k not in body})
    return body


def _problem(
    request: Request[Any, Any, Any],
    *,
    status: int,
    code: str,
    title: str,
    detail: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response[dict[str, Any]]:
    body = problem_body(
        request.scope,
        request.url.path,
        status=status,
        code=code,
        title=title,
        detail=detail,
        extra=extra,
    )
    return Response(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def app_error_handler(request: Request[Any, Any, Any], exc: AppError) -> Response[dict[str, Any]]:
    return _problem(
        request,
        status=exc.status,
        code=exc.code,
        title=exc.title,
        detail=exc.detail,
        headers=exc.headers,
        extra=exc.extra,
    )


def http_exception_handler(
    request: Request[Any, Any, Any], exc: HTTPException
) -> Response[dict[str, Any]]:
    """Litestar's own exceptions (routing, parsing, validation) in the same problem shape."""
    status = exc.status_code
    if isinstance(exc, ValidationException) or status == 400:
        # Litestar answers 400 for bodies it cannot decode and 400 for bodies that do not
        # validate; both are "the request is not valid" to a client.
        errors = exc.extra if isinstance(exc.extra, list) else []
        return _problem(
            request,
            status=422 if status == 400 else status,
            code="validation_failed",
            title="The request is not valid",
            detail=str(exc.detail),
            extra={"errors": errors},
        )
    code = {
        400: "bad_request",
        401: "unauthenticated",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        413: "payload_too_large",
        415: "unsupported_media_type",
        429: "too_many_requests",
    }.get(status, "internal_error" if status >= 500 else "http_error")
    if isinstance(exc, NotFoundException):
        detail = "No such resource or route"
    elif isinstance(exc, MethodNotAllowedException):
        detail = "Method not allowed on this route"
    else:
        detail = str(exc.detail) if status < 500 else "Internal server error"
    return _problem(
        request,
        status=status,
        code=code,
        title=detail if status < 500 else "Internal server error",
        detail=detail,
        headers=exc.headers,
    )


def database_unavailable_handler(
    request: Request[Any, Any, Any], exc: Exception
) -> Response[dict[str, Any]]:
    log.error("database unreachable on %s %s: %s", request.method, request.url.path, exc)
    return _problem(
        request,
        status=503,
        code="unavailable",
        title="The service cannot serve this now",
        detail="The database is unreachable; retry shortly.",
        headers={"Retry-After": "5"},
    )


def invalid_value_handler(
    request: Request[Any, Any, Any], exc: Exception
) -> Response[dict[str, Any]]:
    # The database refused a value (a NUL byte, a number out of range): a bad request. The
    # statement's parameters are not logged, since they can hold credentials' hashes.
    log.info("database refused a value on %s %s", request.method, request.url.path)
    return _problem(
        request,
        status=422,
        code="validation_failed",
        title="The request is not valid",
        detail="A value in the request cannot be stored (for example a NUL character).",
    )


def unhandled_exception_handler(
    request: Request[Any, Any, Any], exc: Exception
) -> Response[dict[str, Any]]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _problem(
        request,
        status=500,
        code="internal_error",
        title="Internal server error",
        detail="The server failed to handle this request; quote the request id when reporting it.",
    )


EXCEPTION_HANDLERS = {
    AppError: app_error_handler,
    # Lost or refused connections (not query errors, which are bugs and stay 500s).
    OperationalError: database_unavailable_handler,
    DataError: invalid_value_handler,
    InterfaceError: database_unavailable_handler,
    ConnectionError: database_unavailable_handler,
    HTTPException: http_exception_handler,
    Exception: unhandled_exception_handler,
}
