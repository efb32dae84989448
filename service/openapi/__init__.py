"""The OpenAPI document says every problem response a route can give, derived from the route's
own metadata, so clients and fuzzers built from it see what the server does:

- every route that is not public: 401 (no or a bad credential), 403 (`missing_scope`, an
  operator-only route, a token bound to another sandbox's route), 503 (the database is
  unreachable); a public route gets `security: []`;
- a path parameter: 404 (another tenant's object is a 404 too);
- a body: 413 past the route's limit (`service.inputs.body_limit`; a streamed upload under its
  own cap; a raw body the handler reads whole, `opt={"raw_body": True}`, under the route's
  `request_max_body_size`), 422 when it does not validate; any parameter or body: 422 (a NUL
  character in the path or the query is refused on every route);
- a route that needs the sandbox runtime (it takes `runtimes`, `exec_runner` or `pool`): 409 (the
  sandbox is not running, busy or lost) and 503 with Retry-After (no runtime, the host is full);
- every route: 429 `rate_limited` past a request rate (service/ratelimit);
- what only the handler knows, it declares: `opt={"problems": {409: "why", 429: "why"}}`
  (a 429 always carries Retry-After); `HANDLER_PROBLEMS` below holds those of handlers that do
  not (yet) declare them themselves.

Every problem is `application/problem+json` with one shared `Problem` schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Litestar
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.spec import (
    Components,
    OpenAPI,
    OpenAPIResponse,
    Operation,
    Reference,
    RequestBody,
    Schema,
)
from litestar.openapi.spec import (
    OpenAPIHeader as Header,
)
from litestar.openapi.spec import (
    OpenAPIMediaType as MediaType,
)
from litestar.openapi.spec.enums import OpenAPIType
from litestar.routes import HTTPRoute
from litestar.utils import ensure_async_callable

from service.errors import PROBLEM_MEDIA_TYPE
from service.inputs import body_limit
from service.openapi.parameters import document_parameters
from service.openapi.structs import exact_struct_schemas

# A route that takes one of these needs the sandbox runtime.
RUNTIME_DEPENDENCIES = frozenset({"runtimes", "exec_runner", "pool", "resumes"})

PROBLEM_SCHEMA = Schema(
    type="object",
    description="An RFC 9457 problem; `code` is stable, other members depend on the problem.",
    required=["type", "title", "status", "code", "detail"],
    properties={
        "type": Schema(type="string"),
        "title": Schema(type="string"),
        "status": Schema(type="integer"),
        "code": Schema(type="string", description="A stable machine-readable code"),
        "detail": Schema(type="string"),
        "instance": Schema(type="string", description="The request's path"),
        "request_id": Schema(type="string"),
        "errors": Schema(
            type="array",
            items=Schema(type="object", additional_properties=True),
            description="For `validation_failed`: which field, and why",
        ),
    },
    additional_properties=True,
)


def document_problems(app: Litestar) -> None:
    """Completes the app's OpenAPI document (built once, then cached by Litestar) in place."""
    openapi = app.openapi_schema
    _add_problem_schema(openapi)
    exact_struct_schemas(app, openapi)
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        path_item = (openapi.paths or {}).get(route.path_format or "/")
        if path_item is None:
            continue
        path_params = set(route.path_parameters)
        for handler in route.route_handlers:
            for method in handler.http_methods:
                operation = getattr(path_item, method.lower(), None)
                if isinstance(operation, Operation):
                    _document(operation, handler, path_params)


def correct_allow_header(app: Litestar) -> None:
    """An OPTIONS answer's `Allow` names every method of its path. Litestar's own can come from
    a route object built before the path's last handler was added, and then lists only some."""
    methods: dict[str, str] = {}
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            methods[route.path] = ", ".join(sorted(route.methods))

    async def allow_every_method(message: Any, scope: Any) -> None:
        if message["type"] != "http.response.start" or scope.get("method") != "OPTIONS":
            return
        handler = scope.get("route_handler")
        allow = next((methods[p] for p in getattr(handler, "paths", ()) if p in methods), None)
        if allow is None:
            return
        headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
        message["headers"] = [*headers, (b"allow", allow.encode())]

    app.before_send.append(ensure_async_callable(allow_every_method))


