"""Every route with every method and no credential: routes behind authentication answer 401
(405 for a method the path does not have), public routes answer without one, and nothing
answers 5xx. The paths are the OpenAPI document's and the routes it leaves out."""

from __future__ import annotations

import re

import pytest
from litestar import Litestar

from service.ids import new_id
from tests.conftest import Api

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD")
ALL = frozenset(METHODS)

# Routes anyone may call (the metrics route answers its own token, when one is set).
PUBLIC = {"/healthz", "/readyz", "/.well-known/jwks.json", "/metrics", "/schema",
          "/schema/openapi.json", "/schema/{path}"}  # fmt: skip

# Routes the document leaves out, with their methods: a port's pass-through has no schema, the
# MCP endpoint is a mounted app taking any method, the nodes' routes are internal.
UNDOCUMENTED = {
    "/v1/sandboxes/{sandbox_id}/ports/{port}": ALL,
    "/v1/sandboxes/{sandbox_id}/ports/{port}/{path}": ALL,
    "/mcp": ALL,
    "/internal/v1/snapshots/{snapshot_id}": frozenset({"GET", "OPTIONS"}),
    "/internal/v1/cleanup": frozenset({"POST", "OPTIONS"}),
}

# Plausible values for the path parameters: ids of the right form that name nothing.
VALUES = {
    "sandbox_id": new_id("sbx"),
    "exec_id": new_id("exe"),
    "context_id": new_id("ctx"),
    "key_id": new_id("key"),
    "tenant_id": new_id("ten"),
    "review_id": new_id("rev"),
    "snapshot_id": new_id("sbx"),
    "jti": "3f1c2a9e-8d4b-4c1e-9a57-6b2f0e1d7c40",
    "node_id": "node-1",
    "name": "base",
    "template": "default",
    "port": "8000",
    "path": "echo",
}


def concrete(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: VALUES[m.group(1)], path)


async def walked(api: Api) -> dict[str, frozenset[str]]:
    """Each path to walk with the methods it has (OPTIONS always)."""
    r = await api.client.get("/schema/openapi.json")
    assert r.status_code == 200, r.text
    documented = {
        path: frozenset({m.upper() for m in item} & ALL | {"OPTIONS"})
        for path, item in r.json()["paths"].items()
    }
    public = {path: ALL for path in PUBLIC if path not in documented}
    return {**documented, **UNDOCUMENTED, **public}


def route_paths(app: Litestar) -> set[str]:
    """Every route's path, HTTP, WebSocket or mounted app, in the document's form."""
    return {route.path_format for route in app.routes}


@pytest.mark.sqlite
async def test_the_walk_covers_every_route(api: Api) -> None:
    paths = await walked(api)
    missing = route_paths(api.app) - set(paths)
    assert not missing, f"routes the walk leaves out: {sorted(missing)}"


@pytest.mark.sqlite
async def test_anonymous_callers_get_401_or_405_never_a_server_error(api: Api) -> None:
    wrong = []
    for path, methods in (await walked(api)).items():
        for method in METHODS:
            r = await api.client.request(method, concrete(path))
            if path in PUBLIC:
                ok = r.status_code < 500
            else:
                ok = r.status_code == (401 if method in methods else 405)
            if not ok:
                wrong.append(f"{method} {concrete(path)}: {r.status_code} {r.text[:80]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.sqlite
async def test_public_routes_answer_options_without_a_credential(api: Api) -> None:
    for path in ("/healthz", "/readyz", "/.well-known/jwks.json"):
        r = await api.client.options(path)
        assert r.status_code == 204, (path, r.status_code, r.text)
        assert "GET" in r.headers["allow"]


@pytest.mark.sqlite
async def test_anonymous_options_on_a_port_is_401(api: Api) -> None:
    """The handler of the port route takes OPTIONS itself: without a credential it ran with no
    principal and answered 500."""
    r = await api.client.options(f"/v1/sandboxes/{VALUES['sandbox_id']}/ports/8000/echo")
    assert r.status_code == 401, r.text
    assert r.json()["code"] == "unauthenticated"
    assert r.headers["www-authenticate"].lower().startswith("bearer")
