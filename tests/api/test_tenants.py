"""Tenants are the operator's: create, list, get, change quotas, suspend."""

from __future__ import annotations

import secrets

import pytest

from tests.conftest import Api


@pytest.mark.sqlite
async def test_create_get_patch(api: Api) -> None:
    name = f"acme-{secrets.token_hex(3)}"
    r = await api.client.post(
        "/v1/tenants", json={"name": name, "quotas": {"max_sandboxes": 3}}, headers=api.operator
    )
    assert r.status_code == 201, r.text
    body = r.json()
    tenant_id = body["tenant"]["id"]
    assert body["api_key"].startswith("alk_")
    assert body["tenant"]["quotas"]["max_sandboxes"] == 3
    assert body["tenant"]["quotas"]["max_token_ttl_s"] == 900
    assert body["tenant"]["status"] == "active"

    r = await api.client.get(f"/v1/tenants/{tenant_id}", headers=api.operator)
    assert r.json()["name"] == name

    r = await api.client.patch(
        f"/v1/tenants/{tenant_id}",
        json={"quotas": {"max_vcpus": 2, "execs_per_minute": 5}},
        headers=api.operator,
    )
    assert r.status_code == 200
    quotas = r.json()["quotas"]
    assert (quotas["max_vcpus"], quotas["execs_per_minute"], quotas["max_sandboxes"]) == (2, 5, 3)


async def test_duplicate_name_conflicts(api: Api) -> None:
    name = f"dup-{secrets.token_hex(3)}"
    assert (
        await api.client.post("/v1/tenants", json={"name": name}, headers=api.operator)
    ).status_code == 201
    r = await api.client.post("/v1/tenants", json={"name": name}, headers=api.operator)
    assert r.status_code == 409
    assert r.json()["code"] == "conflict"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "bad/name"},
        {"name": "x" * 101},
        {"name": "ok", "quotas": {"max_sandboxes": -1}},
        {"name": "ok", "quotas": {"nonsense": 1}},
        {"name": "ok", "extra": True},
        {"name": 7},
    ],
)
async def test_invalid_bodies(api: Api, body: dict[str, object]) -> None:
    r = await api.client.post("/v1/tenants", json=body, headers=api.operator)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_failed"


async def test_patch_validation_and_missing(api: Api) -> None:
    tenant = await api.tenant()
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"status": "deleted"}, headers=api.operator
    )
    assert r.status_code == 422
    r = await api.client.patch("/v1/tenants/ten_nope", json={}, headers=api.operator)
    assert r.status_code == 404
    assert (await api.client.get("/v1/tenants/ten_nope", headers=api.operator)).status_code == 404


async def test_list_pages_reach_every_tenant(api: Api) -> None:
    made = {(await api.tenant()).id for _ in range(3)}
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await api.client.get("/v1/tenants", params=params, headers=api.operator)).json()
        seen += [t["id"] for t in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert made <= set(seen)
    assert len(seen) == len(set(seen))
