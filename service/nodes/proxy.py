"""A sandbox call sent on to the node that holds the sandbox, and the node's answer back.

The caller is carried in a node token (service.nodes.credentials); the request and the
response are streamed through in both directions, so an upload, a download or an event stream
is never held whole here (behind nginx a download skips this process altogether:
service.nodes.offload). A node that cannot be reached is a 503 `node_unavailable` with
Retry-After; a node that says the sandbox is on another node now (503 `sandbox_moved`) makes
the caller forget the owner it had, and a request whose body is whole here follows it (Moved).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from opentelemetry.trace import SpanKind

from service import telemetry
from service.auth.principal import Principal
from service.errors import MOVED_HEADER, NODE_FULL_HEADER, NodeUnavailable
from service.hop import NOT_RELAYED, named_by_connection
from service.nodes.addresses import Addresses
from service.nodes.credentials import NodeCredentials
from service.ports import forward as ports_forward
from service.requestid import HEADER as REQUEST_ID
from service.requestid import request_id_for

log = logging.getLogger("airlock.nodes.routing")

# Bodies up to this size go through whole (one write each way); larger ones are streamed.
SMALL_BODY = 64 << 10
CHUNK = 1 << 20
_NOT_ADDED = ("User-Agent", "Accept-Encoding", "Content-Type", "Accept")
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_PROBES = 30, 10, 3
# Never forwarded: hop-by-hop headers, the caller's credential, and what the proxy sets itself.
_DROPPED = NOT_RELAYED | {
    REQUEST_ID.encode(),
    NODE_FULL_HEADER.lower().encode(),
    MOVED_HEADER.lower().encode(),
}
# W3C trace context: replaced by this request's own when it is traced.
TRACE_CONTEXT = frozenset({b"traceparent", b"tracestate"})


class Moved(Exception):
    """The node said the sandbox is on `node_id` now, and the call can be sent there."""

    def __init__(self, node_id: str) -> None:
        super().__init__(node_id)
        self.node_id = node_id


@dataclass(frozen=True, slots=True)
class _Outgoing:
    """The request as it goes to the node: its headers in order (repeats kept) and body."""

    headers: list[tuple[str, str]]
    data: bytes | AsyncIterator[bytes] | None


class NodeProxy:
    def __init__(
        self,
        credentials: NodeCredentials,
        addresses: Addresses,
        forget: Callable[[str], None],
    ) -> None:
        self.credentials = credentials
        self.addresses = addresses
        # Told the sandbox a node no longer holds (it answered `sandbox_moved`).
        self.forget = forget
        self._session: aiohttp.ClientSession | None = None

    async def target(
        self, scope: dict[str, Any], node_id: str, principal: Principal
    ) -> tuple[str, str]:
        """The request's URL on the node, and the node token that carries its caller there."""
        address = await self.addresses.address(node_id)
        url = address.rstrip("/") + scope["raw_path"].decode("latin-1")
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        client = scope.get("client")
        return url, self.credentials.mint(principal, client[0] if client else None, node_id)

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=0, keepalive_timeout=30, socket_factory=_keepalive_socket
                ),
                # An exec waits as long as its deadline, an event stream longer: only the
                # connection has a time limit; the node bounds the rest.
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
                auto_decompress=False,
                # A node's cookies are not kept, nor sent along with the next caller's request.
                cookie_jar=aiohttp.DummyCookieJar(),
                # Large reads for downloads: fewer, bigger pieces to pass on.
                read_bufsize=CHUNK,
            )
        return self._session

    async def forward(
        self,
        scope: dict[str, Any],
        receive: Any,
        send: Any,
        node_id: str,
        principal: Principal,
        body: bytes | None = None,
        placing: bool = False,
    ) -> bool:
        """Send the request to the node and stream its answer back. False (nothing sent to the
        client) when the node could not be reached, or when `placing` and the node said it is
        full; the caller decides what that means. Moved (nothing sent) when the node said the
        sandbox is on another node now and `body` holds the whole request body to send there.
        Traced as a client span of this request, whose context the node's server span
        continues."""
        attributes = {
            "airlock.node_id": node_id,
            "http.request.method": scope["method"],
            "url.path": scope["path"],
        }
        with telemetry.span("airlock.route", attributes, SpanKind.CLIENT):
            url, token = await self.target(scope, node_id, principal)
            outgoing = await _outgoing(scope, receive, token, body)
            response = await self._send(scope["method"], url, outgoing, node_id)
            if response is None:
                return False
            if placing and response.status == 503 and response.headers.get(NODE_FULL_HEADER):
                log.info("node %s was full when asked: trying the next", node_id)
                response.release()
                return False
            moved_to = response.headers.get(MOVED_HEADER) if response.status == 503 else None
            if moved_to and "sandbox_id" in scope.get("path_params", {}):
                self.forget(scope["path_params"]["sandbox_id"])
                if body is not None:
                    response.release()
                    raise Moved(moved_to)
            await _relay(response, receive, send, node_id)
            return True

    async def _send(
        self, method: str, url: str, outgoing: _Outgoing, node_id: str
    ) -> aiohttp.ClientResponse | None:
        """The node's answer; None when it could not be reached at all."""
        try:
            return await self._http().request(
                method,
                url,
                headers=outgoing.headers,
                data=outgoing.data,
                allow_redirects=False,
                skip_auto_headers=_NOT_ADDED,
            )
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            # Not connected at all: nothing reached the node, another may be asked.
            log.warning("node %s at %s unreachable: %s", node_id, _origin(url), exc)
            return None
        except (aiohttp.ClientError, TimeoutError) as exc:
            # The node may have acted on it (a create recorded): never asked again elsewhere.
            log.warning("node %s at %s broke off: %s", node_id, _origin(url), exc)
            raise NodeUnavailable(
                f"node {node_id} broke off before it answered; retry (with an Idempotency-Key "
                "to be sure a create is made once)"
            ) from exc

    async def websocket(
        self, scope: dict[str, Any], receive: Any, send: Any, node_id: str, principal: Principal
    ) -> None:
        """The same WebSocket route on the node (service/ports/forward.py relays it)."""
        url, token = await self.target(scope, node_id, principal)
        extra = {REQUEST_ID: request_id_for(scope), **telemetry.trace_headers()}
        links = scope["app"].state.preview_links
        await ports_forward.relay(self._http(), url, token, extra, links, scope, receive, send)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


