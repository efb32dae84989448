"""Downloads that a reverse proxy in front of an API replica fetches from the node itself.

A replica that streams a download from a node copies every byte through Python: read from the
node, written to the client. On a 2-core host that costs about 1 ms of CPU per MiB. When a
proxy that follows internal redirects stands in front of the replica (nginx, configured by
helm/airlock/files/proxy.conf), the replica does what needs the database and the keys: it
authenticates and authorizes the call, and finds the sandbox's node. It then answers with an
empty 200 whose `X-Accel-Redirect` sends the proxy to its internal location LOCATION. That
location fetches the download from the node, with the URL and the node token taken from the
answer's headers, and passes it on to the client as it comes. The node checks the token as it
checks any forwarded call, and audits the download.

Only a request from a trusted proxy (AIRLOCK_TRUSTED_PROXIES) that carries `Airlock-Offload: 1`
is answered so. The node token is in the answer's headers, and only a proxy that follows the
redirect (and never passes such an answer on) may be given it. The proxy sets the mark on what
it sends to the replica, and replaces a client's own. When the node answers 502, 503 or 504
(it cannot be reached, or the sandbox moved), the proxy asks the replica again without the
mark, and the replica forwards the call itself (and follows a move).
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from service import telemetry
from service.auth.principal import Principal
from service.nodes.routing import NodeRouter
from service.requestid import request_id_for

# The proxy's internal location that fetches from a node (helm/airlock/files/proxy.conf).
LOCATION = "/_airlock/node"
MARK = (b"airlock-offload", b"1")
# Where this process notes that a request came from a trusted proxy.
PROXIED = "airlock.proxied"


class TrustedProxies:
    """ASGI: a request from a trusted proxy is from the client its X-Forwarded-For names
    (uvicorn's ProxyHeadersMiddleware), and is marked PROXIED for the offload."""

    def __init__(self, app: Any, proxies: tuple[str, ...]) -> None:
        self.proxies = frozenset(proxies)
        self.forwarded = ProxyHeadersMiddleware(app, trusted_hosts=list(proxies))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            if client is not None and client[0] in self.proxies:
                scope[PROXIED] = True
        await self.forwarded(scope, receive, send)


def wanted(scope: dict[str, Any], opt: dict[str, Any]) -> bool:
    """A download the proxy in front can fetch from the node itself."""
    return bool(
        scope.get(PROXIED)
        and scope["type"] == "http"
        and scope["method"] == "GET"
        and opt.get("offload")
        and MARK in scope["headers"]
    )


async def redirect(
    router: NodeRouter, scope: dict[str, Any], send: Any, node_id: str, principal: Principal
) -> None:
    """Answer with the internal redirect that sends the proxy to the node."""
    attributes = {"airlock.node_id": node_id, "url.path": scope["path"]}
    with telemetry.span("airlock.offload", attributes, SpanKind.CLIENT):
        url, token = await router.target(scope, node_id, principal)
        headers = [
            (b"x-accel-redirect", LOCATION.encode()),
            (b"airlock-node-url", url.encode("latin-1")),
            (b"airlock-node-authorization", f"Bearer {token}".encode()),
            (b"airlock-node-request-id", request_id_for(scope).encode("latin-1")),
            (b"content-length", b"0"),
        ]
        # The node's server span continues this one, as for a call forwarded in Python.
        for name, value in telemetry.trace_headers().items():
            headers.append((f"airlock-node-{name}".encode(), value.encode("latin-1")))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
