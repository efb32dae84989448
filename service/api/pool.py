from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, put
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter

from service.deps import Audit, DbSession
from service.pool import service
from service.pool.schemas import PoolOverview, PoolStatus, PoolTargetSet

Pool = NamedDependency[service.WarmPool]
TenantParam = Annotated[
    str | None, QueryParameter(name="tenant", description="A tenant's own template of that name")
]


class PoolController(Controller):
    path = "/v1/pool"
    tags = ["pool"]
    opt = {"operator": True}

    @get("/", operation_id="get_pool", summary="Pool targets, members, claims, misses, refills")
    async def get_pool(self, db_session: DbSession, pool: Pool) -> PoolOverview:
        return await service.overview(db_session, pool)

    @put(
        "/{template:str}",
        operation_id="set_pool_target",
        summary="Keep N started sandboxes of a template and size",
    )
    async def set_pool_target(
        self,
        db_session: DbSession,
        pool: Pool,
        audit_ctx: Audit,
        template: FromPath[str],
        data: JSONBody[PoolTargetSet],
        tenant: TenantParam = None,
    ) -> PoolStatus:
        return await service.set_target(db_session, pool, audit_ctx, template, data, tenant)
