"""A streamed download's body is closed when its response ends, whatever ended it: a client
that goes away while the server waits to send (the common case for a large archive), a body
sent whole, or a response that fails. Driven at the ASGI level, with the garbage collector off,
so a clean-up that only happens when the collector finds an abandoned generator fails here."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from litestar import Litestar, get

from service.streaming import Body, ClosingStream


class Source:
    """A runtime's stream stand-in that records whether it was closed, and an `after` hook."""

    def __init__(self, pieces: int) -> None:
        self.pieces = pieces
        self.closed = False
        self.removed = 0

    async def stream(self) -> AsyncIterator[bytes]:
        try:
            for _ in range(self.pieces):
                yield b"x" * 65536
        finally:
            self.closed = True

    async def remove(self) -> None:
        await asyncio.sleep(0)  # an await, as the real removal is an exec
        self.removed += 1


@pytest.fixture
def no_gc() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def app_for(source: Source) -> Litestar:
    @get("/download")
    async def download() -> ClosingStream:
        rest = source.stream()
        first = await anext(rest)
        return ClosingStream(Body(first, rest, after=source.remove))

    return Litestar([download])


async def call(app: Litestar, send: Any, receive: Any) -> None:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/download",
        "raw_path": b"/download",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"test")],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
        "state": {},
    }
    await app(scope, receive, send)  # type: ignore[arg-type]


@pytest.mark.usefixtures("no_gc")
async def test_a_client_gone_while_the_server_waits_to_send_closes_the_body() -> None:
    source = Source(pieces=1000)
    sent_first = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            if sent_first.is_set():
                await asyncio.Event().wait()  # the socket is full: this send never returns
            sent_first.set()

    async def receive() -> dict[str, Any]:
        await sent_first.wait()
        await asyncio.sleep(0.05)  # the server is now blocked in its second send
        return {"type": "http.disconnect"}

    await asyncio.wait_for(call(app_for(source), send, receive), 10)
    assert source.closed
    assert source.removed == 1


@pytest.mark.usefixtures("no_gc")
async def test_a_body_sent_whole_is_closed_once() -> None:
    source = Source(pieces=3)
    got: list[bytes] = []
    ended = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            got.append(message.get("body", b""))
            if not message.get("more_body", False):
                ended.set()

    async def receive() -> dict[str, Any]:  # as a server says once the response is over
        await ended.wait()
        return {"type": "http.disconnect"}

    await asyncio.wait_for(call(app_for(source), send, receive), 10)
    assert sum(len(b) for b in got) == 3 * 65536
    assert source.closed
    assert source.removed == 1


@pytest.mark.usefixtures("no_gc")
async def test_a_send_that_fails_still_closes_the_body() -> None:
    source = Source(pieces=1000)

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            raise OSError("connection reset")

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    with pytest.raises(Exception, match="after response started"):
        await asyncio.wait_for(call(app_for(source), send, receive), 10)
    assert source.closed
    assert source.removed == 1


async def test_an_empty_stream_ends_at_once_and_runs_its_clean_up() -> None:
    source = Source(pieces=0)
    body = Body(None, source.stream(), after=source.remove)
    assert [chunk async for chunk in body] == []
    assert source.removed == 1
    await body.aclose()
    assert source.removed == 1
