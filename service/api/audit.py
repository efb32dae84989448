from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, get
from litestar.params import FromQuery, QueryParameter
from msgspec import Meta

from service.audit import service
from service.audit.recorder import OPERATOR_CHAIN
from service.audit.schemas import AuditPage, AuditVerification
from service.db.base import as_utc
from service.deps import CurrentPrincipal, DbSession, Limit
from service.errors import NotFound, Unprocessable
from service.pagination import DEFAULT_LIMIT, SEQ_PATTERN, cursor_parameter

Cursor = cursor_parameter(SEQ_PATTERN)

TenantParam = Annotated[
    str | None,
    QueryParameter(
        name="tenant_id",
        description="Operator only: the tenant whose chain to read; `_operator` for the "
        "operator's own chain.",
    ),
]


Instant = Annotated[
    str | None,
    QueryParameter(format="date-time", max_length=64, description="An RFC 3339 date-time"),
]
_AWARE = Annotated[datetime, Meta(tz=True)]


def _instant(value: str | None, name: str) -> datetime | None:
    """An RFC 3339 date-time with its offset, as the document states (never a number)."""
    if value is None:
        return None
    try:
        return as_utc(msgspec.convert(value, _AWARE))
    except msgspec.ValidationError as exc:
        raise Unprocessable(f"`{name}` is not an RFC 3339 date-time with an offset") from exc


def _chain(principal: CurrentPrincipal, tenant_id: str | None) -> str:
    if principal.is_operator:
        return tenant_id or OPERATOR_CHAIN
    if tenant_id is not None and tenant_id != principal.tenant_id:
        # Another tenant's chain does not exist for this caller.
        raise NotFound(f"no tenant {tenant_id}")
    return principal.tenant_id or OPERATOR_CHAIN


class AuditController(Controller):
    path = "/v1/audit"
    tags = ["audit"]
    opt = {"scope": "audit:read", "operator_allowed": True}

    @get("/", operation_id="list_audit_events", summary="List audit events, newest first")
    async def list_audit_events(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        tenant_id: TenantParam = None,
        action: FromQuery[str | None] = None,
        target: FromQuery[str | None] = None,
        since: Instant = None,
        until: Instant = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> AuditPage:
        # `since` at or after `until` is an empty range: no events, not an error.
        return await service.list_events(
            db_session,
            _chain(principal, tenant_id),
            limit=limit,
            cursor=cursor,
            action=action,
            target=target,
            since=_instant(since, "since"),
            until=_instant(until, "until"),
        )

    @get(
        "/verify",
        operation_id="verify_audit_chain",
        summary="Check the hash chain from its last verified point and report the first broken "
        "link",
    )
    async def verify_audit_chain(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        tenant_id: TenantParam = None,
        full: Annotated[
            bool,
            QueryParameter(
                description="Walk the whole chain instead of starting at its last verified point"
            ),
        ] = False,
    ) -> AuditVerification:
        return await service.verify_chain(db_session, _chain(principal, tenant_id), full=full)
