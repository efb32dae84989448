from __future__ import annotations

from litestar import Controller, get, patch, post
from litestar.params import FromPath, JSONBody

from service.apikeys.schemas import ApiKeyCreate, ApiKeyCreated
from service.deps import AppSettings, Audit, DbSession, Limit
from service.pagination import DEFAULT_LIMIT, cursor_parameter, id_pattern
from service.tenants import service
from service.tenants.schemas import (
    Quotas,
    Tenant,
    TenantCreate,
    TenantCreated,
    TenantPage,
    TenantUpdate,
)

Cursor = cursor_parameter(id_pattern("ten"))


class TenantController(Controller):
    path = "/v1/tenants"
    tags = ["tenants"]
    opt = {"operator": True}

    @post("/", operation_id="create_tenant", summary="Create a tenant and its first API key")
    async def create_tenant(
        self,
        db_session: DbSession,
        audit_ctx: Audit,
        settings: AppSettings,
        data: JSONBody[TenantCreate],
    ) -> TenantCreated:
        defaults = Quotas(audit_retention_days=settings.audit_retention_days)
        return await service.create_tenant(db_session, audit_ctx, data, defaults)

    @get("/", operation_id="list_tenants", summary="List tenants")
    async def list_tenants(
        self,
        db_session: DbSession,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> TenantPage:
        return await service.list_tenants(db_session, limit=limit, cursor=cursor)

    @get("/{tenant_id:str}", operation_id="get_tenant", summary="Get a tenant")
    async def get_tenant(self, db_session: DbSession, tenant_id: FromPath[str]) -> Tenant:
        return await service.read_tenant(db_session, tenant_id)

    @patch("/{tenant_id:str}", operation_id="update_tenant", summary="Change quotas or suspend")
    async def update_tenant(
        self,
        db_session: DbSession,
        audit_ctx: Audit,
        tenant_id: FromPath[str],
        data: JSONBody[TenantUpdate],
    ) -> Tenant:
        return await service.update_tenant(db_session, audit_ctx, tenant_id, data)

    @post(
        "/{tenant_id:str}/api-keys",
        operation_id="create_tenant_api_key",
        summary="Create an API key for a tenant (shown once)",
    )
    async def create_tenant_api_key(
        self,
        db_session: DbSession,
        audit_ctx: Audit,
        tenant_id: FromPath[str],
        data: JSONBody[ApiKeyCreate],
    ) -> ApiKeyCreated:
        return await service.create_tenant_key(db_session, audit_ctx, tenant_id, data)
