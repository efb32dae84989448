"""Who may reach a sandbox's port: a bearer with the `ports` scope (the route's guard), or a
preview link (links.py) presented as a query parameter or, after that, as a cookie (for the
requests of the port's own pages: browsers.py)."""

from __future__ import annotations

import hashlib
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl

from litestar.connection import ASGIConnection

from service.auth.authenticate import Authenticator
from service.auth.principal import Principal
from service.errors import NotFound, Unauthenticated
from service.ports.browsers import refuse_cross_site
from service.ports.links import PARAM, Link, PreviewLinks


def link_in(scope: Any) -> tuple[str | None, bool]:
    """The preview link a request carries, and whether it came in the query (a first visit,
    answered with the cookie) rather than in the cookie."""
    for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
        if name == PARAM:
            return value, True
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            found = _cookie(value.decode("latin-1"), PARAM)
            if found is not None:
                return found, False
    return None, False


def without_link(query: bytes) -> bytes:
    """The query string with the link taken out (the sandbox never sees it), every other
    parameter as it came."""
    pieces = query.split(b"&")
    kept = [piece for piece in pieces if not _names_link(piece)]
    return query if len(kept) == len(pieces) else b"&".join(kept)


def _names_link(piece: bytes) -> bool:
    """Whether one `name=value` of a query is the link's (its name decoded as link_in does)."""
    decoded = parse_qsl(piece.decode("latin-1"), keep_blank_values=True)
    return bool(decoded) and decoded[0][0] == PARAM


def cookies_without_link(header: bytes) -> bytes | None:
    """The Cookie header with Airlock's own cookie taken out; None when nothing is left."""
    kept = [
        part.strip()
        for part in header.decode("latin-1").split(";")
        if part.strip() and part.split("=", 1)[0].strip() != PARAM
    ]
    return "; ".join(kept).encode("latin-1") if kept else None


def matching(link: Link, sandbox_id: str, port: str) -> Link:
    """A link is for one port of one sandbox: any other is answered as not there."""
    if link.sandbox_id != sandbox_id or str(link.port) != port:
        raise NotFound(f"no sandbox {sandbox_id}")
    return link


async def preview_principal(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    """The caller a preview link stands for: `ports` on its sandbox until it expires, while
    the API key that made it (and the token, if one did) holds. No link at all is a 401, as
    for a missing bearer; the cookie alone from another origin, a 403 (browsers.py)."""
    token, in_query = link_in(connection.scope)
    if token is None:
        raise Unauthenticated("no bearer credential and no preview link")
    links: PreviewLinks = connection.app.state.preview_links
    params = connection.path_params
    link = matching(links.verify(token), params["sandbox_id"], params["port"])
    if not in_query:
        refuse_cross_site(connection.scope)
    return await _holding(connection.app.state.authenticator, link)


async def _holding(authenticator: Authenticator, link: Link) -> Principal:
    """The link's principal while nothing that made it was revoked: kept in the bearer
    credentials' cache (emptied by every revocation), else looked up in one statement."""
    cache = authenticator.cache
    digest = hashlib.sha256(link.token.encode()).digest()
    cached = cache.get(digest)
    if cached is not None:
        return cached
    mark = cache.mark()
    principal = await authenticator.principal_of(link.as_token_claims(), link.minted_by)
    cache.put(digest, principal, mark)
    return principal


def _cookie(header: str, name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None
