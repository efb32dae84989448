"""Per-request facts that services need: the principal, the audit context, and the sandbox a
call is for."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath

from service.audit.recorder import AuditContext
from service.auth.principal import Principal
from service.deps import Audit, CurrentPrincipal, Db, ExecRunnerDep, Runtimes, Waker
from service.execs.service import ExecCall
from service.files.target import SandboxCall
from service.nodes.credentials import Forwarded
from service.requestid import request_id_for


def audit_context(request: Request[Any, Any, Any]) -> AuditContext:
    principal: Principal = request.user
    if isinstance(request.auth, Forwarded):  # routed here by an API replica
        client = request.auth.client
    else:
        client = request.client.host if request.client else None
    return AuditContext(
        actor=principal.actor, request_id=request_id_for(request.scope), client=client
    )


def provide_principal(request: Request[Any, Any, Any]) -> Principal:
    return request.user


def provide_audit_context(request: Request[Any, Any, Any]) -> AuditContext:
    return audit_context(request)


def provide_sandbox_call(
    db: Db,
    runtimes: Runtimes,
    wake: Waker,
    principal: CurrentPrincipal,
    audit_ctx: Audit,
    sandbox_id: FromPath[str],
) -> SandboxCall:
    return SandboxCall(db, runtimes, wake, principal, audit_ctx, sandbox_id)


# For a controller whose routes are calls on the sandbox of their path: `dependencies=SANDBOX_CALL`.
SandboxCallDep = NamedDependency[SandboxCall]
SANDBOX_CALL = {"call": Provide(provide_sandbox_call, sync_to_thread=False)}


def provide_exec_call(
    db: Db,
    exec_runner: ExecRunnerDep,
    principal: CurrentPrincipal,
    audit_ctx: Audit,
    sandbox_id: FromPath[str],
    exec_id: FromPath[str],
) -> ExecCall:
    return ExecCall(db, exec_runner, principal, audit_ctx, sandbox_id, exec_id)


# For a route on the exec of its path: `dependencies=EXEC_CALL`.
ExecCallDep = NamedDependency[ExecCall]
EXEC_CALL = {"exec_call": Provide(provide_exec_call, sync_to_thread=False)}