def problems_for(handler: HTTPRouteHandler, path_params: set[str]) -> dict[int, str]:
    """Each status a route can answer with a problem, and why."""
    opt = handler.opt
    # A route that reaches the runtime through its request instead (`opt["runtime"]`) too.
    needs = bool(set(handler.parsed_fn_signature.parameters) & RUNTIME_DEPENDENCIES) or bool(
        opt.get("runtime")
    )
    params = handler.parsed_fn_signature.parameters
    has_body = "data" in params or bool(opt.get("streamed_body") or opt.get("raw_body"))
    ids = {name for name in params if name.endswith("_id")} | path_params
    problems: dict[int, str] = {}
    if not opt.get("public"):
        problems[401] = "No credential, or one that is unknown, expired or revoked"
        problems[403] = _forbidden(handler)
    if ids:
        problems[404] = "No such resource for this tenant"
    if needs:
        problems[409] = "The sandbox is not in a state that allows this (not running, busy, lost)"
    if has_body:
        problems[413] = _too_large(handler)
    if has_body or path_params or handler.parsed_fn_signature.parameters.keys() - _INJECTED:
        problems[422] = "The request is not valid (`validation_failed` lists the errors)"
    if needs:
        problems[503] = "The sandbox runtime or the database is unavailable, or the host is full"
    elif not opt.get("public"):
        problems[503] = "The database is unreachable"
    problems.update(HANDLER_PROBLEMS.get(handler.operation_id or "", {}))
    problems.update(opt.get("problems", {}))
    # Every route is counted against a request rate (service/ratelimit).
    problems[429] = f"{problems[429]}; or {_RATE_LIMITED}" if 429 in problems else _RATE_LIMITED
    return dict(sorted(problems.items()))


_RATE_LIMITED = (
    "Too many requests (`rate_limited`): the tenant's rate for this class of route, or the "
    "caller's address's without a tenant; retry after Retry-After"
)
_QUEUE_FULL = "A tenant quota is reached (the problem names it); retry after Retry-After"
_WAKE = "The sandbox is paused and resuming it would pass a tenant quota (it stays paused)"
# Problems only the handler knows of, by operation id.
HANDLER_PROBLEMS: dict[str, dict[int, str]] = {
    "create_sandbox": {429: _QUEUE_FULL, 404: "No such template or image"},
    "create_exec": {429: _QUEUE_FULL},
    "create_template": {
        404: "No such sandbox (`from_sandbox`)",
        409: "The template exists or is being created, or the sandbox is not running or paused",
        429: _QUEUE_FULL,
    },
    # Waking a paused sandbox counts it against the tenant's running quotas again.
    "resume_sandbox": {429: _WAKE},
    "fork_sandbox": {429: _QUEUE_FULL},
    "upload_file": {429: _WAKE},
    "download_file": {429: _WAKE},
    "list_files": {429: _WAKE},
    "upload_archive": {429: _WAKE},
    "download_archive": {429: _WAKE},
    "create_review": {404: "No such template, bundle or secret", 429: _QUEUE_FULL},
    "upload_review_bundle": {429: _QUEUE_FULL},
    "create_tenant": {409: "A tenant of that name exists"},
    "update_tenant": {409: "A tenant of that name exists"},
    "put_secret": {409: "The secret was created at the same time; retry"},
    "kill_exec": {409: "The exec has ended"},
    "create_token": {404: "No such sandbox to bind the token to"},
}


# Parameters a handler receives from the app rather than from the request.
_INJECTED = frozenset(
    {
        "self",
        "request",
        "db",
        "db_session",
        "principal",
        "audit_ctx",
        "settings",
        "runtimes",
        "exec_runner",
        "pool",
        "resumes",
        "state",
    }
)


