"""Authentication for every route by default; a route opts out with `opt={"public": True}`.

Authorisation is declared on the handler: `opt={"scope": "keys:write"}` or
`opt={"operator": True}`, enforced by `authorize` (a guard applied app-wide).

A route may say that a missing scope is answered as for a sandbox that is not there
(`opt={"hidden": True}`: a 404, the port routes), and that it takes a preview link instead of a
bearer (`opt={"preview": True}`, see service/ports/links.py).

A token bound to one sandbox may use only the routes that say they are about it:
`opt={"bound_token": "sandbox"}` (the `sandbox_id` path parameter must be its sandbox, any
other is a 404) or `"self"` (the token acting on itself). Every other route refuses it, so a
route added later is closed to it until it declares otherwise.

OPTIONS is authenticated like every other method (Litestar would let it through without a
credential, and a handler that takes OPTIONS itself, the port route, would then run with no
principal). The answer Litestar makes on its own to OPTIONS (204, `Allow`) names a path's
methods and nothing about its objects: `settle_options_answers` opens it to any authenticated
caller, and to everyone on a path whose handlers are all public.
"""

from __future__ import annotations

from typing import Any

from litestar import Litestar
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult
from litestar.routes import HTTPRoute
from litestar.types import ASGIApp
from opentelemetry import trace

from service.auth.authenticate import bearer_credential
from service.auth.principal import Principal, PrincipalKind
from service.errors import Forbidden, MissingScope, NotFound, Unauthenticated
from service.nodes.credentials import looks_like_node_token
from service.ports.access import preview_principal
from service.settings import Role

# Marks the handler Litestar adds to a path for OPTIONS (see settle_options_answers).
OPTIONS_ANSWER = "options_answer"


class BearerAuthMiddleware(AbstractAuthenticationMiddleware):
    def __init__(self, app: ASGIApp, **options: Any) -> None:
        # No method goes unauthenticated (Litestar's default exempts OPTIONS).
        super().__init__(app, exclude_http_methods=(), **options)

    async def authenticate_request(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        try:
            return await self._authenticate(connection)
        except Unauthenticated:
            # A caller who is no one is counted by its address (service/ratelimit): past
            # that rate it is told to slow down (429), not to try another credential.
            limiter = connection.app.state.limiter
            if limiter is not None:
                await limiter.admit_anonymous(connection.scope)
            raise

    async def _authenticate(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        state = connection.app.state
        span = trace.get_current_span()
        template = connection.scope.get("path_template")
        if template and span.is_recording():
            # The span began before routing, named by the raw path (ids in it): name it by the
            # route instead, as the metrics are.
            # A WebSocket has no method: its span is named by its kind.
            method = connection.scope.get("method") or connection.scope["type"].upper()
            span.update_name(f"{method} {template}")
            span.set_attribute("http.route", template)
        authorization = connection.headers.get("authorization")
        role = state.settings.role
        handler = connection.scope.get("route_handler")
        if authorization is None and role != Role.NODE and handler and handler.opt.get("preview"):
            # A sandbox's port reached through a preview link (service/ports/access.py).
            principal = await preview_principal(connection)
            return AuthenticationResult(user=principal, auth=principal)
        if role == Role.NODE or (
            role == Role.ALL and looks_like_node_token(bearer_credential(authorization))
        ):
            # A node serves the API replicas (the caller comes inside their token) and the
            # other nodes (internal routes); the all-in-one server is a node too.
            forwarded = state.node_credentials.verify(bearer_credential(authorization))
            return AuthenticationResult(user=forwarded.principal, auth=forwarded)
        principal = await state.authenticator.authenticate(authorization)
        span.set_attribute("airlock.principal.kind", principal.kind.value)
        if principal.tenant_id is not None:
            span.set_attribute("airlock.tenant_id", principal.tenant_id)
        return AuthenticationResult(user=principal, auth=principal)


# The OpenAPI document and its renderers are public, like the JWKS.
PUBLIC_PATHS = ["^/schema"]


async def authorize(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    if handler.opt.get("public") or handler.opt.get(OPTIONS_ANSWER):
        return
    if connection.url.path.startswith("/schema"):
        return
    principal: Principal = connection.user
    if (principal.kind is PrincipalKind.NODE) != bool(handler.opt.get("internal")):
        # Internal routes are for the nodes of the deployment, and only they are.
        raise Forbidden(
            "this route is for the nodes of this deployment"
            if handler.opt.get("internal")
            else "a node's call reaches the internal routes only"
        )
    if principal.kind is PrincipalKind.NODE:
        return
    if handler.opt.get("operator"):
        if not principal.is_operator:
            raise Forbidden("this route is for the operator")
        return
    if principal.is_operator and not handler.opt.get("operator_allowed"):
        raise Forbidden("the operator acts on tenants through /v1/tenants")
    if principal.sandbox_id is not None:
        _bound_token_may_use(connection, handler, principal.sandbox_id)
    if handler.opt.get("authenticated"):
        return
    scope = handler.opt.get("scope")
    if scope is None:
        # A route that declares nothing is refused rather than left open by accident.
        raise Forbidden("route has no declared authorisation")
    if not principal.has_scope(scope):
        if handler.opt.get("hidden"):  # said as for another tenant's: ids are not probed
            raise NotFound(f"no sandbox {connection.path_params.get('sandbox_id')}")
        raise MissingScope(f"requires the {scope!r} scope", extra={"required_scope": scope})


def _bound_token_may_use(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler, sandbox_id: str
) -> None:
    about = handler.opt.get("bound_token")
    if about == "self":
        return
    if about == "sandbox":
        asked = connection.path_params.get("sandbox_id")
        if asked != sandbox_id:
            raise NotFound(f"no sandbox {asked}")
        return
    raise Forbidden("a token bound to a sandbox can use only that sandbox's routes")


def settle_options_answers(app: Litestar) -> None:
    """Who may have the answer Litestar makes itself to OPTIONS on a path that declares no
    OPTIONS handler: anyone where every handler of the path is public, else any authenticated
    caller (the guard lets it through whatever the scopes; it says which methods exist)."""
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        declared = [h for h in route.route_handlers if not _made_by_litestar(h)]
        for handler in route.route_handlers:
            if _made_by_litestar(handler):
                handler.opt[OPTIONS_ANSWER] = True
                handler.opt["public"] = all(h.opt.get("public") for h in declared)


def _made_by_litestar(handler: BaseRouteHandler) -> bool:
    return getattr(handler.fn, "__module__", "") == HTTPRoute.__module__
