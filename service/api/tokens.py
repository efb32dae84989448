from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post
from litestar.params import FromPath, JSONBody

from service.deps import Audit, CurrentPrincipal, DbSession
from service.tokens import service
from service.tokens.schemas import JWKS, TokenCreate, TokenCreated


class TokenController(Controller):
    path = "/v1/tokens"
    tags = ["tokens"]
    opt = {"authenticated": True}

    @post("/", operation_id="create_token", summary="Exchange an API key for a scoped JWT")
    async def create_token(
        self,
        request: Request[Any, Any, Any],
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        data: JSONBody[TokenCreate],
    ) -> TokenCreated:
        codec = request.app.state.token_codec
        return await service.issue_token(db_session, audit_ctx, codec, principal, data)

    @delete(
        "/{jti:str}",
        operation_id="revoke_token",
        summary="Revoke a token or preview link by its jti",
        description="A token's `jti` is in its claims and in the `token.issue` audit event; a "
        "preview link's is in the answer that made it and in its `port.link` event. New requests "
        "with either are refused from then on (a link's cookie too); a WebSocket already open "
        "runs on. Needs `keys:write`, except for a token "
        "revoking itself; a jti the tenant never issued is a 404.",
        opt={"bound_token": "self"},  # a bound token may revoke itself (and only itself)
    )
    async def revoke_token(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        jti: FromPath[str],
    ) -> None:
        await service.revoke_token(db_session, audit_ctx, principal, jti)


@get(
    "/.well-known/jwks.json",
    operation_id="get_jwks",
    summary="Public keys that verify Airlock tokens",
    opt={"public": True},
    tags=["tokens"],
    cache_control=None,
)
async def jwks(request: Request[Any, Any, Any]) -> JWKS:
    return JWKS(keys=request.app.state.keyring.jwks()["keys"])