def _forbidden(handler: HTTPRouteHandler) -> str:
    if handler.opt.get("operator"):
        return "Only the operator key may use this route"
    scope = handler.opt.get("scope")
    why = f"The credential lacks the `{scope}` scope (`missing_scope`)" if scope else "Forbidden"
    if handler.opt.get("bound_token") != "sandbox":
        why += ", or it is a token bound to a sandbox"
    return why


def _too_large(handler: HTTPRouteHandler) -> str:
    limit = body_limit(handler)
    if limit is None:
        return "The upload is larger than the tenant's limit for it"
    return f"The body is larger than this route's limit of {limit} bytes"


def _document(operation: Operation, handler: HTTPRouteHandler, path_params: set[str]) -> None:
    responses = dict(operation.responses or {})
    # Litestar documents its own 400 for validation; the service answers those as 422 problems.
    responses.pop("400", None)
    for status, description in problems_for(handler, path_params).items():
        responses[str(status)] = _problem_response(status, description)
    operation.responses = dict(sorted(responses.items()))
    document_parameters(operation, handler)
    if handler.opt.get("public"):
        operation.security = []
    _document_media(operation, handler)


def _document_media(operation: Operation, handler: HTTPRouteHandler) -> None:
    """What Litestar cannot infer: a stream's media type, a 204 at its end, readyz's 503."""
    responses = operation.responses or {}
    if handler.operation_id == "stream_exec_events":
        responses["200"] = OpenAPIResponse(
            description="Server-sent events: `stdout`, `stderr`, then `exit`",
            content={"text/event-stream": MediaType(schema=Schema())},
        )
        responses["204"] = OpenAPIResponse(description="The reader already has every event")
    if handler.operation_id == "get_readiness":
        ok = responses.get("200")
        if isinstance(ok, OpenAPIResponse):
            responses["503"] = OpenAPIResponse(
                description="Not ready: the database does not answer", content=ok.content
            )
    operation.responses = dict(sorted(responses.items()))


def _problem_response(status: int, description: str) -> OpenAPIResponse:
    headers: dict[str, Header | Reference] | None = None
    if status == 429:
        headers = {"Retry-After": _retry_after(required=True)}
    elif status == 503:
        headers = {"Retry-After": _retry_after(required=False)}
    elif status == 401:
        headers = {"WWW-Authenticate": Header(schema=Schema(type="string"))}
    return OpenAPIResponse(
        description=description,
        headers=headers,
        content={
            PROBLEM_MEDIA_TYPE: MediaType(schema=Reference(ref="#/components/schemas/Problem"))
        },
    )


def _retry_after(*, required: bool) -> Header:
    return Header(
        schema=Schema(type="string"),
        required=required,
        description="Seconds to wait before retrying",
    )


def _add_problem_schema(openapi: OpenAPI) -> None:
    if openapi.components is None:
        openapi.components = Components()
    schemas = dict(openapi.components.schemas or {})
    schemas["Problem"] = PROBLEM_SCHEMA
    openapi.components.schemas = schemas


def public_paths(openapi: dict[str, Any]) -> list[str]:
    """The operations the document marks public (`security: []`), for tests and docs."""
    return [
        f"{method.upper()} {path}"
        for path, item in openapi.get("paths", {}).items()
        for method, op in item.items()
        if isinstance(op, dict) and op.get("security") == []
    ]


def binary_body_operation(media_type: str) -> type[Operation]:
    """An OpenAPI operation whose request body is raw bytes (the handler streams it)."""

    @dataclass
    class BinaryBody(Operation):
        def __post_init__(self) -> None:
            self.request_body = RequestBody(
                content={
                    media_type: MediaType(schema=Schema(type=OpenAPIType.STRING, format="binary"))
                },
                required=True,
            )

    return BinaryBody
