"""Create, replace, list and delete a tenant's secrets; values go in and never come out."""

from __future__ import annotations

import pytest

from tests.conftest import Api, Tenant
from tests.secrets.conftest import PutSecret, secret_value

pytestmark = pytest.mark.sqlite


async def test_put_creates_then_replaces(api: Api, tenant: Tenant, put: PutSecret) -> None:
    first, second = secret_value(), secret_value()
    r = await put(tenant, "gh-token", first)
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["name"] == "gh-token"
    assert set(created) == {"name", "allowed_hosts", "created_at", "updated_at", "created_by"}
    assert created["allowed_hosts"] == []
    r = await put(tenant, "gh-token", second)
    assert r.status_code == 200, r.text
    assert r.json()["created_at"] == created["created_at"]
    assert r.json()["updated_at"] > created["updated_at"]
    listed = await api.client.get("/v1/secrets", headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    assert [s["name"] for s in listed.json()["items"]] == ["gh-token"]
    for text in (created, r.text, listed.text):
        assert first not in str(text) and second not in str(text)


async def test_list_is_sorted_by_name_and_paged(api: Api, tenant: Tenant, put: PutSecret) -> None:
    for name in ("b", "a", "c.d", "E_1"):
        assert (await put(tenant, name, secret_value())).status_code == 201
    r = await api.client.get("/v1/secrets", params={"limit": 2}, headers=tenant.headers)
    page = r.json()
    assert [s["name"] for s in page["items"]] == ["E_1", "a"]
    r = await api.client.get(
        "/v1/secrets", params={"limit": 2, "cursor": page["next_cursor"]}, headers=tenant.headers
    )
    assert [s["name"] for s in r.json()["items"]] == ["b", "c.d"]
    assert r.json()["next_cursor"] is None


async def test_delete_removes_it(api: Api, tenant: Tenant, put: PutSecret) -> None:
    await put(tenant, "deploy", secret_value())
    r = await api.client.delete("/v1/secrets/deploy", headers=tenant.headers)
    assert r.status_code == 204, r.text
    assert (await api.client.get("/v1/secrets", headers=tenant.headers)).json()["items"] == []
    r = await api.client.delete("/v1/secrets/deploy", headers=tenant.headers)
    assert r.status_code == 404
    assert r.json()["code"] == "not_found"


async def test_audit_names_the_secret_and_never_its_value(
    api: Api, tenant: Tenant, put: PutSecret
) -> None:
    value = secret_value()
    await put(tenant, "npm", value)
    await put(tenant, "npm", value + "x")
    await api.client.delete("/v1/secrets/npm", headers=tenant.headers)
    r = await api.client.get("/v1/audit", headers=tenant.headers)
    events = [e for e in r.json()["items"] if e["action"].startswith("secret.")]
    assert sorted(e["action"] for e in events) == [
        "secret.create",
        "secret.delete",
        "secret.replace",
    ]
    assert all(e["details"]["name"] == "npm" for e in events)
    assert value not in r.text


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"value": ""}, "1 to 65536 bytes"),
        ({"value": "sv-too-long-" + "é" * 40_000}, "1 to 65536 bytes"),
        ({"value": 12}, "Expected `str`"),
        ({"value": "sv-unknown-field-value", "extra": 1}, "unknown field"),
        ({}, "missing required field"),
    ],
)
async def test_bad_values_are_422_without_the_value(
    api: Api, tenant: Tenant, body: dict[str, object], says: str
) -> None:
    r = await api.client.put("/v1/secrets/s", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert says in r.text
    if isinstance(body.get("value"), str) and body["value"]:
        assert str(body["value"])[:20] not in r.text
    assert (await api.client.get("/v1/secrets", headers=tenant.headers)).json()["items"] == []


@pytest.mark.parametrize("name", ["-x", ".hidden", "a" * 101, "sp ace", "a:b", "ü", "trail%0A"])
async def test_bad_names_are_422(api: Api, tenant: Tenant, put: PutSecret, name: str) -> None:
    r = await put(tenant, name, secret_value())
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_failed"


async def test_largest_value_is_accepted(api: Api, tenant: Tenant, put: PutSecret) -> None:
    r = await put(tenant, "big", "v" * 65536)
    assert r.status_code == 201, r.text
