"""Per-request facts that services need: the principal and the audit context."""

from __future__ import annotations

from typing import Any

from litestar import Request

from service.audit.recorder import AuditContext
from service.auth.principal import Principal
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
