"""Requests no handler can take safely are refused before routing: a NUL character in the
path, the query or a JSON body (databases refuse or silently keep it; argv cannot carry it)."""

from __future__ import annotations

import json
import re
from typing import Any

from service.requestid import request_id_for

# `\u0000` in JSON text, unless its backslash is itself escaped (`\\u0000` is plain text).
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def _has_nul(part: bytes) -> bool:
    return b"\x00" in part or b"%00" in part.lower()


def _is_json(scope: Any) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return b"json" in value.lower()
    return False


async def _refuse(scope: Any, send: Any, where: str) -> None:
    code = "invalid_path" if where == "path" else "validation_failed"
    body = json.dumps(
        {
            "type": f"https://airlock.dev/problems/{code}",
            "title": "The request is not valid",
            "status": 422,
            "code": code,
            "detail": f"invalid {where}: a NUL character is not allowed",
            "instance": scope.get("path"),
            "request_id": request_id_for(scope),
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 422,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RejectNul:
    """ASGI middleware. JSON bodies are read whole here (Litestar would read them whole too);
    other bodies, such as file uploads, stream through untouched."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Some servers put the query in raw_path too; the query is judged below.
        raw_path = (scope.get("raw_path") or scope.get("path", "").encode()).split(b"?", 1)[0]
        if _has_nul(raw_path):
            await _refuse(scope, send, "path")
            return
        if _has_nul(scope.get("query_string", b"")):
            await _refuse(scope, send, "query")
            return
        if not _is_json(scope):
            await self.app(scope, receive, send)
            return
        messages = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if b"\x00" in body or _JSON_NUL.search(body):
            await _refuse(scope, send, "request body")
            return

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
