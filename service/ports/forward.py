"""A WebSocket to a sandbox's port, relayed by an API replica to the sandbox's node.

The replica opens the same route on the node with aiohttp's WebSocket client (the caller
carried in a node token, as for HTTP), then passes whole messages both ways and the close
with its code. The node does the rest (the connection into the sandbox, the audit).
"""

from __future__ import annotations

from typing import Any

import aiohttp

from service.errors import NodeUnavailable
from service.ports.links import PreviewLinks
from service.ports.upstream import link_cookie
from service.ports.websocket import MAX_MESSAGE, both_ways, subprotocols

# Passed from the caller to the node; the handshake's own headers are aiohttp's to make.
_KEPT = frozenset({b"cookie", b"origin", b"user-agent", b"x-airlock-preview-host"})


async def relay(
    session: aiohttp.ClientSession,
    url: str,
    token: str,
    extra: dict[str, str],
    links: PreviewLinks,
    scope: Any,
    receive: Any,
    send: Any,
) -> None:
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k in _KEPT}
    headers.update(extra)
    headers["Authorization"] = f"Bearer {token}"
    try:
        node = await session.ws_connect(
            url,
            headers=headers,
            protocols=subprotocols(scope),
            max_msg_size=MAX_MESSAGE,
            autoping=True,
        )
    except aiohttp.WSServerHandshakeError as exc:
        # The node refused (a 404, 409, 502...): the caller's handshake is refused too.
        await send({"type": "websocket.close", "code": 1008 if exc.status < 500 else 1011})
        return
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise NodeUnavailable("the node that holds this sandbox cannot be reached") from exc
    async with node:
        if (await receive())["type"] != "websocket.connect":
            return
        cookie = link_cookie(scope, links)
        await send(
            {
                "type": "websocket.accept",
                "subprotocol": node.protocol,
                "headers": [(b"set-cookie", cookie)] if cookie else [],
            }
        )
        await both_ways(_from_caller(node, receive), _from_node(node, send))


async def _from_caller(node: aiohttp.ClientWebSocketResponse, receive: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            await node.close(code=message.get("code", 1000))
            return
        if message.get("text") is not None:
            await node.send_str(message["text"])
        elif message.get("bytes") is not None:
            await node.send_bytes(message["bytes"])


async def _from_node(node: aiohttp.ClientWebSocketResponse, send: Any) -> None:
    async for message in node:
        if message.type is aiohttp.WSMsgType.TEXT:
            await send({"type": "websocket.send", "text": message.data})
        elif message.type is aiohttp.WSMsgType.BINARY:
            await send({"type": "websocket.send", "bytes": message.data})
    code = node.close_code or 1000
    await send({"type": "websocket.close", "code": code if code < 1004 or code >= 3000 else 1000})
