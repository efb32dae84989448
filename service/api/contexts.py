from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import State
from litestar.params import FromPath, JSONBody

from service.auth.principal import Principal
from service.context import SANDBOX_CALL, SandboxCallDep, audit_context
from service.contexts.schemas import (
    RUN_BODY_LIMIT,
    Context,
    ContextCreate,
    ContextList,
    Run,
    RunCreate,
)
from service.contexts.service import ContextCall
from service.deps import ContextsDep
from service.files.target import SandboxCall


class ContextController(Controller):
    path = "/v1/sandboxes/{sandbox_id:str}/contexts"
    tags = ["contexts"]
    # Every route is a call on the sandbox of its path; its contexts live where it runs.
    opt = {"bound_token": "sandbox", "routed": "sandbox"}
    dependencies = SANDBOX_CALL

    @post(
        "/",
        operation_id="create_context",
        summary="Start a Python interpreter in a sandbox, kept between runs",
        description="The interpreter runs as an exec does: as the sandbox's user (or `user`), "
        "with the sandbox's environment and `env`, under the sandbox's caps and network policy. "
        "It lives until it is deleted, its sandbox stops, or a run overruns its deadline; a "
        "pause keeps it. A sandbox holds at most 8 live contexts "
        "(409 `sandbox_contexts_full`); a sandbox without `python3` is a 422 "
        "`context_not_started`.",
        opt={
            "scope": "exec",
            "problems": {
                409: "The sandbox is not running, or holds as many live contexts as it may "
                "(`sandbox_contexts_full`)"
            },
        },
        status_code=201,
    )
    async def create_context(
        self, call: SandboxCallDep, contexts: ContextsDep, data: JSONBody[ContextCreate]
    ) -> Context:
        return await contexts.create(call, data)

    @get(
        "/",
        operation_id="list_contexts",
        summary="The sandbox's contexts",
        opt={"scope": "sandboxes:read"},
    )
    async def list_contexts(self, call: SandboxCallDep, contexts: ContextsDep) -> ContextList:
        return await contexts.list(call)

    @get(
        "/{context_id:str}",
        operation_id="get_context",
        summary="Get a context",
        opt={"scope": "sandboxes:read"},
    )
    async def get_context(
        self, call: SandboxCallDep, contexts: ContextsDep, context_id: FromPath[str]
    ) -> Context:
        return await contexts.get(ContextCall(call, context_id))

    @post(
        "/{context_id:str}/run",
        operation_id="run_code",
        summary="Run code in a context",
        description="The code runs after the context's earlier runs, with their variables. The "
        "answer has what it printed, the value of its last expression and each matplotlib "
        "figure it left open (`results`, by MIME type), and the exception that ended it "
        "(`error`). At its deadline (`timeout_s`, at most the tenant's `max_exec_timeout_s`) "
        "the code is interrupted (`timed_out`, a `TimeoutError`) and the context goes on; code "
        "still running 5 s later is killed with its interpreter (`context_lost`). A context "
        "that has ended is a 409 `context_gone`.",
        opt={
            "scope": "exec",
            "problems": {
                409: "The sandbox is not running, or the context has ended (`context_gone`)"
            },
        },
        status_code=200,
        request_max_body_size=RUN_BODY_LIMIT,
    )
    async def run_code(
        self,
        request: Request[Principal, Any, State],
        sandbox_id: FromPath[str],
        context_id: FromPath[str],
        data: JSONBody[RunCreate],
    ) -> Run:
        # No dependencies on an agent's hottest route (as on an exec's): Litestar resolves
        # several at once in a task group, a round of task hand-offs on every run.
        state = request.app.state
        ctx = audit_context(request)
        call = SandboxCall(
            state.sessionmaker, state.runtimes, state.wake, request.user, ctx, sandbox_id
        )
        return await state.contexts.run(ContextCall(call, context_id), data)

    @delete(
        "/{context_id:str}",
        operation_id="delete_context",
        summary="End a context and its interpreter",
        opt={"scope": "exec"},
    )
    async def delete_context(
        self, call: SandboxCallDep, contexts: ContextsDep, context_id: FromPath[str]
    ) -> None:
        await contexts.delete(ContextCall(call, context_id))
