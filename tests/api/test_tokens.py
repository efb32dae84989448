"""Issuing, using, revoking and rotating tokens."""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime

import jwt
import pytest

from service.auth.keyring import KeyRing, create_key
from tests.conftest import Api, SandboxRecorder, Tenant


def header_of(token: str) -> dict[str, str]:
    head = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))


@pytest.mark.sqlite
async def test_issued_token_carries_the_claims(api: Api, tenant: Tenant) -> None:
    issued = await api.token(tenant.key, scopes=["exec", "sandboxes:read"], ttl_s=120)
    jwks = (await api.client.get("/.well-known/jwks.json")).json()
    head = header_of(issued["token"])
    assert head["alg"] == "EdDSA"
    public = next(k for k in jwks["keys"] if k["kid"] == head["kid"])
    claims = jwt.decode(
        issued["token"],
        jwt.PyJWK(public).key,
        algorithms=["EdDSA"],
        audience=api.settings.jwt_audience,
        issuer=api.settings.jwt_issuer,
    )
    assert claims["tid"] == tenant.id
    assert claims["scp"] == ["sandboxes:read", "exec"]
    assert claims["jti"] == issued["jti"]
    assert claims["sub"].startswith("key_")
    assert "sbx" not in claims
    assert claims["exp"] - claims["iat"] == 120
    assert claims["nbf"] == claims["iat"]
    assert datetime.fromisoformat(issued["expires_at"]).timestamp() == claims["exp"]


async def test_token_bound_to_a_sandbox(
    api: Api, tenant: Tenant, sandbox_record: SandboxRecorder
) -> None:
    sandbox_id = await sandbox_record(tenant)
    issued = await api.token(tenant.key, scopes=["exec"], sandbox_id=sandbox_id)
    assert issued["sandbox_id"] == sandbox_id
    assert jwt.decode(issued["token"], options={"verify_signature": False})["sbx"] == sandbox_id
    # Binding to a sandbox that is not the tenant's own is refused.
    other = await api.tenant()
    foreign = await sandbox_record(other)
    for missing in (foreign, "sbx_nope"):
        r = await api.client.post(
            "/v1/tokens", json={"sandbox_id": missing}, headers=tenant.headers
        )
        assert r.status_code == 404


async def test_default_ttl_is_the_tenant_maximum(api: Api, tenant: Tenant) -> None:
    before = time.time()
    issued = await api.token(tenant.key)
    lifetime = datetime.fromisoformat(issued["expires_at"]).timestamp() - before
    assert 890 <= lifetime <= 901


