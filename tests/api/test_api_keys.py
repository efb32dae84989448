"""Tenant API keys: shown once, stored hashed, scoped, revocable with immediate effect."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db.models import ApiKey
from tests.conftest import Api, SandboxRecorder, Tenant


@pytest.mark.sqlite
async def test_create_list_use_revoke(api: Api, tenant: Tenant) -> None:
    r = await api.client.post(
        "/v1/api-keys",
        json={"name": "ci", "scopes": ["exec", "audit:read"]},
        headers=tenant.headers,
    )
    assert r.status_code == 201, r.text
    created = r.json()
    secret, meta = created["key"], created["api_key"]
    assert secret.startswith("alk_") and len(secret) >= 40
    assert meta["scopes"] == ["exec", "audit:read"]
    assert meta["prefix"] == secret[:12]
    assert meta["last_used_at"] is None

    assert (await api.client.get("/v1/audit", headers=api.bearer(secret))).status_code == 200
    listed = (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
    row = next(k for k in listed if k["id"] == meta["id"])
    assert row["last_used_at"] is not None
    assert "key" not in row and all(secret not in str(v) for v in row.values())

    r = await api.client.delete(f"/v1/api-keys/{meta['id']}", headers=tenant.headers)
    assert r.status_code == 204
    r = await api.client.get("/v1/audit", headers=api.bearer(secret))
    assert r.status_code == 401
    listed = (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
    assert next(k for k in listed if k["id"] == meta["id"])["revoked_at"] is not None


async def test_only_the_hash_is_stored(
    api: Api, tenant: Tenant, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    secret = await api.key(tenant, ["exec"])
    async with sessionmaker() as session:
        rows = (await session.scalars(select(ApiKey).where(ApiKey.tenant_id == tenant.id))).all()
    assert all(secret not in (r.key_hash, r.prefix, r.name) for r in rows)
    assert hashlib.sha256(secret.encode()).hexdigest() in {r.key_hash for r in rows}


async def test_cannot_grant_more_than_held(api: Api, tenant: Tenant) -> None:
    limited = await api.key(tenant, ["keys:write", "exec"])
    r = await api.client.post(
        "/v1/api-keys", json={"name": "x", "scopes": ["audit:read"]}, headers=api.bearer(limited)
    )
    assert r.status_code == 403
    r = await api.client.post("/v1/api-keys", json={"name": "x"}, headers=api.bearer(limited))
    assert r.status_code == 201
    assert r.json()["api_key"]["scopes"] == ["exec", "keys:write"]


async def test_sandbox_bound_token_cannot_make_keys(
    api: Api, tenant: Tenant, sandbox_record: SandboxRecorder
) -> None:
    sandbox_id = await sandbox_record(tenant)
    bound = await api.token(tenant.key, scopes=["keys:write"], sandbox_id=sandbox_id)
    r = await api.client.post(
        "/v1/api-keys", json={"name": "x"}, headers=api.bearer(bound["token"])
    )
    assert r.status_code == 403


async def test_pages(api: Api, tenant: Tenant) -> None:
    for _ in range(4):
        await api.key(tenant, ["exec"])
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await api.client.get("/v1/api-keys", params=params, headers=tenant.headers)).json()
        assert len(page["items"]) <= 2
        seen += [k["id"] for k in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == 5 == len(set(seen))
    assert seen == sorted(seen)
    r = await api.client.get("/v1/api-keys", params={"cursor": "!!"}, headers=tenant.headers)
    assert r.status_code == 422


async def test_operator_creates_a_key_for_a_tenant(api: Api, tenant: Tenant) -> None:
    r = await api.client.post(
        f"/v1/tenants/{tenant.id}/api-keys",
        json={"name": "ops", "scopes": ["audit:read"]},
        headers=api.operator,
    )
    assert r.status_code == 201
    secret = r.json()["key"]
    assert (await api.client.get("/v1/audit", headers=api.bearer(secret))).status_code == 200
    r = await api.client.post(
        "/v1/tenants/ten_missing/api-keys", json={"name": "ops"}, headers=api.operator
    )
    assert r.status_code == 404
