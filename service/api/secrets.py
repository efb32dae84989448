from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, delete, get, put
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, PathParameter

from service.deps import AppSettings, Audit, CurrentPrincipal, DbSession, Limit
from service.pagination import DEFAULT_LIMIT, cursor_parameter
from service.secrets import service
from service.secrets.schemas import NAME_PATTERN, Secret, SecretPage, SecretPut

Cursor = cursor_parameter(NAME_PATTERN)
SecretName = Annotated[str, PathParameter(pattern=NAME_PATTERN, description="The secret's name")]


class SecretController(Controller):
    path = "/v1/secrets"
    tags = ["secrets"]

    @put(
        "/{name:str}",
        operation_id="put_secret",
        summary="Create or replace a secret (its value is never returned)",
        description="201 when created, 200 when replaced. The value is at most 64 KiB.",
        opt={"scope": "secrets:write"},
        responses={201: ResponseSpec(Secret, description="The secret was created")},
    )
    async def put_secret(
        self,
        db_session: DbSession,
        settings: AppSettings,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        name: SecretName,
        data: JSONBody[SecretPut],
    ) -> Response[Secret]:
        secret, created = await service.put_secret(
            db_session, settings, principal, audit_ctx, name, data
        )
        return Response(secret, status_code=201 if created else 200)

    @get(
        "/",
        operation_id="list_secrets",
        summary="List the tenant's secrets: names and times, never values",
        opt={"scope": "secrets:read"},
    )
    async def list_secrets(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> SecretPage:
        return await service.list_secrets(db_session, principal, limit=limit, cursor=cursor)

    @delete(
        "/{name:str}",
        operation_id="delete_secret",
        summary="Delete a secret",
        opt={"scope": "secrets:write"},
    )
    async def delete_secret(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        name: SecretName,
    ) -> None:
        await service.delete_secret(db_session, principal, audit_ctx, name)
