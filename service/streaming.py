"""Response bodies streamed out of a sandbox or a node, with an end that always comes.

A download reads from a process in the sandbox (and an archive download leaves a temporary
file there to remove). Litestar stops iterating a streamed body when the client goes away, but
never closes it; an async generator left half-way only runs its clean-up when the garbage
collector reaches it, which on a busy process can be minutes later, or never for a body that
was not started (HEAD). So a body here is a `Body` with an explicit `aclose()`, and
`ClosingStream` calls it once the response is over, for any reason, shielded from the
cancellation that cut the response short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from litestar.response import Stream
from litestar.response.base import ASGIResponse
from litestar.types import Receive, Scope, Send

CLOSE_TIMEOUT_S = 60.0


class Body:
    """`first` (pulled before the response starts, so a missing file fails as a problem
    response; None for an empty stream), then the rest of `rest`. `aclose()` ends `rest` and
    then runs `after`, exactly once, whether the body was sent whole, cut off, or never
    started."""

    def __init__(
        self,
        first: bytes | None,
        rest: AsyncIterator[bytes],
        after: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._first = first
        self._rest = rest
        self._after = after
        self._started = False
        self._closed = False

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        if self._closed:
            raise StopAsyncIteration
        if not self._started:
            self._started = True
            if self._first is not None:
                return self._first
        else:
            try:
                return await anext(self._rest)
            except StopAsyncIteration:
                pass
        await self.aclose()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            aclose = getattr(self._rest, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            if self._after is not None:
                await self._after()


async def close_body(body: Any) -> None:
    """Close a streamed body, shielded from an enclosing cancellation, within a bound."""
    aclose = getattr(body, "aclose", None)
    if aclose is None:
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_S):
        await aclose()


class _Closing:
    def __init__(self, response: ASGIResponse, body: Any) -> None:
        self.response = response
        self.body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.response(scope, receive, send)
        finally:
            await close_body(self.body)


class ClosingStream(Stream):
    """A `Stream` whose body is closed when the response is over (see the module's words)."""

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> ASGIResponse:
        response = super().to_asgi_response(*args, **kwargs)
        return _Closing(response, self.iterator)  # type: ignore[return-value]
