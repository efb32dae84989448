"""Who may call what: every route authenticates, scopes give 403, other tenants' ids give 404."""

from __future__ import annotations

import re

import pytest
from litestar import Litestar

from tests.conftest import Api, SandboxRecorder, Tenant

# Routes anyone may call.
PUBLIC = {"/healthz", "/readyz", "/metrics", "/.well-known/jwks.json"}


def routes(app: Litestar) -> list[tuple[str, str, dict[str, object]]]:
    found = []
    for route in app.routes:
        if route.path.startswith("/schema") or route.path in PUBLIC:
            continue
        for handler in getattr(route, "route_handlers", []):
            for method in handler.http_methods:
                if method in ("HEAD", "OPTIONS"):
                    continue
                found.append((method, route.path, handler.opt))
    return found


def concrete(path: str) -> str:
    return re.sub(r"\{(\w+):\w+\}", lambda m: f"{m.group(1)}_x", path)


async def test_every_route_requires_a_credential(api: Api) -> None:
    checked = 0
    for method, path, _ in routes(api.app):
        r = await api.client.request(method, concrete(path), json={})
        assert r.status_code == 401, f"{method} {path} answered {r.status_code}"
        checked += 1
    assert checked >= 12


async def test_every_route_declares_its_authorisation(api: Api) -> None:
    for method, path, opt in routes(api.app):
        declared = opt.get("operator") or opt.get("scope") or opt.get("authenticated")
        assert declared or opt.get("internal"), (method, path)


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("GET", "/v1/api-keys", "keys:write"),
        ("POST", "/v1/api-keys", "keys:write"),
        ("DELETE", "/v1/api-keys/key_x", "keys:write"),
        ("GET", "/v1/audit", "audit:read"),
        ("GET", "/v1/audit/verify", "audit:read"),
    ],
)
async def test_missing_scope_is_403(
    api: Api, tenant: Tenant, method: str, path: str, scope: str
) -> None:
    others = ["exec", "sandboxes:read"]
    key = await api.key(tenant, others)
    token = (await api.token(tenant.key, scopes=others))["token"]
    for credential in (key, token):
        r = await api.client.request(
            method, path, json={"name": "x"}, headers=api.bearer(credential)
        )
        assert r.status_code == 403, r.text
        assert r.json()["code"] == "missing_scope"
        assert r.json()["required_scope"] == scope


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/tenants"),
        ("POST", "/v1/tenants"),
        ("GET", "/v1/tenants/{own}"),
        ("PATCH", "/v1/tenants/{own}"),
        ("POST", "/v1/tenants/{own}/api-keys"),
    ],
)
async def test_operator_routes_refuse_tenants(
    api: Api, tenant: Tenant, method: str, path: str
) -> None:
    r = await api.client.request(
        method, path.format(own=tenant.id), json={"name": "x"}, headers=tenant.headers
    )
    assert r.status_code == 403


async def test_operator_is_not_a_tenant(api: Api) -> None:
    assert (await api.client.get("/v1/api-keys", headers=api.operator)).status_code == 403
    assert (await api.client.post("/v1/tokens", json={}, headers=api.operator)).status_code == 403


async def test_other_tenants_ids_are_not_found(api: Api) -> None:
    mine, theirs = await api.tenant(), await api.tenant()
    their_key = (await api.client.get("/v1/api-keys", headers=theirs.headers)).json()["items"][0]
    their_token = await api.token(theirs.key, scopes=["audit:read"])

    r = await api.client.delete(f"/v1/api-keys/{their_key['id']}", headers=mine.headers)
    assert r.status_code == 404
    r = await api.client.delete(f"/v1/tokens/{their_token['jti']}", headers=mine.headers)
    assert r.status_code == 404
    r = await api.client.get("/v1/audit", params={"tenant_id": theirs.id}, headers=mine.headers)
    assert r.status_code == 404
    r = await api.client.get(
        "/v1/audit/verify", params={"tenant_id": theirs.id}, headers=mine.headers
    )
    assert r.status_code == 404

    # Nothing happened to the other tenant's objects.
    r = await api.client.get("/v1/audit", headers=api.bearer(their_token["token"]))
    assert r.status_code == 200
    keys = (await api.client.get("/v1/api-keys", headers=theirs.headers)).json()["items"]
    assert keys[0]["revoked_at"] is None
    # And my listings do not show theirs.
    mine_keys = (await api.client.get("/v1/api-keys", headers=mine.headers)).json()["items"]
    assert {k["tenant_id"] for k in mine_keys} == {mine.id}
    events = (await api.client.get("/v1/audit", headers=mine.headers)).json()["items"]
    assert their_key["id"] not in {e["target"] for e in events}


async def test_tokens_cannot_make_keys(api: Api, tenant: Tenant) -> None:
    token = (await api.token(tenant.key, scopes=["keys:write"]))["token"]
    r = await api.client.post("/v1/api-keys", json={"name": "x"}, headers=api.bearer(token))
    assert r.status_code == 403


async def test_sandbox_bound_tokens_stay_off_keys_and_audit(
    api: Api, tenant: Tenant, sandbox_record: SandboxRecorder
) -> None:
    sandbox_id = await sandbox_record(tenant)
    bound = await api.token(
        tenant.key, scopes=["keys:write", "audit:read", "sandboxes:read"], sandbox_id=sandbox_id
    )
    headers = api.bearer(bound["token"])
    assert (await api.client.get("/v1/api-keys", headers=headers)).status_code == 403
    assert (await api.client.get("/v1/audit", headers=headers)).status_code == 403
    other = await api.token(tenant.key, scopes=["exec"])
    r = await api.client.delete(f"/v1/tokens/{other['jti']}", headers=headers)
    assert r.status_code == 403
    # Its own sandbox it still reaches.
    assert (await api.client.get(f"/v1/sandboxes/{sandbox_id}", headers=headers)).status_code == 200


async def test_revoking_another_token_needs_keys_write(api: Api, tenant: Tenant) -> None:
    reader = await api.key(tenant, ["sandboxes:read"])
    victim = await api.token(tenant.key, scopes=["audit:read"])
    r = await api.client.delete(f"/v1/tokens/{victim['jti']}", headers=api.bearer(reader))
    assert r.status_code == 403
    assert (
        await api.client.get("/v1/audit", headers=api.bearer(victim["token"]))
    ).status_code == 200


async def test_internal_routes_refuse_tenants_and_the_operator(api: Api, tenant: Tenant) -> None:
    """The nodes' own routes answer node tokens only (tests/cluster shows them working)."""
    internal = [(m, p) for m, p, opt in routes(api.app) if opt.get("internal")]
    assert {p for _, p in internal} == {
        "/internal/v1/snapshots/{snapshot_id:str}",
        "/internal/v1/cleanup",
    }
    for method, path in internal:
        for headers in (tenant.headers, api.operator):
            r = await api.client.request(method, concrete(path), json={}, headers=headers)
            assert r.status_code == 403, f"{method} {path} answered {r.status_code}"
            assert "for the nodes of this deployment" in r.json()["detail"]