async def _outgoing(
    scope: dict[str, Any], receive: Any, token: str, body: bytes | None
) -> _Outgoing:
    """The caller's headers less the hop-by-hop ones (those its Connection header names too),
    the node token, this request's trace context and id; the body whole when small or given,
    else streamed through as it arrives."""
    length: int | None = None
    chunked = False
    dropped = _DROPPED | named_by_connection(scope["headers"])
    traced = telemetry.trace_headers()
    if traced:  # the caller's trace context is this request's parent, not the node's
        dropped |= TRACE_CONTEXT
    headers: list[tuple[str, str]] = []
    for k, v in scope["headers"]:
        name = k.lower()
        if name == b"content-length":
            length = int(v)
        elif name == b"transfer-encoding":
            chunked = True
        if name not in dropped:
            headers.append((k.decode("latin-1"), v.decode("latin-1")))
    headers.append(("Authorization", f"Bearer {token}"))
    headers.extend(traced.items())
    headers.append((REQUEST_ID, request_id_for(scope)))
    data: bytes | AsyncIterator[bytes] | None = body if body or chunked else None
    if data is None and (chunked or (length or 0) > SMALL_BODY):
        data = _request_body(receive)  # an upload: streamed through as it arrives
    elif data is None and length:
        data = await read_all(receive)  # one write for a small body
    return _Outgoing(headers, data)


async def _relay(response: aiohttp.ClientResponse, receive: Any, send: Any, node_id: str) -> None:
    """The node's answer to the client: a small one read whole and sent in one piece, a
    download or an event stream passed on as it comes, until the client goes away."""
    start = {
        "type": "http.response.start",
        "status": response.status,
        "headers": [(k, v) for k, v in response.raw_headers if k.lower() not in _DROPPED],
    }
    if response.content_length is not None and response.content_length <= SMALL_BODY:
        try:
            payload = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NodeUnavailable(f"node {node_id} broke off while it answered") from exc
        finally:
            response.release()
        await send(start)
        await send({"type": "http.response.body", "body": payload, "more_body": False})
        return
    gone = asyncio.ensure_future(_disconnected(receive))
    gone.add_done_callback(lambda _: response.close())
    events = response.content_type == "text/event-stream"
    chunks = response.content.iter_any() if events else response.content.iter_chunked(CHUNK)
    try:
        await send(start)
        with contextlib.suppress(aiohttp.ClientConnectionError, aiohttp.ClientPayloadError):
            async for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        gone.cancel()
        response.release()


def _origin(url: str) -> str:
    """A URL's scheme and host, for a log line (its query may hold a preview link's token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _keepalive_socket(addr_info: Any) -> socket.socket:
    """A connection to a node whose host dies without closing it (power, network) fails in
    about a minute (TCP keepalive) rather than holding its requests for hours; a waiting
    exec or an event stream has no other deadline on this side."""
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=kind, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_PROBES)
    return sock


async def read_all(receive: Any) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise asyncio.CancelledError
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def _request_body(receive: Any) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionResetError("the client went away during the upload")
        chunk = message.get("body", b"")
        if chunk:
            yield chunk
        if not message.get("more_body"):
            return


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
