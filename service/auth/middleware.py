"""Authentication for every route by default; a route opts out with `opt={"public": True}`.

Authorisation is declared on the handler: `opt={"scope": "keys:write"}` or
`opt={"operator": True}`, enforced by `authorize` (a guard applied app-wide).
"""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult
from opentelemetry import trace

from service.auth.principal import Principal
from service.errors import Forbidden, MissingScope


class BearerAuthMiddleware(AbstractAuthenticationMiddleware):
    async def authenticate_request(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        authenticator = connection.app.state.authenticator
        principal = await authenticator.authenticate(connection.headers.get("authorization"))
        span = trace.get_current_span()
        span.set_attribute("airlock.principal.kind", principal.kind.value)
        if principal.tenant_id is not None:
            span.set_attribute("airlock.tenant_id", principal.tenant_id)
        return AuthenticationResult(user=principal, auth=principal)


# The OpenAPI document and its renderers are public, like the JWKS.
PUBLIC_PATHS = ["^/schema"]


async def authorize(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    if handler.opt.get("public") or connection.scope.get("method") == "OPTIONS":
        return
    if connection.url.path.startswith("/schema"):
        return
    principal: Principal = connection.user
    if handler.opt.get("operator"):
        if not principal.is_operator:
            raise Forbidden("this route is for the operator")
        return
    if principal.is_operator and not handler.opt.get("operator_allowed"):
        raise Forbidden("the operator acts on tenants through /v1/tenants")
    if principal.sandbox_id is not None and handler.opt.get("unbound_only"):
        # Keys and the tenant-wide audit log are beyond a token meant for one sandbox.
        raise Forbidden("a token bound to a sandbox cannot use this route")
    if handler.opt.get("authenticated"):
        return
    scope = handler.opt.get("scope")
    if scope is None:
        # A route that declares nothing is refused rather than left open by accident.
        raise Forbidden("route has no declared authorisation")
    if not principal.has_scope(scope):
        raise MissingScope(f"requires the {scope!r} scope", extra={"required_scope": scope})
