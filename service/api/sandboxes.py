from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, delete, get, patch, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, JSONBody, QueryParameter
from msgspec import Meta

from service.api.pool import Pool
from service.deps import (
    Audit,
    CurrentPrincipal,
    Db,
    DbSession,
    ExecRunnerDep,
    IdempotencyKey,
    Limit,
    ResumesDep,
    Runtimes,
    ThisNode,
    Waker,
)
from service.errors import Unprocessable
from service.flows import create, fork, pause, resume
from service.pagination import DEFAULT_LIMIT, cursor_parameter, id_pattern
from service.sandboxes import service, updates
from service.sandboxes.schemas import (
    LABEL_FILTER_PATTERN,
    Sandbox,
    SandboxCreate,
    SandboxFork,
    SandboxMetrics,
    SandboxPage,
    SandboxUpdate,
    Transition,
)
from service.sandboxes.states import State

Cursor = cursor_parameter(id_pattern("sbx"))

StateFilter = Annotated[
    list[State] | None, QueryParameter(name="state", description="Repeatable: only these states")
]
LabelFilter = Annotated[
    list[Annotated[str, Meta(pattern=LABEL_FILTER_PATTERN)]] | None,
    QueryParameter(name="label", description="Repeatable `key=value`: sandboxes with every label"),
]


def _labels(pairs: list[str] | None) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise Unprocessable(f"label filter {pair!r} is not key=value")
        labels[key] = value
    return labels


