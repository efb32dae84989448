"""Preview host names: `{port}-{sandbox id}.<AIRLOCK_PREVIEW_DOMAIN>` serves that port.

An ASGI layer in front of the app's router: a request whose Host is under the preview domain
is put under the port route (`/v1/sandboxes/{id}/ports/{port}` + its own path), so only that
route is ever reached on such a host, with its authentication, routing to the node and
audit. The host it came under travels in a header of ours (any such header from the caller is
dropped first), for the link's cookie and the X-Forwarded-Host the sandbox's server sees.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from service.errors import PROBLEM_MEDIA_TYPE
from service.ports.upstream import PREVIEW_HOST

_LABEL = re.compile(r"([0-9]{1,5})-([a-z0-9_]{1,64})")


class PreviewHosts:
    def __init__(self, app: Any, domain: str) -> None:
        self.app = app
        self.domain = domain.lower()  # empty: no preview hosts; the header is still dropped
        self.suffix = "." + self.domain

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != PREVIEW_HOST]
        host = next((v for k, v in headers if k.lower() == b"host"), b"").decode("latin-1")
        name = host.rsplit(":", 1)[0].lower() if not host.startswith("[") else ""
        if not self.domain or not name.endswith(self.suffix):
            if len(headers) != len(scope["headers"]):  # only this layer says what host it was
                scope = {**scope, "headers": headers}
            await self.app(scope, receive, send)
            return
        found = _LABEL.fullmatch(name[: -len(self.suffix)])
        if found is None:
            await self._not_found(scope, send, name)
            return
        port, sandbox_id = found.groups()
        prefix = f"/v1/sandboxes/{sandbox_id}/ports/{port}"
        raw = scope.get("raw_path") or scope["path"].encode()
        routed = dict(scope)
        routed["path"] = prefix + scope["path"]
        routed["raw_path"] = prefix.encode() + raw
        routed["headers"] = [*headers, (PREVIEW_HOST, name.encode())]
        await self.app(routed, receive, send)

    async def _not_found(self, scope: Any, send: Any, name: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = msgspec.json.encode(
            {
                "type": "https://airlock.dev/problems/not_found",
                "title": "Not found",
                "status": 404,
                "code": "not_found",
                "detail": f"{name} names no sandbox port: use {{port}}-{{sandbox id}}{self.suffix}",
            }
        )
        headers = [
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", b"%d" % len(body)),
        ]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": body})
