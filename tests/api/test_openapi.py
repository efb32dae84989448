"""The OpenAPI document states the problems each route can give and which routes are public,
and OPTIONS names every method of a path (schemathesis checks the same over HTTP on gVisor in
tests/e2e/test_openapi_fuzz.py; these are the fast, always-run halves)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api

PROBLEM = {"$ref": "#/components/schemas/Problem"}
METHODS = {"get", "put", "post", "patch", "delete"}


async def _operations(api: Api) -> list[tuple[str, str, dict[str, Any]]]:
    r = await api.client.get("/schema/openapi.json")
    assert r.status_code == 200
    return [
        (method.upper(), path, op)
        for path, item in r.json()["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def _problem(op: dict[str, Any], status: int) -> dict[str, Any]:
    response = op["responses"][str(status)]
    assert response["content"] == {"application/problem+json": {"schema": PROBLEM}}
    return response


async def test_public_routes_are_marked_public_and_no_other(api: Api) -> None:
    public = {(m, p) for m, p, op in await _operations(api) if op.get("security") == []}
    assert public == {("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/.well-known/jwks.json")}
    for path in ("/healthz", "/readyz", "/.well-known/jwks.json"):
        assert (await api.client.get(path)).status_code == 200  # without a credential


async def test_every_authenticated_route_documents_its_refusals(api: Api) -> None:
    for method, path, op in await _operations(api):
        if op.get("security") == []:
            continue
        _problem(op, 401)
        _problem(op, 403)
        if "{" in path:
            _problem(op, 404)
        if "requestBody" in op:
            _problem(op, 413)
            _problem(op, 422)
        assert "400" not in op["responses"], f"{method} {path}: validation is a 422"
        if "429" in op["responses"]:
            assert _problem(op, 429)["headers"]["Retry-After"]["required"] is True


async def test_a_missing_scope_is_the_documented_403(api: Api, tenant: Any) -> None:
    key = await api.key(tenant, ["sandboxes:read"])
    r = await api.client.post("/v1/api-keys", json={"name": "k"}, headers=api.bearer(key))
    assert r.status_code == 403
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["code"] == "missing_scope"


async def test_options_names_every_method_of_the_path(api: Api, tenant: Any) -> None:
    r = await api.client.options("/v1/sandboxes/sbx_x", headers=tenant.headers)
    assert r.status_code == 204
    assert r.headers["allow"] == "DELETE, GET, OPTIONS, PATCH"
    r = await api.client.options("/v1/api-keys", headers=tenant.headers)
    assert r.headers["allow"] == "GET, OPTIONS, POST"
