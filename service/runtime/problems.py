"""Runtime failures as problem responses: the one mapping, by type, at the HTTP edge.

`problem(exc)` is what a runtime error becomes (the handler below renders it; the runtime
holder raises it when no runtime works). A tenant reads `exc.public()`; the whole message,
with the host's words, goes to the server's log.

A 503 carries Retry-After: `RETRY_S` (30 s) when no runtime works, the interval at which the
holder tries to open one again; 5 s when the host is full (`resource_exhausted`), which frees
as soon as a sandbox ends.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from service import errors
from service.requestid import request_id_for

from . import errors as rt

RETRY_S = 30.0  # no runtime: the holder opens one again at most this often
HOST_FULL_RETRY_S = 5


def _status(exc: rt.SandboxRuntimeError) -> tuple[int, str, str, dict[str, Any]]:
    match exc:
        case rt.RuntimeUnavailable():
            return 503, "runtime_unavailable", "No sandbox runtime", {"runtime": exc.runtime}
        case rt.ImageNotAllowed():
            return 403, "image_not_allowed", "The image may not be pulled", {"image": exc.image}
        case rt.ImageNotFound():
            return 404, "image_not_found", "No such image", {"image": exc.image}
        case rt.InvalidImage():
            return 422, "invalid_image", "The image cannot be used", {}
        case rt.SandboxFailed():
            return 409, "sandbox_failed", "The sandbox has failed", {"reason": exc.reason}
        case rt.SandboxNotFound():
            return 409, "sandbox_lost", "The sandbox no longer exists in the runtime", {}
        case rt.SandboxBusy():
            return 409, "sandbox_busy", "The sandbox is busy", {}
        case rt.ExecNotFound():
            return 404, "not_found", "No such exec", {}
        case rt.InvalidPath():
            return 422, "invalid_path", "The path is not acceptable", {"path": exc.path}
        case rt.FileTooLarge():
            extra = {"path": exc.path, "limit_bytes": exc.limit}
            if exc.size is not None:
                extra["size"] = exc.size
            return 413, "file_too_large", "The file is larger than the read allows", extra
        case rt.PathNotFound():
            return 404, "path_not_found", "No such file in the sandbox", {"path": exc.path}
        case rt.PathNotAllowed():
            return (
                409,
                "path_not_allowed",
                "The sandbox refused the file operation",
                {"path": exc.path},
            )
        case rt.TtyUnsupported():
            return 422, "tty_unsupported", "This exec cannot have a terminal", {}
        case rt.InvalidSpec():
            return 422, "validation_failed", "The request is not valid", {}
        case rt.SnapshotNotFound():
            return (
                503,
                "snapshot_unavailable",
                "The snapshot is not on this node, and no other node could give it",
                {},
            )
        case rt.NotSupported():
            return 501, "not_supported", "This runtime cannot do that", {}
        case rt.ResourceExhausted():
            return 503, "resource_exhausted", "The host cannot take more sandboxes now", {}
        case _:
            return 500, "runtime_error", "The sandbox runtime failed", {}


def problem(exc: rt.SandboxRuntimeError) -> errors.AppError:
    """The problem `exc` is at the edge: a ServiceUnavailable for a 503 (so code that skips
    work while the host cannot serve catches it by that type), else an AppError."""
    status, code, title, extra = _status(exc)
    headers = None
    if status == 503:
        retry = RETRY_S if isinstance(exc, rt.RuntimeUnavailable) else HOST_FULL_RETRY_S
        headers = {"Retry-After": str(int(retry))}
        if isinstance(exc, rt.ResourceExhausted):
            # A replica placing a sandbox here tries another node.
            headers[errors.NODE_FULL_HEADER] = "1"
    kind = errors.ServiceUnavailable if status == 503 else errors.AppError
    err = kind(exc.public(), headers=headers, extra=extra)
    err.status, err.code, err.title = status, code, title
    return err


def runtime_error_handler(
    request: Request[Any, Any, Any], exc: rt.SandboxRuntimeError
) -> Response[dict[str, Any]]:
    err = problem(exc)
    if err.detail != str(exc):  # the whole message, with the host's words, is for the operator
        log = errors.log.error if err.code == "runtime_error" else errors.log.warning
        log(
            "runtime error on %s (request %s): %s",
            request.url.path,
            request_id_for(request.scope),
            exc,
        )
    return errors.app_error_handler(request, err)
