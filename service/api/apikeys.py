from __future__ import annotations

from litestar import Controller, delete, get, post
from litestar.params import FromPath, JSONBody

from service.apikeys import service
from service.apikeys.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyPage
from service.deps import Audit, CurrentPrincipal, DbSession, Limit
from service.pagination import DEFAULT_LIMIT, cursor_parameter, id_pattern

Cursor = cursor_parameter(id_pattern("key"))


class ApiKeyController(Controller):
    path = "/v1/api-keys"
    tags = ["api keys"]
    opt = {"scope": "keys:write"}

    @get("/", operation_id="list_api_keys", summary="List the tenant's API keys")
    async def list_api_keys(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> ApiKeyPage:
        assert principal.tenant_id is not None
        return await service.list_keys(db_session, principal.tenant_id, limit=limit, cursor=cursor)

    @post("/", operation_id="create_api_key", summary="Create an API key (shown once)")
    async def create_api_key(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        data: JSONBody[ApiKeyCreate],
    ) -> ApiKeyCreated:
        return await service.create_for_principal(db_session, audit_ctx, principal, data)

    @delete("/{key_id:str}", operation_id="revoke_api_key", summary="Revoke an API key")
    async def revoke_api_key(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        key_id: FromPath[str],
    ) -> None:
        assert principal.tenant_id is not None
        await service.revoke_key(db_session, audit_ctx, principal.tenant_id, key_id)
