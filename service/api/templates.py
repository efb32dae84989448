from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, delete, get, post
from litestar.params import FromPath, JSONBody, QueryParameter

from service.deps import Audit, CurrentPrincipal, Db, DbSession, Runtimes, ThisNode
from service.templates import service
from service.templates.schemas import Template, TemplateCreate, TemplatePage

Force = Annotated[
    bool, QueryParameter(description="Delete even while sandboxes or pool members use it")
]


class TemplateController(Controller):
    path = "/v1/templates"
    tags = ["templates"]
    # The operator's templates are shared with every tenant.
    opt = {"operator_allowed": True}

    @post(
        "/",
        operation_id="create_template",
        summary="Create a template, or a new version of one; built in the background",
        status_code=202,
        opt={"scope": "templates:write"},
    )
    async def create_template(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        data: JSONBody[TemplateCreate],
    ) -> Response[Template]:
        template = await service.create_template(db_session, principal, audit_ctx, data)
        return Response(template, status_code=202)

    @get(
        "/",
        operation_id="list_templates",
        summary="List templates (the tenant's own and the shared ones)",
        opt={"scope": "templates:read"},
    )
    async def list_templates(
        self, db_session: DbSession, principal: CurrentPrincipal
    ) -> TemplatePage:
        return await service.list_templates(db_session, principal)

    @get(
        "/{name:str}",
        operation_id="get_template",
        summary="Get a template with its versions and build logs",
        opt={"scope": "templates:read"},
    )
    async def get_template(
        self, db_session: DbSession, principal: CurrentPrincipal, name: FromPath[str]
    ) -> Template:
        return await service.get_template(db_session, principal, name)

    @delete(
        "/{name:str}",
        operation_id="delete_template",
        summary="Delete a template, its versions, snapshots and pools",
        opt={"scope": "templates:write"},
    )
    async def delete_template(
        self,
        db: Db,
        runtimes: Runtimes,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        request: Request[Any, Any, Any],
        node: ThisNode,
        name: FromPath[str],
        force: Force = False,
    ) -> None:
        state = request.app.state
        await service.delete_template(
            db,
            runtimes,
            principal,
            audit_ctx,
            name,
            force=force,
            credentials=state.node_credentials,
            local_node=node.id,
        )
