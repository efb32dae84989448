"""What a sandbox's port may tell a browser, and what a preview link's cookie may be used for.

On the path route a sandbox's pages come from the API's own origin, which every sandbox's
path route shares. So there:

- each answer carries a `Content-Security-Policy: sandbox` policy without `allow-same-origin`:
  the browser gives the page an opaque origin, whose scripts reach neither the API's origin
  (its storage, a service worker's registration) nor another sandbox's pages and cookies;
- the headers by which an answer sets something for the whole origin (a service worker's
  scope, CORS grants, HSTS, error reporting, an authentication prompt...) are dropped;
- a service worker's script is never fetched.

On a preview host (an origin for one port of one sandbox) the page is on its own; only what
reaches past its origin is dropped.

A browser attaches a cookie to requests that other pages make: one authenticated by the
preview link's cookie alone that changes state (any method but GET and HEAD) or opens a
WebSocket is refused unless it comes from the port's own origin. Every preview host is one
site, so `SameSite=Lax` alone does not keep one sandbox's pages from another's cookie.

A browser that opens a page with the link in its URL is sent on to the same page without it
(landing.py): the link stays out of the address bar, the history and later `Referer`s.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from service.errors import Forbidden

# Scripts, forms, popups (sandboxed as well) and downloads work; the origin stays opaque.
API_ORIGIN_POLICY = b"sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

# Dropped wherever the port is served: they act beyond the answering origin.
_BEYOND_ORIGIN = frozenset(
    {
        b"clear-site-data",  # its "cookies" wipes the cookies of the whole site
        b"alt-svc",  # would send the origin's later requests to another endpoint
    }
)
# Dropped on the API's origin: each sets something for every page of that origin.
_ORIGIN_WIDE = frozenset(
    {
        b"service-worker-allowed",  # a worker's scope beyond its script's path
        b"link",  # `rel=serviceworker` registers a worker where a browser takes it
        b"timing-allow-origin",
        b"cross-origin-resource-policy",
        b"strict-transport-security",  # max-age=0 would end the API's own HSTS
        b"nel",  # network errors (URLs with links in them) reported elsewhere
        b"report-to",
        b"reporting-endpoints",
        b"www-authenticate",  # a credential prompt under the API's host name
        b"accept-ch",
        b"critical-ch",
        b"activate-storage-access",
        b"set-login",
        b"origin-agent-cluster",
    }
)
_CORS = b"access-control-"
_SAFE_METHODS = frozenset({"GET", "HEAD"})
# Either says that a browser fetches a service worker's script.
_WORKER_SCRIPT = ((b"service-worker", b"script"), (b"sec-fetch-dest", b"serviceworker"))


class WorkerRefused(Forbidden):
    code, title = "service_worker_refused", "No service worker is served on the API's origin"


class CrossSiteRefused(Forbidden):
    code, title = "cross_site_refused", "A preview link's cookie is not for other sites' requests"


def kept(name: bytes, on_api_origin: bool) -> bool:
    """Whether an answer's header (its name in lower case) reaches the browser."""
    if name in _BEYOND_ORIGIN:
        return False
    return not on_api_origin or (name not in _ORIGIN_WIDE and not name.startswith(_CORS))


def refuse_worker_script(scope: Any) -> None:
    """A service worker registered from the path route would be scoped to the API's origin."""
    for name, value in scope["headers"]:
        if (name.lower(), value.strip().lower()) in _WORKER_SCRIPT:
            raise WorkerRefused(
                "a sandbox's port serves no service worker on the API's origin; "
                "use the port's preview host"
            )


def opens_page(scope: Any) -> bool:
    """Whether a browser is loading a page into its window, so that the URL goes to its address
    bar and history. A frame's page is left out: in a frame of another site's page, browsers
    neither keep nor send a `SameSite=Lax` cookie, so the link in the query is all it has."""
    if scope["type"] != "http" or scope["method"] != "GET":
        return False
    destination = _header(scope, b"sec-fetch-dest")
    if destination is not None:
        return destination == b"document"
    return _header(scope, b"sec-fetch-mode") == b"navigate"


def refuse_cross_site(scope: Any) -> None:
    """Refuse a request that the preview link's cookie alone authenticates when another
    origin made it and it may change state (a WebSocket may always)."""
    if scope["type"] == "http" and scope["method"] in _SAFE_METHODS:
        return
    site = _header(scope, b"sec-fetch-site")
    if site is not None and site not in (b"same-origin", b"none"):
        raise CrossSiteRefused(
            f"a {site.decode('latin-1')} request is not authenticated by a preview link's "
            "cookie; send the link or a bearer credential"
        )
    origin = _header(scope, b"origin")
    host = _header(scope, b"host") or b""
    if origin is not None and not _same_origin(origin.decode("latin-1"), host.decode("latin-1")):
        raise CrossSiteRefused(
            f"a request from {origin.decode('latin-1')[:100]!r} is not authenticated by a "
            "preview link's cookie; send the link or a bearer credential"
        )


def _same_origin(origin: str, host: str) -> bool:
    """Whether `Origin` names the host the request came to. The scheme is not compared: behind
    a proxy that ends TLS this process may not know it (a page of the same host over the other
    scheme is the same host's)."""
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # `null`: an opaque origin (a sandboxed page, a file)
    default = ":443" if parts.scheme == "https" else ":80"
    return _without(parts.netloc.lower(), default) == _without(host.lower(), default)


def _without(netloc: str, default_port: str) -> str:
    return netloc[: -len(default_port)] if netloc.endswith(default_port) else netloc


def _header(scope: Any, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return value.strip().lower()
    return None
