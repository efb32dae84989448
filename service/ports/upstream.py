"""What a proxied request becomes on its way into the sandbox, and its answer on the way out."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from service.errors import Unauthenticated
from service.hop import NOT_RELAYED, named_by_connection
from service.ports import access, browsers
from service.ports.links import PARAM, PreviewLinks

# The host name a preview host layer (hosts.py) put the request under, for the cookie's path.
PREVIEW_HOST = b"x-airlock-preview-host"
# Never passed either way: hop-by-hop headers, the caller's credential, what we set ourselves.
HOP = NOT_RELAYED | frozenset(
    {
        b"expect",  # the ASGI server answered a `100-continue` itself
        # The page that linked here: its URL can carry the preview link's parameter.
        b"referer",
        PREVIEW_HOST,
    }
)
# The sandbox's server sets its own WebSocket handshake (websocket.py).
WS_OWN = frozenset(
    {
        b"sec-websocket-key",
        b"sec-websocket-version",
        b"sec-websocket-extensions",
        b"sec-websocket-protocol",
        b"sec-websocket-accept",
        b"content-length",
    }
)


@dataclass(frozen=True, slots=True)
class Upstream:
    host: str  # the Host header the sandbox's server sees
    target: bytes  # the path after the port, and the query without the link
    headers: list[tuple[bytes, bytes]]  # the caller's, cleaned, with X-Forwarded-*
    set_cookie: bytes | None  # for the answer, when a link came in the query
    # Where the sandbox's own cookies are confined: the port's path on the path route (every
    # sandbox shares the API's origin there), None on a preview host (its own origin).
    cookie_path: bytes | None = None

    @property
    def on_api_origin(self) -> bool:
        """Served by the path route, on the API's own origin (browsers.py)."""
        return self.cookie_path is not None


def upstream(scope: Any, host: str, links: PreviewLinks) -> Upstream:
    sandbox_id, port = scope["path_params"]["sandbox_id"], scope["path_params"]["port"]
    prefix = f"/v1/sandboxes/{sandbox_id}/ports/{port}"
    raw = scope.get("raw_path") or scope["path"].encode()
    parts = raw.split(b"/", 6)  # "", "v1", "sandboxes", id, "ports", port, the rest
    target = b"/" + (parts[6] if len(parts) == 7 else b"")
    query = access.without_link(scope.get("query_string") or b"")
    if query:
        target += b"?" + query
    preview_host = _header(scope, PREVIEW_HOST)
    if preview_host is None:
        browsers.refuse_worker_script(scope)
    dropped = HOP | named_by_connection(scope["headers"])
    headers = []
    for name, value in scope["headers"]:
        name = name.lower()
        if name in dropped:
            continue
        if name == b"cookie":
            value = access.cookies_without_link(value)
            if value is None:
                continue
        headers.append((name, value))
    client_host = (_header(scope, b"host") or b"").decode("latin-1")
    headers += [
        (b"x-forwarded-host", (preview_host or client_host.encode("latin-1"))),
        (b"x-forwarded-proto", scope.get("scheme", "http").encode()),
    ]
    if preview_host is None:
        headers.append((b"x-forwarded-prefix", prefix.encode()))
    cookie_path = None if preview_host is not None else f"{prefix}/".encode()
    return Upstream(host, target, headers, link_cookie(scope, links), cookie_path)


def confine_cookie(value: bytes, path: bytes | None) -> bytes | None:
    """A `Set-Cookie` of the sandbox's server as the caller gets it: never for a wider domain
    (the attribute goes: the cookie stays with the host that answered), on the path route
    never beyond the port's path, and never one named like the preview link's (None: dropped).
    So a sandbox's cookies reach neither other sandboxes nor the API."""
    parts = [p.strip() for p in value.split(b";")]
    name = parts[0].split(b"=", 1)[0].strip()
    if not name or name.lower() == PARAM.encode():
        return None
    kept = [
        p
        for p in parts[1:]
        if p.split(b"=", 1)[0].strip().lower() not in (b"domain", b"path" if path else b"")
    ]
    if path is not None:
        kept.append(b"Path=" + path)
    return b"; ".join([parts[0], *kept])


def link_cookie(scope: Any, links: PreviewLinks) -> bytes | None:
    """A link that came in the query is set as a cookie on the port's path (or preview host),
    for as long as it lasts; HttpOnly, and Secure when the request came over TLS."""
    params = scope["path_params"]
    prefix = f"/v1/sandboxes/{params['sandbox_id']}/ports/{params['port']}"
    preview_host = _header(scope, PREVIEW_HOST)
    token, in_query = access.link_in(scope)
    if token is None or not in_query:
        return None
    try:
        link = links.verify(token)  # verified again here: a node sets what it checked itself
    except Unauthenticated:
        return None  # the caller came with a bearer; the link is only dropped
    ttl = max(0, int(link.expires_at.timestamp() - time.time()))
    path = "/" if preview_host is not None else prefix + "/"
    secure = "; Secure" if scope.get("scheme") in ("https", "wss") else ""
    return (f"{PARAM}={token}; Path={path}; Max-Age={ttl}; HttpOnly; SameSite=Lax{secure}").encode(
        "latin-1"
    )


def _header(scope: Any, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return value
    return None