async def test_ttl_above_tenant_maximum_is_refused(api: Api) -> None:
    tenant = await api.tenant(max_token_ttl_s=300)
    r = await api.client.post("/v1/tokens", json={"ttl_s": 301}, headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["max_ttl_s"] == 300
    r = await api.client.post("/v1/tokens", json={"ttl_s": 86_401}, headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["code"] == "validation_failed"


async def test_hard_cap_of_a_day(api: Api) -> None:
    r = await api.client.post(
        "/v1/tenants",
        json={"name": "t-cap-" + str(time.time_ns()), "quotas": {"max_token_ttl_s": 86_401}},
        headers=api.operator,
    )
    assert r.status_code == 422
    tenant = await api.tenant(max_token_ttl_s=86_400)
    issued = await api.token(tenant.key, ttl_s=86_400)
    assert datetime.fromisoformat(issued["expires_at"]).timestamp() - time.time() > 86_000


async def test_scopes_must_be_a_subset_of_the_key(api: Api, tenant: Tenant) -> None:
    narrow = await api.key(tenant, ["exec"])
    r = await api.client.post(
        "/v1/tokens", json={"scopes": ["exec", "keys:write"]}, headers=api.bearer(narrow)
    )
    assert r.status_code == 403
    assert r.json()["scopes_not_held"] == ["keys:write"]
    r = await api.client.post("/v1/tokens", json={"scopes": ["root"]}, headers=api.bearer(narrow))
    assert r.status_code == 422
    r = await api.client.post("/v1/tokens", json={"scopes": []}, headers=api.bearer(narrow))
    assert r.status_code == 422
    assert (await api.token(narrow))["scopes"] == ["exec"]


async def test_only_api_keys_mint_tokens(api: Api, tenant: Tenant) -> None:
    issued = await api.token(tenant.key)
    r = await api.client.post("/v1/tokens", json={}, headers=api.bearer(issued["token"]))
    assert r.status_code == 403
    r = await api.client.post("/v1/tokens", json={}, headers=api.operator)
    assert r.status_code == 403


async def test_revocation(api: Api, tenant: Tenant) -> None:
    a = await api.token(tenant.key, scopes=["audit:read"])
    b = await api.token(tenant.key, scopes=["audit:read"])
    r = await api.client.delete(f"/v1/tokens/{a['jti']}", headers=tenant.headers)
    assert r.status_code == 204
    assert (await api.client.get("/v1/audit", headers=api.bearer(a["token"]))).status_code == 401
    assert (await api.client.get("/v1/audit", headers=api.bearer(b["token"]))).status_code == 200
    # Revoking twice is the same as once.
    r = await api.client.delete(f"/v1/tokens/{a['jti']}", headers=tenant.headers)
    assert r.status_code == 204
    assert (
        await api.client.delete("/v1/tokens/tok_nope", headers=tenant.headers)
    ).status_code == 404


@pytest.mark.sqlite
async def test_revoking_a_preview_link(
    api: Api, tenant: Tenant, sandbox_record: SandboxRecorder
) -> None:
    sandbox_id = await sandbox_record(tenant)
    r = await api.client.post(
        f"/v1/sandboxes/{sandbox_id}/port-links", json={"port": 8000}, headers=tenant.headers
    )
    assert r.status_code == 201, r.text
    jti = r.json()["jti"]
    assert jti.startswith("lnk_")
    # Only the tenant's own links are found; another tenant's revocation does not reach it.
    other = await api.tenant()
    assert (await api.client.delete(f"/v1/tokens/{jti}", headers=other.headers)).status_code == 404
    # A token bound to a sandbox, or one without keys:write, may revoke only itself.
    bound = await api.token(tenant.key, scopes=["ports"], sandbox_id=sandbox_id)
    narrow = await api.token(tenant.key, scopes=["ports"])
    for token in (bound, narrow):
        r = await api.client.delete(f"/v1/tokens/{jti}", headers=api.bearer(token["token"]))
        assert r.status_code == 403
    for _ in range(2):  # revoking twice is the same as once
        r = await api.client.delete(f"/v1/tokens/{jti}", headers=tenant.headers)
        assert r.status_code == 204
    r = await api.client.delete("/v1/tokens/lnk_nope", headers=tenant.headers)
    assert r.status_code == 404
    assert "preview link" in r.json()["detail"]
    r = await api.client.get("/v1/audit", params={"action": "token.revoke"}, headers=tenant.headers)
    assert [e["target"] for e in r.json()["items"]] == [jti]


async def test_a_token_may_revoke_itself(api: Api, tenant: Tenant) -> None:
    a = await api.token(tenant.key, scopes=["audit:read"])
    b = await api.token(tenant.key, scopes=["audit:read"])
    r = await api.client.delete(f"/v1/tokens/{b['jti']}", headers=api.bearer(a["token"]))
    assert r.status_code == 403
    r = await api.client.delete(f"/v1/tokens/{a['jti']}", headers=api.bearer(a["token"]))
    assert r.status_code == 204
    assert (await api.client.get("/v1/audit", headers=api.bearer(a["token"]))).status_code == 401


async def test_rotation_keeps_old_tokens_valid(api: Api, tenant: Tenant) -> None:
    old = await api.token(tenant.key, scopes=["audit:read"])
    old_kid = header_of(old["token"])["kid"]
    new_key = create_key(api.settings.keys_dir)  # what `airlock keys rotate` does
    try:
        new = await api.token(tenant.key, scopes=["audit:read"])
        assert header_of(new["token"])["kid"] == new_key.kid != old_kid
        kids = {k["kid"] for k in (await api.client.get("/.well-known/jwks.json")).json()["keys"]}
        assert {old_kid, new_key.kid} <= kids
        for token in (old["token"], new["token"]):
            r = await api.client.get("/v1/audit", headers=api.bearer(token))
            assert r.status_code == 200, r.text
    finally:
        assert KeyRing(api.settings.keys_dir).signer().kid == new_key.kid


@pytest.mark.sqlite
async def test_jwks_is_public_and_holds_only_public_material(api: Api) -> None:
    r = await api.client.get("/.well-known/jwks.json")
    assert r.status_code == 200
    for key in r.json()["keys"]:
        assert key["kty"] == "OKP" and key["crv"] == "Ed25519" and key["alg"] == "EdDSA"
        assert set(key) == {"kty", "crv", "alg", "use", "kid", "x"}
