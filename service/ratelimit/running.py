"""A tenant's work in flight besides execs: file transfers and port connections, each capped
by a quota (`max_running_transfers`, `max_port_connections`); past it, 429 `quota_exceeded`
with Retry-After, before the handler runs (no byte moved, nothing written).

A request holds its slot for as long as the server works on it: an upload until its body is
in the sandbox, a download until its last byte goes out (given back just before it, so a
client that has the whole answer finds the slot free), a port WebSocket for the connection's
life; it is given back however the request ends (an error, the client gone, a cancellation).
Counted where the request is first taken, like the request rates: a call an API replica
forwards to a node was counted by the replica; the operator and the nodes are not counted.
Where the count lives: service.ratelimit.slots.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any, Protocol

import msgspec
from litestar import Litestar
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send
from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncEngine

from service.auth.principal import Principal
from service.db.pg import is_postgres
from service.errors import PROBLEM_MEDIA_TYPE, QuotaExceeded, problem_body
from service.nodes.credentials import Forwarded
from service.ratelimit.rates import TenantRates
from service.ratelimit.slots import MemorySlots, Release, SharedSlots
from service.settings import Role, Settings

# A slot is given back when the work ends, at any moment: a second is as good a guess as any.
RETRY_AFTER_S = 1
REFUSED = Counter(
    "airlock_running_work_refused",
    "Transfers and port connections refused with 429 quota_exceeded, by kind",
    ["kind"],
)


class Work(StrEnum):
    TRANSFERS = "transfers"
    PORT_CONNECTIONS = "port_connections"


QUOTA = {Work.TRANSFERS: "max_running_transfers", Work.PORT_CONNECTIONS: "max_port_connections"}
TRANSFER_OPERATIONS = frozenset(
    {"upload_file", "download_file", "upload_archive", "download_archive"}
)


def work_of(scope: dict[str, Any]) -> Work | None:
    """What the routed request `scope` holds while it runs, if anything."""
    handler = scope.get("route_handler")
    if handler is None:
        return None
    if handler.opt.get("preview"):  # the port routes, HTTP and WebSocket
        return Work.PORT_CONNECTIONS
    if getattr(handler, "operation_id", None) in TRANSFER_OPERATIONS:
        return Work.TRANSFERS
    return None


class Slots(Protocol):
    async def take(self, tenant_id: str, kind: str, limit: int) -> Release | None:
        """A slot's release, or None when `limit` are held."""
        ...


class RunningWork:
    def __init__(self, slots: Slots, quotas: TenantRates) -> None:
        self.slots = slots
        self.quotas = quotas

    @classmethod
    def of(cls, settings: Settings, engine: AsyncEngine, quotas: TenantRates) -> RunningWork | None:
        """This process's count; None on a node, whose callers the API replicas counted."""
        if settings.role == Role.NODE:
            return None
        slots = SharedSlots(engine) if is_postgres(engine) else MemorySlots()
        return cls(slots, quotas)

    async def take(self, scope: dict[str, Any]) -> Release | None:
        """The slot of the routed request `scope` (None when it is not counted), or
        QuotaExceeded."""
        work = work_of(scope)
        principal = scope.get("user")
        if (
            work is None
            or isinstance(scope.get("auth"), Forwarded)  # counted by the replica
            or not isinstance(principal, Principal)
            or principal.tenant_id is None  # the operator, a node
        ):
            return None
        quota = QUOTA[work]
        limit = getattr(await self.quotas.quotas(principal.tenant_id), quota)
        release = await self.slots.take(principal.tenant_id, work, limit)
        if release is None:
            REFUSED.labels(work).inc()
            raise QuotaExceeded(
                f"the tenant has {limit} {work.replace('_', ' ')} open (limit {limit}); "
                "retry when one has ended",
                retry_after_s=RETRY_AFTER_S,
                extra={"quota": quota, "limit": limit},
            )
        return release

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Litestar) -> AsyncIterator[None]:
        if isinstance(self.slots, SharedSlots):
            async with self.slots.renewing():
                yield
        else:
            yield


# The messages that end what a request holds a slot for: its answer's last body part, a
# WebSocket's close (a handshake the handler refuses ends with its denial's body).
_LAST = frozenset({"http.response.body", "websocket.close", "websocket.http.response.body"})


class RunningWorkMiddleware(ASGIMiddleware):
    """After authentication and before a call is sent to a node: a transfer or a port
    connection holds its tenant's slot until the call is over."""

    scopes = (ScopeType.HTTP, ScopeType.WEBSOCKET)

    def __init__(self, running: RunningWork) -> None:
        self.running = running

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        try:
            release = await self.running.take(scope)  # type: ignore[arg-type]
        except QuotaExceeded as refused:
            if scope["type"] != "websocket":
                raise
            await deny_socket(scope, send, refused)
            return
        if release is None:
            await next_app(scope, receive, send)
            return
        given_back = False

        async def give_back() -> None:
            nonlocal given_back
            if not given_back:
                given_back = True
                # A second cancellation (the server shutting down) does not cut it short.
                await asyncio.shield(release())

        async def sending(message: Any) -> None:
            # The work is over when its answer's last part goes out: the slot is free before
            # the client has it, so a client that saw the end may start the next at once.
            if message["type"] in _LAST and not message.get("more_body", False):
                await give_back()
            await send(message)

        try:
            await next_app(scope, receive, sending)
        finally:
            await give_back()


async def deny_socket(scope: Scope, send: Send, refused: QuotaExceeded) -> None:
    """A WebSocket handshake answered with the problem, as an HTTP answer, where the server
    can send one (the ASGI denial response); else closed before it is accepted (a 403)."""
    if "websocket.http.response" not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": 1013, "reason": refused.detail[:120]})
        return
    body = msgspec.json.encode(
        problem_body(
            scope,
            scope["path"],
            status=refused.status,
            code=refused.code,
            title=refused.title,
            detail=refused.detail,
            extra=refused.extra,
        )
    )
    headers = [(b"content-type", PROBLEM_MEDIA_TYPE.encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in refused.headers.items()]
    await send(
        {"type": "websocket.http.response.start", "status": refused.status, "headers": headers}
    )
    await send({"type": "websocket.http.response.body", "body": body})
