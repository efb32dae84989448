"""`/mcp`: the MCP tools (`airlock_sdk.mcp`) over streamable HTTP, inside the API.

The route authenticates like any other (a tenant's API key or token as `Authorization: Bearer`;
the operator and nodes are refused). Each tool then calls this same application's REST routes
in-process with the caller's credential, so a tool can do exactly what the credential can
through REST, and its calls are audited as REST calls are, under the MCP request's id and the
caller's address. The transport is stateless and answers JSON: any replica serves any MCP request.

The tools live in the client distribution (`airlock-client[mcp]`), which `sbx mcp` serves over
stdio. Without it installed, `/mcp` answers 503 and says what is missing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
from litestar import Litestar, asgi
from litestar.handlers.asgi_handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send

from service.auth.authenticate import bearer_credential
from service.errors import ServiceUnavailable
from service.requestid import HEADER as REQUEST_ID
from service.requestid import request_id_for

log = logging.getLogger(__name__)

PATH = "/mcp"
# The REST calls a tool makes go to the application itself, never over the network.
_SELF = "http://airlock.mcp"
# One tool call may wait for a command for as long as REST lets it (an exec's own deadline).
_CALL_TIMEOUT = httpx.Timeout(None, connect=10.0)


class McpEndpoint:
    """The mounted ASGI app; `lifespan` runs the MCP session manager with the application."""

    def __init__(self) -> None:
        self.app: Litestar | None = None
        self.manager: Any = None
        self.missing: str | None = None
        try:
            from airlock_sdk.mcp import build_server
            from mcp.server.transport_security import TransportSecuritySettings
        except ImportError as exc:
            self.missing = f"the MCP server is not installed here ({exc})"
            return
        server = build_server(self._connect)
        # Stateless, JSON answers: no session lives in a replica. DNS-rebinding protection is for
        # servers a browser can reach without credentials; every call here needs a bearer one.
        server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = server.session_manager

    @asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        self.app = app
        async with AsyncExitStack() as stack:
            if self.manager is not None:
                await stack.enter_async_context(self.manager.run())
            else:
                log.warning("/mcp is off: %s", self.missing)
            yield

    def route(self) -> ASGIRouteHandler:
        @asgi(
            PATH, is_mount=True, copy_scope=True, opt={"authenticated": True, "bound_token": "self"}
        )
        async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
            if self.manager is None:
                raise ServiceUnavailable(f"{self.missing}: install airlock-client[mcp]")
            request_id_for(scope)  # the MCP request's id, carried into the tools' REST calls
            await self.manager.handle_request(scope, receive, send)

        return mcp

    @asynccontextmanager
    async def _connect(self, ctx: Any) -> AsyncIterator[Any]:
        from airlock_client import AuthenticatedClient

        assert self.app is not None, "the application's lifespan sets it before any request"
        request = ctx.request_context.request
        authorization = request.headers.get("authorization")
        client = request.client.host if request.client else "mcp"
        headers = {}
        if rid := request.scope.get("state", {}).get("request_id"):
            headers[REQUEST_ID] = rid
        rest = AuthenticatedClient(
            base_url=_SELF,
            token=bearer_credential(authorization),
            headers=headers,
            timeout=_CALL_TIMEOUT,
            raise_on_unexpected_status=False,
            httpx_args={"transport": httpx.ASGITransport(app=self.app, client=(client, 0))},
        )
        try:
            yield rest
        finally:
            await rest.get_async_httpx_client().aclose()
