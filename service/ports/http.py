"""An HTTP request relayed to a server inside the sandbox over one port connection.

HTTP/1.1 is spoken with h11 (one request per connection, `Connection: close`). The request's
body is passed on as it arrives and the answer's as it comes, both ways at once (a server may
answer before it read everything); nothing is held whole. Once the answer has begun, a
failure can only cut it short.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import h11

from service.hop import named_by_connection
from service.ports import browsers
from service.ports.service import BadUpstream
from service.ports.upstream import HOP, Upstream, confine_cookie
from service.runtime import PortConnection

# Never passed back: hop-by-hop headers (the ASGI server frames the answer itself).
_ANSWER_DROPPED = HOP - {b"host", b"authorization"}


class HttpProxy:
    """The ASGI answer of the port route: relays the request, then the sandbox's answer."""

    def __init__(self, connection: PortConnection, upstream: Upstream) -> None:
        self.connection = connection
        self.upstream = upstream
        self.h11 = h11.Connection(h11.CLIENT)
        self.started = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        sending = asyncio.ensure_future(self._request(scope, receive))
        try:
            await self._answer(scope, send, sending)
        except ConnectionAbortedError:
            pass  # the caller went away: the connection into the sandbox closes
        finally:
            sending.cancel()
            with contextlib.suppress(BaseException):
                await sending
            await self.connection.close()

    async def _write(self, event: Any) -> None:
        data = self.h11.send(event)
        if data:
            await self.connection.write(data)

    async def _request(self, scope: Any, receive: Any) -> None:
        """The request line, headers and body; then waits for the caller to go away."""
        headers = [(b"host", self.upstream.host.encode()), *self.upstream.headers]
        chunked = any(k == b"transfer-encoding" for k, _ in scope["headers"])
        if chunked and not any(k == b"content-length" for k, _ in headers):
            headers.append((b"transfer-encoding", b"chunked"))
        headers.append((b"connection", b"close"))
        method = scope["method"].encode()
        await self._write(h11.Request(method=method, target=self.upstream.target, headers=headers))
        more = True
        with contextlib.suppress(ConnectionResetError, h11.LocalProtocolError):
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ConnectionAbortedError("the caller went away")
                body = message.get("body", b"")
                if body:
                    await self._write(h11.Data(data=body))
                more = message.get("more_body", False)
            await self._write(h11.EndOfMessage())
        while (await receive())["type"] != "http.disconnect":
            pass
        raise ConnectionAbortedError("the caller went away")

    async def _next(self, sending: asyncio.Future[None]) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            reading = asyncio.ensure_future(self.connection.read())
            await asyncio.wait({reading, sending}, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():  # the caller went away
                reading.cancel()
                sending.result()
            self.h11.receive_data(reading.result())

    async def _answer(self, scope: Any, send: Any, sending: asyncio.Future[None]) -> None:
        try:
            while True:
                event = await self._next(sending)
                if isinstance(event, h11.InformationalResponse):
                    continue
                if isinstance(event, h11.Response):
                    await self._start(send, event)
                elif isinstance(event, h11.Data):
                    await send({"type": "http.response.body", "body": bytes(event.data),
                                "more_body": True})  # fmt: skip
                elif isinstance(event, h11.EndOfMessage):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                else:
                    raise h11.RemoteProtocolError("the connection closed before the answer")
        except h11.RemoteProtocolError as exc:
            if not self.started:
                raise BadUpstream(
                    f"the server on port {scope['path_params']['port']} in the sandbox did not "
                    f"give an HTTP answer: {exc}"
                ) from exc
            # Cut short: the caller sees the body end early (no final empty chunk).

    async def _start(self, send: Any, response: h11.Response) -> None:
        dropped = _ANSWER_DROPPED | named_by_connection(response.headers)
        on_api_origin = self.upstream.on_api_origin
        headers = []
        for name, value in response.headers:
            if name in dropped or not browsers.kept(name, on_api_origin):
                continue
            if name == b"set-cookie":
                confined = confine_cookie(value, self.upstream.cookie_path)
                if confined is None:
                    continue
                value = confined
            headers.append((name, value))
        if self.upstream.set_cookie is not None:
            headers.append((b"set-cookie", self.upstream.set_cookie))
        if on_api_origin:  # a policy of the sandbox's own is kept: browsers apply both
            headers.append((b"content-security-policy", browsers.API_ORIGIN_POLICY))
        self.started = True
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": headers})  # fmt: skip
