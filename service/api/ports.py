"""A sandbox's ports: preview links, and the proxy route (HTTP and WebSocket).

The proxy route takes every method on `/v1/sandboxes/{id}/ports/{port}/{path...}`; it is left
out of the OpenAPI document (a pass-through has no schema). Preview links are made on their
own path, `/v1/sandboxes/{id}/port-links`, so no path of the sandbox's server is shadowed.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, WebSocket, post, route, websocket
from litestar.params import FromPath, JSONBody
from litestar.types import ASGIApp

from service.context import SANDBOX_CALL, SandboxCallDep, audit_context
from service.deps import AppSettings, Audit, CurrentPrincipal, DbSession
from service.files.target import SandboxCall
from service.ports import service
from service.ports.http import HttpProxy
from service.ports.landing import landing
from service.ports.schemas import PreviewLink, PreviewLinkCreate
from service.ports.upstream import upstream
from service.ports.websocket import SocketRelay

PATHS = [
    "/v1/sandboxes/{sandbox_id:str}/ports/{port:str}",
    "/v1/sandboxes/{sandbox_id:str}/ports/{port:str}/{path:path}",
]
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
# Routed to the sandbox's node; a caller without `ports` gets a 404 (as for another tenant's
# sandbox); a preview link stands in for a bearer; the body passes through untouched.
PROXY = {
    "routed": "sandbox",
    "scope": "ports",
    "hidden": True,
    "preview": True,
    "bound_token": "sandbox",
    "streamed_body": True,
}


class PortLinkController(Controller):
    path = "/v1/sandboxes/{sandbox_id:str}/port-links"
    tags = ["ports"]

    @post(
        "/",
        operation_id="create_port_link",
        summary="Make a signed, expiring preview link to a port of the sandbox",
        opt={"scope": "ports", "hidden": True, "bound_token": "sandbox"},
    )
    async def create_port_link(
        self,
        request: Request[Any, Any, Any],
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        settings: AppSettings,
        sandbox_id: FromPath[str],
        data: JSONBody[PreviewLinkCreate],
    ) -> PreviewLink:
        links = request.app.state.preview_links
        base = str(request.base_url)
        return await service.create_link(
            db_session, audit_ctx, links, principal, sandbox_id, data, base,
            settings.preview_domain,
        )  # fmt: skip


@route(
    PATHS,
    http_method=METHODS,
    include_in_schema=False,
    opt=PROXY,
    tags=["ports"],
    request_max_body_size=None,  # streamed to the sandbox's server, which decides
    dependencies=SANDBOX_CALL,
)
async def proxy_port(
    request: Request[Any, Any, Any],
    call: SandboxCallDep,
    settings: AppSettings,
    port: FromPath[str],
) -> ASGIApp:
    port_number = service.parse_port(port)
    host = service.upstream_host(call.sandbox_id, port_number, settings.preview_domain)
    target = upstream(request.scope, host, request.app.state.preview_links)
    moved = landing(request.scope, target)
    if moved is not None:  # a browser: the page again, without the link in its address
        return moved
    opened = await service.open_port(call, port, "http")
    return HttpProxy(opened.connection, target)


@websocket(PATHS, opt=PROXY)
async def proxy_port_socket(socket: WebSocket[Any, Any, Any]) -> None:
    state = socket.app.state
    sandbox_id, port = socket.path_params["sandbox_id"], socket.path_params["port"]
    host = service.upstream_host(
        sandbox_id, service.parse_port(port), state.settings.preview_domain
    )
    target = upstream(socket.scope, host, state.preview_links)
    context = audit_context(socket)  # type: ignore[arg-type]
    call = SandboxCall(
        state.sessionmaker, state.runtimes, state.wake, socket.user, context, sandbox_id
    )
    opened = await service.open_port(call, port, "websocket")
    try:
        relay = SocketRelay(opened.connection, target, socket.scope)
        subprotocol = await relay.handshake()
        cookie = [(b"set-cookie", target.set_cookie)] if target.set_cookie else []
        await socket.accept(subprotocols=subprotocol, headers=cookie)
        await relay.run(socket.receive, socket.send)
    finally:
        # Whatever ended it (a caller gone before the accept, too): the channel is closed, so
        # the sandbox is not held busy (no pause, no snapshot) by a connection nobody has.
        await opened.connection.close()
