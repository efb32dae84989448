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

Only a request that carries the proxy's mark is answered so: `Airlock-Offload` with the offload
key (AIRLOCK_OFFLOAD_KEY), a secret the proxy's configuration and the replica share, and which
the proxy sets on everything it sends (a client's own header is replaced). Without it the
replica serves the download itself. The node token must never reach a client, and the key
must never leave this process: ProxyHeaders takes the mark off every request as it arrives,
so no node and no sandbox's web server (the port routes pass requests' headers on) sees it.

And what the proxy acts on comes from this process alone: ProxyHeaders drops X-Accel-* and
Airlock-Offload-* from every answer but redirect()'s, so neither a sandbox's web server (its
answers go out through the port routes) nor a node can send the proxy elsewhere.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import SpanKind
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from service import telemetry
from service.auth.principal import Principal
from service.nodes.proxy import TRACE_CONTEXT, NodeProxy
from service.requestid import request_id_for

# The proxy's internal location that fetches from a node (helm/airlock/files/proxy.conf).
LOCATION = "/_airlock/node"
MARK = b"airlock-offload"
# Response headers a proxy in front acts on, or that carry a node's URL and token (their own
# prefix: other Airlock headers, such as Airlock-Node-Full between a node and a replica, pass).
_PROXY_ONLY = (b"x-accel-", b"airlock-offload-")
# Each request's _Offload (copies of a scope share it: PreviewHosts makes one).
_STATE = "airlock.offload"


@dataclass
class _Offload:
    marked: bool = False  # the request carried the proxy's mark with the offload key
    handing: bool = False  # redirect() answers it: the answer's headers are for the proxy


class ProxyHeaders:
    """ASGI, outermost. A request's offload mark is taken off and remembered; every answer
    loses the headers a proxy in front would act on, unless redirect() sent it. A request from
    a trusted proxy (AIRLOCK_TRUSTED_PROXIES) is from the client its X-Forwarded-For names
    (uvicorn's ProxyHeadersMiddleware). `key`: the offload key, on an API replica."""

    def __init__(self, app: Any, proxies: tuple[str, ...], key: str | None) -> None:
        self.app = ProxyHeadersMiddleware(app, trusted_hosts=list(proxies)) if proxies else app
        self.key = key.encode() if key else None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state = _Offload()
        # (An ASGI request's header names are lowercase; a response's may not be.)
        marks = [v for k, v in scope["headers"] if k == MARK]
        if marks:  # never passed on: not to a node, not to a sandbox's web server
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != MARK]
            state.marked = self.key is not None and hmac.compare_digest(marks[-1], self.key)
        scope[_STATE] = state

        async def checked(message: dict[str, Any]) -> None:
            if message["type"] in ("http.response.start", "websocket.accept") and not (
                state.handing
            ):
                headers = message.get("headers") or ()
                if any(k.lower().startswith(_PROXY_ONLY) for k, _ in headers):
                    kept = [(k, v) for k, v in headers if not k.lower().startswith(_PROXY_ONLY)]
                    message = {**message, "headers": kept}
            await send(message)

        await self.app(scope, receive, checked)


def wanted(scope: dict[str, Any], opt: dict[str, Any]) -> bool:
    """A download the proxy in front can fetch from the node itself: the request carried the
    proxy's mark, with the offload key."""
    state = scope.get(_STATE)
    return bool(
        state is not None
        and state.marked
        and scope["type"] == "http"
        and scope["method"] == "GET"
        and opt.get("offload")
    )


async def redirect(
    proxy: NodeProxy, scope: dict[str, Any], send: Any, node_id: str, principal: Principal
) -> None:
    """Answer with the internal redirect that sends the proxy to the node."""
    attributes = {"airlock.node_id": node_id, "url.path": scope["path"]}
    with telemetry.span("airlock.offload", attributes, SpanKind.CLIENT):
        url, token = await proxy.target(scope, node_id, principal)
        headers = [
            (b"x-accel-redirect", LOCATION.encode()),
            (b"airlock-offload-url", url.encode("latin-1")),
            (b"airlock-offload-authorization", f"Bearer {token}".encode()),
            (b"airlock-offload-request-id", request_id_for(scope).encode("latin-1")),
            (b"content-length", b"0"),
        ]
        # The node's server span continues this one, as for a call forwarded in Python.
        for name, value in telemetry.trace_headers().items():
            if name.encode() in TRACE_CONTEXT:
                headers.append((f"airlock-offload-{name}".encode(), value.encode("latin-1")))
        scope[_STATE].handing = True
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
