"""Sandbox calls go to the node that holds the sandbox; a create goes to the node placement picks.

A route says it is about one sandbox's runtime with `opt={"routed": "sandbox"}` (exec, files,
archives, kill, network and TTL changes, delete), or `"create"`. On an API replica
(`AIRLOCK_ROLE=api`) such a request is forwarded, once authenticated, to the owning node's
internal address, the caller carried in a node token (service.nodes.credentials); the request
and the response are streamed through in both directions, so an upload, a download or an
event stream is never held whole here (behind nginx a download skips this process altogether:
service.nodes.offload). Reads the database answers (a sandbox, its execs, its
transitions) are answered by the replica itself. On the all-in-one server the sandboxes are its
own and nothing is forwarded, unless a sandbox is on another node of the same database.

A sandbox's node changes only while it is paused (service.nodes.moves), so the owner of each
sandbox is cached here; a node asked about a sandbox that is no longer its own answers 503
`sandbox_moved` naming the new one, and the replica forgets what it cached and sends the call
there (a request whose body it has whole; a streamed upload is answered with the 503, whose
retry goes to the new node). A node's address is read again every ADDRESS_TTL_S. A node that
cannot be reached is a 503 `node_unavailable` with Retry-After.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
from opentelemetry.trace import SpanKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from service import telemetry
from service.auth.principal import Principal
from service.db.models import Node
from service.db.models import Sandbox as SandboxRow
from service.db.pg import driver_connection, is_postgres
from service.errors import (
    MOVED_HEADER,
    NODE_FULL_HEADER,
    NoCapacity,
    NodeUnavailable,
)
from service.nodes import placement
from service.nodes.credentials import NodeCredentials
from service.nodes.leases import LOST
from service.nodes.placement import Ask
from service.ports import forward as ports_forward
from service.requestid import HEADER as REQUEST_ID
from service.requestid import request_id_for
from service.settings import Role, Settings

log = logging.getLogger("airlock.nodes.routing")

ADDRESS_TTL_S = 2.0
OWNERS_MAX = 65536
# Bodies up to this size go through whole (one write each way); larger ones are streamed.
SMALL_BODY = 64 << 10
CHUNK = 1 << 20
_NOT_ADDED = ("User-Agent", "Accept-Encoding", "Content-Type", "Accept")
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_PROBES = 30, 10, 3
# Never forwarded: hop-by-hop headers, the caller's credential, and what the proxy sets itself.
_DROPPED = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"authorization",
        REQUEST_ID.encode(),
        NODE_FULL_HEADER.lower().encode(),
        MOVED_HEADER.lower().encode(),
    }
)
# W3C trace context: replaced by this request's own when it is traced.
TRACE_CONTEXT = frozenset({b"traceparent", b"tracestate"})


class Moved(Exception):
    """The node said the sandbox is on `node_id` now, and the call can be sent there."""

    def __init__(self, node_id: str) -> None:
        super().__init__(node_id)
        self.node_id = node_id


class Asked(Protocol):
    """What a tenant's create asks for (caps, and where its template's snapshot is), from the
    request's body."""

    def __call__(self, tenant_id: str, body: bytes) -> Awaitable[Ask]: ...


