"""The ASGI side of NodeRouter (service.nodes.routing): runs after authentication, before the
route's handler, and sends a sandbox's calls to its node, following a sandbox that moved.

On a node, and for a call a replica forwarded to the all-in-one server, it only checks that the
sandbox is this node's (`sandbox_moved` otherwise): a forwarded call is never sent on again.
On a replica (or the all-in-one server with other nodes on its database), a create goes where
placement says and a sandbox's call to its node; when the node answers `sandbox_moved` and the
request's body is whole here, the call goes on to the node named, at most MOVES_FOLLOWED times.
On a replica, a download that carries the mark of the nginx in front is handed to nginx to fetch
from the node (service.nodes.offload).
"""

from __future__ import annotations

import logging
from typing import Any

from litestar.connection import ASGIConnection

from service.auth.principal import Principal
from service.errors import (
    MOVED_HEADER,
    NodeUnavailable,
    NotFound,
    SandboxMoved,
    SandboxNotUsable,
)
from service.middleware.auth import authorize
from service.nodes import offload
from service.nodes.credentials import Forwarded
from service.nodes.proxy import SMALL_BODY, Moved, read_all
from service.nodes.routing import NodeRouter
from service.settings import Role

log = logging.getLogger("airlock.nodes.routing")

# How many times one call follows a sandbox that moved.
MOVES_FOLLOWED = 3


class RoutingMiddleware:
    """See the module's words."""

    def __init__(self, app: Any, router: NodeRouter) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        router = self.router
        handler = scope.get("route_handler")
        routed = handler.opt.get("routed") if handler is not None else None
        principal = scope.get("user")
        # A call a replica forwarded here is this node's to answer, never sent on again.
        forwarded = router.node.role == Role.NODE or isinstance(scope.get("auth"), Forwarded)
        if (
            routed == "sandbox"
            and forwarded
            and isinstance(principal, Principal)
            and principal.tenant_id is not None
            and "sandbox_id" in scope.get("path_params", {})
        ):
            await self._check_owned(principal, scope["path_params"]["sandbox_id"])
        if (
            routed is None
            or forwarded
            or router.alone
            or scope["type"] not in ("http", "websocket")
            or not isinstance(principal, Principal)
            or principal.tenant_id is None
            or principal.is_operator
        ):
            await self.app(scope, receive, send)
            return
        # Before anything is forwarded, this process refuses what the node would refuse (scope,
        # a bound token's sandbox); the node's guard checks again. A call this process answers
        # itself is checked by the route's own guard (and here too only if it then follows a
        # move).
        checked = False

        async def check() -> None:
            nonlocal checked
            if not checked:
                await authorize(ASGIConnection(scope=scope, receive=receive), handler)
                checked = True

        if routed == "create":
            if router.node.id is not None:  # this process's node takes its own creates
                await self.app(scope, receive, send)
                return
            await check()
            await router.create(scope, receive, send, principal)
            return
        sandbox_id = scope["path_params"]["sandbox_id"]
        body: bytes | None = None
        if scope["type"] == "websocket":
            router.owners.forget(sandbox_id)  # long-lived: where it is now, not what was cached
        elif scope["type"] == "http":
            body = await _whole_if_small(scope, receive)
        for _ in range(MOVES_FOLLOWED):
            found, node = await router.owners.lookup(principal.tenant_id, sandbox_id)
            if not found and router.node.id is None:
                # A replica has no runtime to answer with: what is not the tenant's is a 404
                # here, before a handler asks for one (once the token may ask at all).
                await check()
                raise NotFound(f"no sandbox {sandbox_id}")
            if node is None or node == router.node.id:
                if await self._here(scope, receive, send, body) is None:
                    return
                router.owners.forget(sandbox_id)
                continue
            await check()
            if await router.addresses.is_lost(node):
                router.owners.forget(sandbox_id)  # moved off the lost node since it was cached?
                if await router.owners.owner(principal.tenant_id, sandbox_id) != node:
                    continue
                # Its sandboxes failed with it: what is left is the record, kept here.
                if scope.get("method") in ("DELETE", "PATCH"):
                    await self.app(scope, _replay(body, receive), send)
                    return
                raise SandboxNotUsable(
                    f"sandbox {sandbox_id} failed: node_lost (its node {node} was lost)",
                    extra={"state": "failed", "reason": "node_lost"},
                )
            if offload.wanted(scope, handler.opt):  # the proxy in front fetches it itself
                await offload.redirect(router.proxy, scope, send, node, principal)
                return
            if scope["type"] == "websocket":  # a sandbox's port, relayed message by message
                await router.proxy.websocket(scope, receive, send, node, principal)
                return
            try:
                answered = await router.proxy.forward(scope, receive, send, node, principal, body)
            except Moved as moved:
                log.info("sandbox %s moved from node %s to %s", sandbox_id, node, moved.node_id)
                continue
            if not answered:
                raise NodeUnavailable(f"node {node}, which holds this sandbox, cannot be reached")
            return
        raise NodeUnavailable(f"sandbox {sandbox_id} is moving between nodes: retry")

    async def _here(self, scope: Any, receive: Any, send: Any, body: bytes | None) -> str | None:
        """This process's node answers. When it says the sandbox moved (a paused one its node
        had no room for) and the body is whole here, that answer is held back and the node it
        moved to is returned, for the call to follow it."""
        if body is None:
            await self.app(scope, receive, send)
            return None
        moved: str | None = None

        async def watched(message: dict[str, Any]) -> None:
            nonlocal moved
            if message["type"] == "http.response.start" and message["status"] == 503:
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                if MOVED_HEADER.lower().encode() in headers:
                    moved = headers[MOVED_HEADER.lower().encode()].decode("latin-1")
                    return
            if moved is None:
                await send(message)

        await self.app(scope, _replay(body, receive), watched)
        return moved

    async def _check_owned(self, principal: Principal, sandbox_id: str) -> None:
        """On a node: the sandbox is this node's, or the call came by a stale route."""
        router = self.router
        assert principal.tenant_id is not None
        owner = await router.owners.owner(principal.tenant_id, sandbox_id)
        if owner is not None and owner != router.node.id:
            router.owners.forget(sandbox_id)  # read again: a cached owner may be the stale one
            owner = await router.owners.owner(principal.tenant_id, sandbox_id)
            if owner is not None and owner != router.node.id:
                raise SandboxMoved(sandbox_id, owner)


async def _whole_if_small(scope: dict[str, Any], receive: Any) -> bytes | None:
    """The request's body read whole when it is small (so the call can be sent to a second
    node if the first says the sandbox moved); None for an upload, streamed as it comes."""
    length = 0
    for k, v in scope["headers"]:
        name = k.lower()
        if name == b"transfer-encoding":
            return None
        if name == b"content-length":
            length = int(v)
    if length > SMALL_BODY:
        return None
    return await read_all(receive) if length else b""


def _replay(body: bytes | None, receive: Any) -> Any:
    """`receive`, with a body already read given back first."""
    if body is None:
        return receive
    given = False

    async def replayed() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
