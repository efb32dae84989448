"""A review of a private repository names a tenant secret: what the API accepts and refuses,
and what it records (the name, never the value). On the shared app, whose runner is off."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.conftest import Api, Tenant

pytestmark = pytest.mark.sqlite

GOOD = {"repo": "https://git.example.com/acme/private.git", "base": "main", "head": "pr-7"}


async def post(api: Api, tenant: Tenant, headers: dict[str, str] | None = None, **body: Any) -> Any:
    return await api.client.post(
        "/v1/reviews", json={**GOOD, **body}, headers=headers or tenant.headers
    )


async def with_secret(api: Api, tenant: Tenant, name: str = "gh") -> str:
    value = "ghp-" + secrets.token_urlsafe(20)
    body = {"value": value, "allowed_hosts": ["git.example.com"]}
    r = await api.client.put(f"/v1/secrets/{name}", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    return value


async def test_a_review_records_the_secret_name_and_never_its_value(
    api: Api, tenant: Tenant, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    value = await with_secret(api, tenant)
    r = await post(api, tenant, credentials={"secret": "gh"})
    assert r.status_code == 202, r.text
    review_id = r.json()["id"]
    got = await api.client.get(f"/v1/reviews/{review_id}", headers=tenant.headers)
    assert got.json()["credentials"] == {"secret": "gh", "username": "x-access-token"}
    assert value not in got.text
    audit = await api.client.get("/v1/audit", params={"target": review_id}, headers=tenant.headers)
    created = audit.json()["items"][0]
    assert created["details"]["credentials"] == {"secret": "gh", "username": "x-access-token"}
    async with sessionmaker() as session:
        rows = (
            await session.execute(text("SELECT * FROM reviews WHERE id = :i"), {"i": review_id})
        ).all()
    assert value not in json.dumps([list(map(str, row)) for row in rows])


async def test_a_username_can_be_given(api: Api, tenant: Tenant) -> None:
    await with_secret(api, tenant, "gl")
    r = await post(api, tenant, credentials={"secret": "gl", "username": "oauth2"})
    assert r.status_code == 202, r.text
    got = await api.client.get(f"/v1/reviews/{r.json()['id']}", headers=tenant.headers)
    assert got.json()["credentials"] == {"secret": "gl", "username": "oauth2"}


async def test_a_missing_secret_is_404(api: Api, tenant: Tenant) -> None:
    other = await api.tenant()
    await with_secret(api, other, "theirs")
    for name in ("nope", "theirs"):
        r = await post(api, tenant, credentials={"secret": name})
        assert r.status_code == 404, r.text
        assert f"no secret named '{name}'" in r.json()["detail"]
    listed = await api.client.get("/v1/reviews", headers=tenant.headers)
    assert listed.json()["items"] == []


@pytest.mark.parametrize(
    "repo",
    [
        "http://git.example.com/acme/private.git",
        "bdl_" + "0" * 32,
    ],
)
async def test_credentials_only_go_to_https(api: Api, tenant: Tenant, repo: str) -> None:
    await with_secret(api, tenant)
    r = await post(api, tenant, repo=repo, credentials={"secret": "gh"})
    assert r.status_code == 422, r.text
    assert "https://" in r.json()["detail"]


@pytest.mark.parametrize(
    "credentials",
    [
        {"secret": "gh", "username": "a:b"},
        {"secret": "gh", "username": "a\nb"},
        {"secret": "gh", "username": "ab\n"},
        {"secret": "gh", "password": "inline"},
        {"secret": ""},
        {},
    ],
)
async def test_malformed_credentials_are_422(
    api: Api, tenant: Tenant, credentials: dict[str, str]
) -> None:
    await with_secret(api, tenant)
    r = await post(api, tenant, credentials=credentials)
    assert r.status_code == 422, r.text


async def test_naming_a_secret_needs_secrets_read(api: Api, tenant: Tenant) -> None:
    await with_secret(api, tenant)
    reviewer = await api.key(tenant, ["reviews:write", "reviews:read"])
    r = await post(api, tenant, headers=api.bearer(reviewer), credentials={"secret": "gh"})
    assert r.status_code == 403, r.text
    assert r.json()["required_scope"] == "secrets:read"
    # Without credentials the same key may review.
    assert (await post(api, tenant, headers=api.bearer(reviewer))).status_code == 202
    trusted = await api.key(tenant, ["reviews:write", "secrets:read"])
    r = await post(api, tenant, headers=api.bearer(trusted), credentials={"secret": "gh"})
    assert r.status_code == 202, r.text
