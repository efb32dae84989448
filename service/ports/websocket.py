"""A WebSocket relayed to a server inside the sandbox over one port connection.

The caller's side is the ASGI server's; the sandbox's side is spoken with the `websockets`
library's sans-I/O client over the connection: its handshake (with the caller's headers,
subprotocols and the Host naming the sandbox), then whole messages both ways, pings answered,
and the close passed on with its code. A message is at most MAX_MESSAGE bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidHandshake
from websockets.frames import Close, Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from service.ports.service import BadUpstream
from service.ports.upstream import WS_OWN, Upstream
from service.runtime import PortConnection

# Held whole in this process while relayed: small, since a sandbox may hold many connections.
MAX_MESSAGE = 1 << 20
HANDSHAKE_TIMEOUT_S = 15.0


class SocketRelay:
    def __init__(self, connection: PortConnection, upstream: Upstream, scope: Any) -> None:
        self.connection = connection
        self.upstream = upstream
        self.protocol = ClientProtocol(
            parse_uri("ws://sandbox" + upstream.target.decode("latin-1")),
            subprotocols=subprotocols(scope) or None,  # type: ignore[arg-type]
            max_size=MAX_MESSAGE,
        )
        self._parts: list[bytes] = []
        self._text = False
        self._pending: list[Frame] = []  # frames that came with the handshake's answer

    async def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                await self.connection.write(data)
            else:
                await self.connection.write_eof()

    async def _receive(self) -> tuple[bytes, list[Any]]:
        """What the sandbox's side sent next (b"" once it closed), and the events it makes."""
        data = await self.connection.read()
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        return data, self.protocol.events_received()

    async def handshake(self) -> str | None:
        """Open the WebSocket in the sandbox; its subprotocol. BadUpstream when it refuses."""
        request = self.protocol.connect()
        del request.headers["Host"]
        request.headers["Host"] = self.upstream.host
        for name, value in self.upstream.headers:
            if name not in WS_OWN:
                request.headers[name.decode("latin-1")] = value.decode("latin-1")
        self.protocol.send_request(request)
        await self._flush()
        async with asyncio.timeout(HANDSHAKE_TIMEOUT_S):
            while True:
                data, events = await self._receive()
                for event in events:
                    if isinstance(event, Response):
                        error = self.protocol.handshake_exc
                        if error is not None:
                            raise BadUpstream(_refusal(event, error))
                        return self.protocol.subprotocol
                    self._pending.append(event)  # frames sent right after the handshake
                if not data:
                    raise BadUpstream("the sandbox's server closed during the handshake")

    async def run(self, receive: Any, send: Any) -> None:
        """Relay until either side closes."""
        try:
            await both_ways(self._from_caller(receive), self._from_sandbox(send))
        finally:
            await self.connection.close()

    async def _from_caller(self, receive: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                code = message.get("code", 1000)
                with contextlib.suppress(Exception):
                    self.protocol.send_close(code if _sendable(code) else 1000)
                    await self._flush()
                return
            if message.get("text") is not None:
                self.protocol.send_text(message["text"].encode())
            elif message.get("bytes") is not None:
                self.protocol.send_binary(message["bytes"])
            await self._flush()

    async def _from_sandbox(self, send: Any) -> None:
        for frame in self._pending:
            await self._pass(frame, send)
        while True:
            data, events = await self._receive()
            for event in events:
                if await self._pass(event, send):
                    return
            await self._flush()  # pongs, the answer to a close
            if not data:
                await send({"type": "websocket.close", "code": 1011})
                return

    async def _pass(self, frame: Frame, send: Any) -> bool:
        """Pass one frame on; True once the sandbox's side closed."""
        if frame.opcode is Opcode.CLOSE:
            close = Close.parse(frame.data) if frame.data else Close(1000, "")
            await self._flush()
            code = close.code if _sendable(close.code) else 1000
            await send({"type": "websocket.close", "code": code, "reason": close.reason})
            return True
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self._text, self._parts = frame.opcode is Opcode.TEXT, []
        elif frame.opcode is not Opcode.CONT:
            return False  # pings and pongs: the protocol answers them
        self._parts.append(bytes(frame.data))
        if frame.fin:
            data = b"".join(self._parts)
            self._parts = []
            if self._text:
                await send({"type": "websocket.send", "text": data.decode()})
            else:
                await send({"type": "websocket.send", "bytes": data})
        return False


def subprotocols(scope: Any) -> list[str]:
    """The subprotocols the caller's handshake asks for, in its order."""
    return [
        p.strip()
        for k, v in scope["headers"]
        if k == b"sec-websocket-protocol"
        for p in v.decode("latin-1").split(",")
        if p.strip()
    ]


async def both_ways(inbound: Awaitable[None], outbound: Awaitable[None]) -> None:
    """Relays both directions at once until either ends, then stops the other."""
    tasks = (asyncio.ensure_future(inbound), asyncio.ensure_future(outbound))
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def _sendable(code: int) -> bool:
    return code in (1000, 1001) or 3000 <= code < 5000


def _refusal(response: Response, error: InvalidHandshake) -> str:
    return f"the sandbox's server refused the WebSocket ({response.status_code}: {error})"
