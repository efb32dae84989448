from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import State
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, HeaderParameter, JSONBody, QueryParameter
from litestar.response import ServerSentEvent

from service import server_timing
from service.auth.principal import Principal
from service.context import EXEC_CALL, ExecCallDep, audit_context
from service.deps import (
    CurrentPrincipal,
    DbSession,
    IdempotencyKey,
    Limit,
)
from service.execs import service, stdin
from service.execs.schemas import (
    BODY_LIMIT,
    Exec,
    ExecCreate,
    ExecPage,
    StdinWritten,
    TerminalSize,
)
from service.openapi import binary_body_operation
from service.pagination import DEFAULT_LIMIT, cursor_parameter, id_pattern

Cursor = cursor_parameter(id_pattern("exe"))

LastEventId = Annotated[
    str | None,
    HeaderParameter(name="Last-Event-ID", description="Resume after this event id"),
]
AfterParam = Annotated[
    int | None,
    QueryParameter(
        name="after",
        ge=0,
        le=2**31 - 1,
        description="Resume after this event id (as Last-Event-ID)",
    ),
]


CloseParam = Annotated[
    bool, QueryParameter(name="close", description="Close stdin after this write")
]


class ExecController(Controller):
    path = "/v1/sandboxes/{sandbox_id:str}/execs"
    tags = ["execs"]
    opt = {"bound_token": "sandbox"}
    dependencies = EXEC_CALL

    @post(
        "/",
        operation_id="create_exec",
        summary="Run a command in a sandbox",
        description="With `wait` (the default) the answer is the finished exec (200); "
        "`wait: false` answers 202 at once. A non-zero exit is a 200 with its exit code. Every "
        "secret value any exec of the sandbox was given is masked (`***`) in this exec's output "
        "and record, for the sandbox's life; a sandbox holds at most 256 of them (4 MiB), and "
        "an exec that would bring more is a 409 `sandbox_secrets_full` before anything runs.",
        opt={
            "routed": "sandbox",
            "scope": "exec",
            "runtime": True,  # through the request's app state, not a dependency
            "problems": {
                409: "The sandbox is not running, or its execs were given as many secret values "
                "as a sandbox holds (`sandbox_secrets_full`), or a value an earlier exec was "
                "given does not decrypt under the deployment's secrets key "
                "(`sandbox_secrets_unreadable`)"
            },
        },
        status_code=200,
        request_max_body_size=BODY_LIMIT,
        responses={
            202: ResponseSpec(
                Exec, description="Started without waiting: poll it or stream its events"
            )
        },
    )
    async def create_exec(
        self,
        request: Request[Principal, Any, State],
        sandbox_id: FromPath[str],
        data: JSONBody[ExecCreate],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[Exec]:
        # No dependencies on the hottest route: Litestar resolves several at once in a task
        # group, a round of task hand-offs on every exec.
        state = request.app.state
        timings = server_timing.collect()
        result, final = await service.create_exec(
            state.sessionmaker,
            state.exec_runner,
            request.user,
            audit_context(request),
            sandbox_id,
            data,
            idempotency_key,
        )
        return Response(result, status_code=200 if final else 202, headers=timings.header())

    @get(
        "/",
        operation_id="list_execs",
        summary="The sandbox's exec history",
        opt={"scope": "sandboxes:read"},
    )
    async def list_execs(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        sandbox_id: FromPath[str],
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> ExecPage:
        return await service.list_execs(
            db_session, principal, sandbox_id, limit=limit, cursor=cursor
        )

    @get(
        "/{exec_id:str}",
        operation_id="get_exec",
        summary="Get an exec with its output so far",
        opt={"scope": "exec"},
    )
    async def get_exec(self, exec_call: ExecCallDep) -> Exec:
        return await service.get_exec(exec_call)

    @get(
        "/{exec_id:str}/events",
        operation_id="stream_exec_events",
        summary="Stream an exec's output as server-sent events",
        description='Events `stdout` and `stderr` carry `{"text": ...}`; the last is `exit`. '
        "Reconnect with `Last-Event-ID` (or `?after=`) to resume without loss. The credential "
        "is checked again every few seconds: once it is revoked or expired, or the tenant "
        'suspended, the stream ends with an `unauthenticated` event (`{"code", "detail"}`).',
        opt={"routed": "sandbox", "scope": "exec", "runtime": True},
    )
    async def stream_exec_events(
        self,
        request: Request[Any, Any, Any],
        exec_call: ExecCallDep,
        last_event_id: LastEventId = None,
        after: AfterParam = None,
    ) -> ServerSentEvent | Response[None]:
        start = after if after is not None else _event_id(last_event_id)
        if await service.stream_ended(exec_call, start):
            # The reader has everything, `exit` included: 204 tells EventSource to stop.
            return Response(None, status_code=204)
        authenticator = request.app.state.authenticator
        return ServerSentEvent(
            service.events(
                exec_call, start, refusal=lambda: authenticator.refusal(exec_call.principal)
            )
        )

    @post(
        "/{exec_id:str}/kill",
        operation_id="kill_exec",
        summary="Kill a running exec and its processes",
        opt={"routed": "sandbox", "scope": "exec", "runtime": True},
        status_code=200,
    )
    async def kill_exec(self, exec_call: ExecCallDep) -> Exec:
        return await service.kill_exec(exec_call)

    @post(
        "/{exec_id:str}/stdin",
        operation_id="write_exec_stdin",
        summary="Write to a running exec's stdin",
        description="For an exec started with `stdin_open`: the raw body (at most 1 MiB) goes "
        "to the process's stdin after what was written before; `?close=true` then closes it (the "
        "process reads EOF). An exec started without `stdin_open`, one whose stdin was closed, or "
        "one that has ended is a 409 `stdin_not_open`. At most 1 MiB written to an exec and not "
        "yet read by its process is held: a write that does not fit waits up to 10 s for the "
        "process to read, then (or at once, while another write to the same exec is waiting) is "
        "refused whole with a 429 `stdin_full` and `Retry-After`; nothing of a refused write "
        "reaches the process.",
        opt={
            "routed": "sandbox",
            "scope": "exec",
            "runtime": True,
            "raw_body": True,
            "problems": {
                409: "The sandbox is not running, or the exec was started without "
                "`stdin_open`, its stdin was closed, or it has ended (`stdin_not_open`)",
                429: "The process has not read what was written before (`stdin_full`): "
                "nothing of this write was taken; send it again after `Retry-After`",
            },
        },
        status_code=200,
        request_max_body_size=stdin.WRITE_BYTES,
        operation_class=binary_body_operation("application/octet-stream"),
    )
    async def write_exec_stdin(
        self,
        request: Request[Any, Any, Any],
        exec_call: ExecCallDep,
        close: CloseParam = False,
    ) -> StdinWritten:
        data = await request.body()
        return await service.write_stdin(exec_call, data, close=close)

    @post(
        "/{exec_id:str}/resize",
        operation_id="resize_exec_tty",
        summary="Resize a running exec's terminal",
        description="For an exec started with `tty`: the terminal's window becomes `rows` x "
        "`cols` and its foreground processes get SIGWINCH. An exec without a terminal is a 409 "
        "`tty_not_enabled`; one that has ended, a 409 `exec_not_running`.",
        opt={
            "routed": "sandbox",
            "scope": "exec",
            "runtime": True,
            "problems": {
                409: "The exec has no terminal (`tty_not_enabled`) or has ended "
                "(`exec_not_running`), or the sandbox is not running"
            },
        },
        status_code=200,
    )
    async def resize_exec_tty(
        self, exec_call: ExecCallDep, data: JSONBody[TerminalSize]
    ) -> TerminalSize:
        return await service.resize_tty(exec_call, data)


def _event_id(value: str | None) -> int:
    try:
        return min(max(0, int(value)), 2**31 - 1) if value else 0
    except ValueError:
        return 0
