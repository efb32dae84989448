from __future__ import annotations

from litestar import Controller, get, post
from litestar.params import FromPath

from service.deps import Audit, DbSession
from service.nodes import service
from service.nodes.schemas import Node, NodeList


class NodeController(Controller):
    path = "/v1/nodes"
    tags = ["nodes"]
    opt = {"operator": True}

    @get("/", operation_id="list_nodes", summary="List the nodes, their capacity and allocation")
    async def list_nodes(self, db_session: DbSession) -> NodeList:
        return await service.list_nodes(db_session)

    @post(
        "/{node_id:str}/drain",
        operation_id="drain_node",
        summary="Place no new sandboxes on a node (the ones it holds stay)",
        status_code=200,
    )
    async def drain_node(
        self, db_session: DbSession, audit_ctx: Audit, node_id: FromPath[str]
    ) -> Node:
        return await service.drain(db_session, audit_ctx, node_id)

    @post(
        "/{node_id:str}/ready",
        operation_id="ready_node",
        summary="Place sandboxes on a drained node again",
        status_code=200,
    )
    async def ready_node(
        self, db_session: DbSession, audit_ctx: Audit, node_id: FromPath[str]
    ) -> Node:
        return await service.undrain(db_session, audit_ctx, node_id)