class NodeRouter:
    def __init__(
        self,
        db: async_sessionmaker[AsyncSession],
        settings: Settings,
        credentials: NodeCredentials,
        local_node: str | None,
        *,
        asked: Asked,
    ) -> None:
        self.db = db
        # What a create asks of placement, from its body (service.flows.placing).
        self.asked = asked
        self.engine: AsyncEngine = db.kw["bind"]
        self.role = settings.role
        # The embedded database serves one process: every sandbox in it is this node's.
        self.alone = settings.role == Role.ALL and not is_postgres(self.engine)
        self.local = local_node
        self.overcommit = (settings.cpu_overcommit, settings.memory_overcommit)
        self.credentials = credentials
        self._owners: dict[str, str | None] = {}
        self._addresses: dict[str, str] = {}
        self._states: dict[str, str] = {}
        self._addresses_at = 0.0
        self._session: aiohttp.ClientSession | None = None
        placement.remember(self)

    # -- where things are -------------------------------------------------------------------

    async def owner(self, tenant_id: str, sandbox_id: str) -> str | None:
        """The node of the tenant's sandbox; None when it has none or is not the tenant's (the
        replica then answers itself: a 404 for another tenant's)."""
        return (await self.lookup(tenant_id, sandbox_id))[1]

    async def lookup(self, tenant_id: str, sandbox_id: str) -> tuple[bool, str | None]:
        """Whether the tenant has this sandbox, and its node (None for one with no node
        recorded, made before there were nodes), in one read; a node found is remembered."""
        key = f"{tenant_id}/{sandbox_id}"
        if key in self._owners:
            return True, self._owners[key]
        if is_postgres(self.engine):
            async with driver_connection(self.engine) as conn:
                row = await conn.fetchrow(
                    "SELECT node_id FROM sandboxes WHERE id = $1 AND tenant_id = $2",
                    sandbox_id,
                    tenant_id,
                )
        else:
            async with self.engine.connect() as conn:
                row = (
                    await conn.execute(
                        select(SandboxRow.node_id).where(
                            SandboxRow.id == sandbox_id, SandboxRow.tenant_id == tenant_id
                        )
                    )
                ).first()
        if row is None:
            return False, None
        node = row[0]
        if node is not None:
            if len(self._owners) >= OWNERS_MAX:
                self._owners.clear()
            self._owners[key] = node
        return True, node

    def forget(self, sandbox_id: str) -> None:
        suffix = f"/{sandbox_id}"
        for key in [k for k in self._owners if k.endswith(suffix)]:
            self._owners.pop(key, None)

    def forget_all(self) -> None:
        self._owners.clear()

    async def is_lost(self, node_id: str) -> bool:
        await self._fresh(node_id)
        return self._states.get(node_id) == LOST

    async def _fresh(self, node_id: str) -> None:
        """Nodes' addresses and states, read again when older than ADDRESS_TTL_S or when this
        node is not among them (one table: what sandboxes hold is placement's business)."""
        if time.monotonic() - self._addresses_at <= ADDRESS_TTL_S and node_id in self._addresses:
            return
        async with self.engine.connect() as conn:
            self._remember((await conn.execute(select(Node.id, Node.address, Node.state))).all())

    def _remember(self, nodes: Any) -> None:
        """Every node's address and state, as just read (rows or placement's views)."""
        self._addresses = {n.id: n.address for n in nodes}
        self._states = {n.id: n.state for n in nodes}
        self._addresses_at = time.monotonic()

    async def address(self, node_id: str) -> str:
        await self._fresh(node_id)
        address = self._addresses.get(node_id)
        if address is None:
            raise NodeUnavailable(f"node {node_id} is not registered")
        return address

    # -- forwarding -------------------------------------------------------------------------

    async def target(
        self, scope: dict[str, Any], node_id: str, principal: Principal
    ) -> tuple[str, str]:
        """The request's URL on the node, and the node token that carries its caller there."""
        url = (await self.address(node_id)).rstrip("/") + scope["raw_path"].decode("latin-1")
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
            return await self._forward(scope, receive, send, node_id, principal, body, placing)

    async def _forward(
        self,
        scope: dict[str, Any],
        receive: Any,
        send: Any,
        node_id: str,
        principal: Principal,
        body: bytes | None,
        placing: bool,
    ) -> bool:
        url, token = await self.target(scope, node_id, principal)
        headers: list[tuple[str, str]] = []  # in order, repeats kept
        length: int | None = None
        chunked = False
        # Hop-by-hop: the fixed ones, and whatever the client's Connection header names.
        dropped = _DROPPED | {
            token.strip().lower()
            for k, v in scope["headers"]
            if k.lower() == b"connection"
            for token in v.split(b",")
        }
        traced = telemetry.trace_headers()
        if traced:  # the caller's trace context is this request's parent, not the node's
            dropped |= TRACE_CONTEXT
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
        try:
            response = await self._http().request(
                scope["method"],
                url,
                headers=headers,
                data=data,
                allow_redirects=False,
                skip_auto_headers=_NOT_ADDED,
            )
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            # Not connected at all: nothing reached the node, another may be asked.
            log.warning("node %s at %s unreachable: %s", node_id, _origin(url), exc)
            return False
        except (aiohttp.ClientError, TimeoutError) as exc:
            # The node may have acted on it (a create recorded): never asked again elsewhere.
            log.warning("node %s at %s broke off: %s", node_id, _origin(url), exc)
            raise NodeUnavailable(
                f"node {node_id} broke off before it answered; retry (with an Idempotency-Key "
                "to be sure a create is made once)"
            ) from exc
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
        start = {
            "type": "http.response.start",
            "status": response.status,
            "headers": [(k, v) for k, v in response.raw_headers if k.lower() not in _DROPPED],
        }
        if response.content_length is not None and response.content_length <= SMALL_BODY:
            # A JSON answer: read whole, sent in one piece.
            try:
                payload = await response.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise NodeUnavailable(f"node {node_id} broke off while it answered") from exc
            finally:
                response.release()
            await send(start)
            await send({"type": "http.response.body", "body": payload, "more_body": False})
            return True
        # A download or an event stream: passed on as it comes, until the client goes away.
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
        return True

    async def websocket(
        self, scope: dict[str, Any], receive: Any, send: Any, node_id: str, principal: Principal
    ) -> None:
        """The same WebSocket route on the node (service/ports/forward.py relays it)."""
        url, token = await self.target(scope, node_id, principal)
        extra = {REQUEST_ID: request_id_for(scope), **telemetry.trace_headers()}
        links = scope["app"].state.preview_links
        await ports_forward.relay(self._http(), url, token, extra, links, scope, receive, send)

    async def create(
        self, scope: dict[str, Any], receive: Any, send: Any, principal: Principal
    ) -> None:
        """Place a new sandbox: the request goes to the first node with room that answers."""
        assert principal.tenant_id is not None
        body = await read_all(receive)
        ask = await self.asked(principal.tenant_id, body)
        views = await placement.node_views(self.engine)
        self._remember(views)  # read anyway: the cache is fresh
        order = placement.place(views, ask, self.overcommit)
        if ask.only_on is not None:
            order = [n for n in order if n.id == ask.only_on]
        else:
            # A claim from the warm pool starts nothing: nodes holding free members go first,
            # then nodes that have the snapshot on disk (the others fetch it first).
            order.sort(key=lambda n: (n.id not in ask.warm, n.id not in ask.holding))
        if not order:
            where = f"node {ask.only_on}" if ask.only_on else "ready node"
            raise NoCapacity(
                f"no {where} has room for {ask.vcpus:g} vCPUs, {ask.memory_mib} MiB of memory "
                f"and {ask.disk_mib} MiB of writable space now"
            )
        for node in order:
            if await self.forward(
                scope, receive, send, node.id, principal, body=body, placing=True
            ):
                return
        raise NoCapacity("no node with room could take the sandbox now")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


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
