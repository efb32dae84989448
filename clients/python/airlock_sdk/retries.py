"""How the SDK's calls are sent again: after a connection lost before an answer, a sandbox
moved to another node, or a passed request rate. `retry` (and `aretry`, awaited) serve a call of
the generated client the SDK has no method for as well as the SDK's own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx

from . import _common as common
from . import errors

T = TypeVar("T")


# What sends a call again (or ends it, past the last try).
_AGAIN = (errors.SandboxMoved, errors.RateLimited, httpx.TransportError)


def retry(call: Callable[[], T], *, resend: bool = True) -> T:
    """`call()`, tried again when the connection failed before an answer came, or when the
    sandbox had moved to another node before the call did anything (at once: the next try
    goes there), or when the tenant's request rate was passed (after Retry-After). `resend`
    False: a lost connection is not tried again (the call may have done its work). The SDK's
    own calls go through it; so can a call of the generated client the SDK has no method for:
    `retry(lambda: errors.unwrap(api.sync_detailed(..., client=sandbox.client)))`."""
    for attempt in range(common.ATTEMPTS):
        try:
            return call()
        except _AGAIN as exc:
            time.sleep(_wait(attempt, exc, resend))
    raise AssertionError("unreachable")


async def aretry(call: Callable[[], Awaitable[T]], *, resend: bool = True) -> T:
    """`retry` for a call to await."""
    for attempt in range(common.ATTEMPTS):
        try:
            return await call()
        except _AGAIN as exc:
            await asyncio.sleep(_wait(attempt, exc, resend))
    raise AssertionError("unreachable")


def _wait(attempt: int, exc: Exception, resend: bool) -> float:
    """Seconds to wait before the next try after `exc`; past the last try (or for a lost
    connection when the call must not be sent again), the error, raised."""
    last = attempt == common.ATTEMPTS - 1
    if isinstance(exc, httpx.TransportError):
        if last or not resend:
            raise errors.TransportError(str(exc) or type(exc).__name__) from exc
        return common.BACKOFF_S[attempt]
    if last:
        raise exc
    return common.rate_wait(exc) if isinstance(exc, errors.RateLimited) else 0.0
