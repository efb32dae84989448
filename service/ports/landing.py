"""A browser that opens a page with a preview link in its URL is sent on to the same page
without it: a 303 whose answer sets the link as the cookie, as any first visit's does. The
page then loads under an address without the link, so the link (a bearer credential) stays
out of the address bar, the history, bookmarks and the `Referer` of the page's own requests.

Only a page a browser opens in its window is redirected (browsers.opens_page). Other callers
(scripts, SDKs, curl: no `Sec-Fetch-*` headers) and other requests go through with the link in
the query; the sandbox's server never sees it either way.
"""

from __future__ import annotations

from typing import Any

from litestar.response.base import ASGIResponse

from service.ports import access, browsers
from service.ports.upstream import Upstream


def landing(scope: Any, target: Upstream) -> ASGIResponse | None:
    """The 303 to the page without the link, when a browser opens it with a valid link in the
    query (the one case where the answer sets the cookie); None: the request goes on."""
    if target.set_cookie is None or not browsers.opens_page(scope):
        return None
    headers = [(b"location", address_without_link(scope)), (b"set-cookie", target.set_cookie)]
    return ASGIResponse(status_code=303, encoded_headers=headers)


def address_without_link(scope: Any) -> bytes:
    """The request's own address with the link taken out of its query, relative to the page
    (`./last-segment?rest`), so that it holds on the path route, on a preview host, and
    behind a proxy that serves the API under a path of its own."""
    raw = (scope.get("raw_path") or scope["path"].encode()).split(b"?", 1)[0]
    query = access.without_link(scope.get("query_string") or b"")
    page = b"./" + raw.rsplit(b"/", 1)[-1]
    return page + b"?" + query if query else page