class SandboxController(Controller):
    path = "/v1/sandboxes"
    tags = ["sandboxes"]

    @post(
        "/",
        operation_id="create_sandbox",
        summary="Create and start a sandbox",
        opt={"routed": "create", "scope": "sandboxes:write"},
        status_code=201,
        responses={
            200: ResponseSpec(
                Sandbox, description="A retry with the same Idempotency-Key: the first result"
            )
        },
    )
    async def create_sandbox(
        self,
        db: Db,
        runtimes: Runtimes,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        pool: Pool,
        node: ThisNode,
        data: JSONBody[SandboxCreate],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[Sandbox]:
        sandbox, created = await create.create_sandbox(
            db,
            runtimes,
            principal,
            audit_ctx,
            data,
            idempotency_key,
            pool,
            node=node,
        )
        return Response(sandbox, status_code=201 if created else 200)

    @get(
        "/",
        operation_id="list_sandboxes",
        summary="List sandboxes",
        opt={"scope": "sandboxes:read"},
    )
    async def list_sandboxes(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        states: StateFilter = None,
        labels: LabelFilter = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> SandboxPage:
        return await service.list_sandboxes(
            db_session,
            principal,
            limit=limit,
            cursor=cursor,
            states=states or [],
            labels=_labels(labels),
        )

    @get(
        "/{sandbox_id:str}",
        operation_id="get_sandbox",
        summary="Get a sandbox",
        opt={"scope": "sandboxes:read", "bound_token": "sandbox"},
    )
    async def get_sandbox(
        self, db_session: DbSession, principal: CurrentPrincipal, sandbox_id: FromPath[str]
    ) -> Sandbox:
        return await service.get_sandbox(db_session, principal, sandbox_id)

    @get(
        "/{sandbox_id:str}/metrics",
        operation_id="get_sandbox_metrics",
        summary="What a running sandbox uses now",
        description="CPU time, host memory, processes and writable space, read from the "
        "sandbox's runtime when asked. A figure the runtime cannot measure is null (BoxLite "
        "gives no CPU time, processes or writable space). A sandbox that is not running is a "
        "409.",
        opt={"routed": "sandbox", "scope": "sandboxes:read", "bound_token": "sandbox"},
    )
    async def get_sandbox_metrics(
        self,
        db: Db,
        runtimes: Runtimes,
        principal: CurrentPrincipal,
        sandbox_id: FromPath[str],
    ) -> SandboxMetrics:
        return await service.sandbox_metrics(db, runtimes, principal, sandbox_id)

    @get(
        "/{sandbox_id:str}/transitions",
        operation_id="list_sandbox_transitions",
        summary="Every state change of a sandbox",
        opt={"scope": "sandboxes:read", "bound_token": "sandbox"},
    )
    async def list_sandbox_transitions(
        self, db_session: DbSession, principal: CurrentPrincipal, sandbox_id: FromPath[str]
    ) -> list[Transition]:
        return await service.list_transitions(db_session, principal, sandbox_id)

    @patch(
        "/{sandbox_id:str}",
        operation_id="update_sandbox",
        summary="Extend a sandbox's TTL or change its network policy",
        opt={"routed": "sandbox", "scope": "sandboxes:write", "bound_token": "sandbox"},
    )
    async def update_sandbox(
        self,
        db: Db,
        runtimes: Runtimes,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        sandbox_id: FromPath[str],
        data: JSONBody[SandboxUpdate],
    ) -> Sandbox:
        return await updates.update_sandbox(db, runtimes, principal, audit_ctx, sandbox_id, data)

    @delete(
        "/{sandbox_id:str}",
        operation_id="delete_sandbox",
        summary="Stop and destroy a sandbox",
        opt={"routed": "sandbox", "scope": "sandboxes:write", "bound_token": "sandbox"},
    )
    async def delete_sandbox(
        self,
        db: Db,
        runtimes: Runtimes,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        sandbox_id: FromPath[str],
    ) -> None:
        await service.delete_sandbox(db, runtimes, principal, audit_ctx, sandbox_id)

    @post(
        "/{sandbox_id:str}/pause",
        operation_id="pause_sandbox",
        summary="Pause a sandbox: checkpoint it to its node's disk",
        description="Its memory, processes and files are checkpointed to the node's disk and "
        "it stops holding CPU and memory (state `paused`, with `pause_bytes`). It counts "
        "against the tenant's paused quotas then, and ends at `pause_expires_at` unless "
        "resumed. Background processes and running execs are kept and go on once it resumes "
        "(an exec's deadline counts only the time its sandbox ran). What the runtime could not "
        "keep (a connection open through the port route) is a 409 `sandbox_busy` naming it; a "
        "runtime that cannot pause, a 422 `pause_unsupported`. Pausing a paused sandbox "
        "answers it as is.",
        opt={"routed": "sandbox", "scope": "sandboxes:write", "bound_token": "sandbox"},
        status_code=200,
    )
    async def pause_sandbox(
        self,
        db: Db,
        runtimes: Runtimes,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        sandbox_id: FromPath[str],
    ) -> Sandbox:
        assert principal.tenant_id is not None
        return await pause.pause_sandbox(
            db, runtimes, principal.tenant_id, principal.sandbox_id, audit_ctx, sandbox_id
        )

    @post(
        "/{sandbox_id:str}/resume",
        operation_id="resume_sandbox",
        summary="Resume a paused sandbox",
        description="Restores the sandbox in place: its processes go on from where they were "
        "(open network connections do not survive). The response's `Airlock-Woke-Ms` header "
        "says how long it took. Any exec or file call on a paused sandbox resumes it the same "
        "way first. On many nodes, a node with no room for it gives it to one that has some "
        "and it starts there from its checkpoint (audit `sandbox.move`); no room anywhere is a "
        "503 with Retry-After (it stays paused); the tenant's running quotas count it again "
        "(429).",
        opt={"routed": "sandbox", "scope": "sandboxes:write", "bound_token": "sandbox"},
        status_code=200,
    )
    async def resume_sandbox(
        self,
        resumes: ResumesDep,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        sandbox_id: FromPath[str],
    ) -> Sandbox:
        assert principal.tenant_id is not None
        sandbox, took = await resumes.resume(
            principal.tenant_id, principal.sandbox_id, audit_ctx, sandbox_id
        )
        if took is not None:
            resume.woke_ms.set(took)
        return sandbox

    @post(
        "/{sandbox_id:str}/fork",
        operation_id="fork_sandbox",
        summary="Start a new sandbox from a live snapshot of this one",
        description="The child has everything the parent had in memory and in its files at "
        "that moment, its caps, network policy, environment and labels (unless given), and "
        "its own id, hostname and randomness; the two diverge from then on. It counts against "
        "the tenant's quotas as a new sandbox. Its processes are the parent's, those of the "
        "parent's running execs too (the execs stay the parent's). What the runtime could not "
        "keep (a connection open through the port route) is a 409 `sandbox_busy` naming it, "
        "and no child is made; a paused parent is woken first.",
        opt={"routed": "sandbox", "scope": "sandboxes:write"},
        status_code=201,
    )
    async def fork_sandbox(
        self,
        db: Db,
        runtimes: Runtimes,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        node: ThisNode,
        wake: Waker,
        sandbox_id: FromPath[str],
        data: JSONBody[SandboxFork],
        exec_runner: ExecRunnerDep,
    ) -> Sandbox:
        return await fork.fork_sandbox(
            db,
            runtimes,
            principal,
            audit_ctx,
            sandbox_id,
            data,
            node=node,
            wake=wake,
            secrets=exec_runner.secrets,
        )
