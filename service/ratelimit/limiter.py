"""Per-tenant request rates: a token bucket per tenant and class of route, and one per source
address for callers without a tenant; 429 `rate_limited` with Retry-After past them.

Counted where every process sees the same count: in this process's memory on SQLite (one
process serves the API), in PostgreSQL otherwise (service.ratelimit.shared). A request
forwarded by an API replica to a node was counted by the replica; the operator and the nodes
are not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import re
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from litestar import Litestar
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send
from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncEngine

from service.auth.principal import Principal
from service.db.pg import is_postgres
from service.errors import AppError
from service.nodes.credentials import Forwarded
from service.ratelimit.buckets import MemoryBuckets, Rate
from service.ratelimit.classes import RouteClass, class_of
from service.ratelimit.rates import TenantRates
from service.ratelimit.refusals import Refusal, Refusals
from service.ratelimit.shared import SharedBuckets
from service.settings import Role, Settings

ANONYMOUS = "anonymous"
# A refusal is answered this much later (at most MAX_HELD at once; past that, at once): a
# client that does not honour Retry-After then loops no faster than this on a connection,
# instead of taking the cores with its refusals. One that does honour it was going to wait
# Retry-After (a second at least) anyway.
HOLD_S = 0.5
MAX_HELD = 1000
REFUSED = Counter(
    "airlock_requests_rate_limited",
    "Requests refused with 429 rate_limited, by class of route (or anonymous)",
    ["route_class"],
)


class RateLimited(AppError):
    status, code, title = 429, "rate_limited", "Too many requests"

    def __init__(self, counted_as: str, rate: Rate, wait_s: float) -> None:
        super().__init__(
            f"more than {rate.per_s:g} {counted_as} requests a second "
            f"(bursts of {rate.burst:g}); retry after Retry-After",
            headers={"Retry-After": str(max(1, math.ceil(wait_s)))},
            extra={"route_class": counted_as, "limit_per_s": rate.per_s},
        )


class Buckets(Protocol):
    async def take(self, key: str, rate: Rate) -> float:
        """0 when the request may go on, else the seconds until it may."""
        ...


class RequestLimiter:
    def __init__(self, buckets: Buckets, rates: TenantRates, anonymous: Rate) -> None:
        self.buckets = buckets
        self.rates = rates
        self.anonymous = anonymous
        self.refusals = Refusals()
        self._held = 0

    @classmethod
    def of(
        cls, settings: Settings, engine: AsyncEngine, quotas: TenantRates
    ) -> RequestLimiter | None:
        """This process's limiter; None where nothing is counted (switched off, or a node,
        whose callers the API replicas counted)."""
        if not settings.rate_limits or settings.role == Role.NODE:
            return None
        buckets = SharedBuckets(engine) if is_postgres(engine) else MemoryBuckets()
        return cls(buckets, quotas, Rate(settings.anonymous_requests_per_s))

    async def admit(self, scope: dict[str, Any]) -> None:
        """Count the routed request `scope` (after authentication), or refuse it."""
        principal = scope.get("user")
        if principal is None:  # a public route
            await self.admit_anonymous(scope)
            return
        if isinstance(scope.get("auth"), Forwarded):
            return  # a call an API replica forwarded: counted there
        if not isinstance(principal, Principal) or principal.tenant_id is None:
            return  # the operator, a node
        route_class = class_of(scope)
        rate = await self.rates.rate(principal.tenant_id, route_class)
        key = tenant_key(principal.tenant_id, route_class)
        wait = await self.buckets.take(key, rate)
        if wait:
            refusal = Refusal(route_class, rate, time.monotonic() + wait)
            self.refusals.remember(scope, principal.tenant_id, key, refusal)
            await self._refuse(refusal)

    async def refuse_again(self, scope: dict[str, Any]) -> None:
        """Before authentication: a caller told to wait, and not done waiting, is told again
        (service.ratelimit.refusals)."""
        refusal = self.refusals.pending(
            scope, lambda tenant_id: tenant_key(tenant_id, class_of(scope))
        )
        if refusal is not None:
            await self._refuse(refusal)

    async def admit_anonymous(self, scope: dict[str, Any]) -> None:
        """Count a request of no tenant (a public route, a refused credential) by address."""
        wait = await self.buckets.take(f"a:{source(scope)}", self.anonymous)
        if wait:
            await self._refuse(Refusal(ANONYMOUS, self.anonymous, time.monotonic() + wait))

    async def _refuse(self, refusal: Refusal) -> None:
        REFUSED.labels(refusal.counted_as).inc()
        if self._held < MAX_HELD:
            self._held += 1
            try:
                await asyncio.sleep(HOLD_S)
            finally:
                self._held -= 1
        raise RateLimited(refusal.counted_as, refusal.rate, refusal.wait(time.monotonic()))

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Litestar) -> AsyncIterator[None]:
        if isinstance(self.buckets, SharedBuckets):
            async with self.buckets.sweeping():
                yield
        else:
            yield


def tenant_key(tenant_id: str, route_class: RouteClass) -> str:
    return f"t:{tenant_id}:{route_class}"


def source(scope: dict[str, Any]) -> str:
    """Who a caller without a tenant is: its address (as ProxyHeaders found it behind a
    trusted proxy), an IPv6 one by its /64, which one host holds whole."""
    client = scope.get("client")
    host = client[0] if client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class RateLimitMiddleware(ASGIMiddleware):
    """After authentication and before a call is sent to a node: counts every request."""

    scopes = (ScopeType.HTTP, ScopeType.WEBSOCKET)

    def __init__(self, limiter: RequestLimiter) -> None:
        self.limiter = limiter

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        await self.limiter.admit(scope)  # type: ignore[arg-type]
        await next_app(scope, receive, send)


class RefusedAgainMiddleware(ASGIMiddleware):
    """Before authentication: a caller still told to wait is told again at once. Not on the
    routes authentication leaves alone (`public`, `exclude`): their callers are counted by
    address, whatever credential they send."""

    scopes = (ScopeType.HTTP, ScopeType.WEBSOCKET)
    exclude_opt_key = "public"

    def __init__(self, limiter: RequestLimiter, exclude: list[str]) -> None:
        self.limiter = limiter
        excluded = re.compile("|".join(exclude))
        self.should_bypass_for_scope = lambda scope: bool(excluded.search(scope["path"]))

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        await self.limiter.refuse_again(scope)  # type: ignore[arg-type]
        await next_app(scope, receive, send)
