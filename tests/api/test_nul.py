"""NUL characters anywhere in a request are a 422, never a 500 or a stored value."""

from __future__ import annotations

import base64
import json

import pytest

from tests.conftest import Api, Tenant

pytestmark = pytest.mark.sqlite


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        ("GET", "/v1/sandboxes/sbx%00x", "invalid_path"),
        ("GET", "/v1/audit?action=a%00b", "validation_failed"),
        ("GET", "/v1/sandboxes?label=a%00%3Db", "validation_failed"),
        ("GET", "/v1/sandboxes/sbx%00/execs", "invalid_path"),
        ("DELETE", "/v1/api-keys/key%00", "invalid_path"),
        ("DELETE", "/v1/tokens/tok%00", "invalid_path"),
    ],
)
async def test_nul_in_path_or_query(
    api: Api, tenant: Tenant, method: str, path: str, code: str
) -> None:
    r = await api.client.request(method, path, headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == code


async def test_nul_in_a_cursor(api: Api, tenant: Tenant) -> None:
    raw = json.dumps({"k": "sandboxes", "v": "\x00"}).encode()
    cursor = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    r = await api.client.get("/v1/sandboxes", params={"cursor": cursor}, headers=tenant.headers)
    assert r.status_code == 422


async def test_nul_in_a_body_writes_nothing(api: Api, tenant: Tenant) -> None:
    before = (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
    r = await api.client.post(
        "/v1/api-keys", json={"name": "a\x00b", "scopes": ["exec"]}, headers=tenant.headers
    )
    assert r.status_code == 422, r.text
    after = (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
    assert len(after) == len(before)
