"""Request ids: a sane incoming `X-Request-ID` is kept, else one is made; every response has it."""

from __future__ import annotations

import re
import secrets
from typing import Any

HEADER = "x-request-id"
_SANE = re.compile(r"^[A-Za-z0-9._:\-]{8,128}$")


def request_id_for(scope: Any) -> str:
    state = scope.setdefault("state", {})
    rid = state.get("request_id")
    if rid is None:
        rid = None
        for name, value in scope.get("headers", ()):
            if name == HEADER.encode():
                candidate = value.decode("latin-1")
                if _SANE.match(candidate):
                    rid = candidate
                break
        rid = rid or f"req_{secrets.token_hex(12)}"
        state["request_id"] = rid
    return rid


async def add_request_id_header(message: Any, scope: Any) -> None:
    """`before_send` hook: every HTTP response carries the request id, errors included."""
    if message["type"] == "http.response.start":
        headers = list(message.get("headers", []))
        headers.append((HEADER.encode(), request_id_for(scope).encode()))
        message["headers"] = headers
