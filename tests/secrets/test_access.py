"""Who reaches a tenant's secrets: scopes, tenancy, sandbox-bound tokens, the operator."""

from __future__ import annotations

import pytest

from tests.conftest import Api, SandboxRecorder, Tenant
from tests.secrets.conftest import PutSecret, secret_value

pytestmark = pytest.mark.sqlite


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("PUT", "/v1/secrets/s", "secrets:write"),
        ("DELETE", "/v1/secrets/s", "secrets:write"),
        ("GET", "/v1/secrets", "secrets:read"),
    ],
)
async def test_missing_scope_is_403(
    api: Api, tenant: Tenant, method: str, path: str, scope: str
) -> None:
    # Each scope alone is not the other one.
    other = "secrets:read" if scope == "secrets:write" else "secrets:write"
    key = await api.key(tenant, ["reviews:write", other])
    token = (await api.token(tenant.key, scopes=["reviews:write", other]))["token"]
    for credential in (key, token):
        r = await api.client.request(
            method, path, json={"value": "v"}, headers=api.bearer(credential)
        )
        assert r.status_code == 403, r.text
        assert r.json()["code"] == "missing_scope"
        assert r.json()["required_scope"] == scope


async def test_narrow_key_and_token_work_with_their_scopes(
    api: Api, tenant: Tenant, put: PutSecret
) -> None:
    writer = await api.key(tenant, ["secrets:write"])
    reader = (await api.token(tenant.key, scopes=["secrets:read"]))["token"]
    assert (await put(tenant, "s", secret_value(), api.bearer(writer))).status_code == 201
    r = await api.client.get("/v1/secrets", headers=api.bearer(reader))
    assert [s["name"] for s in r.json()["items"]] == ["s"]


async def test_another_tenants_secret_is_404(api: Api, tenant: Tenant, put: PutSecret) -> None:
    other = await api.tenant()
    await put(other, "shared-name", secret_value())
    r = await api.client.delete("/v1/secrets/shared-name", headers=tenant.headers)
    assert r.status_code == 404, r.text
    assert (await api.client.get("/v1/secrets", headers=tenant.headers)).json()["items"] == []
    # The same name in this tenant is its own secret; the other tenant's stays.
    assert (await put(tenant, "shared-name", secret_value())).status_code == 201
    r = await api.client.delete("/v1/secrets/shared-name", headers=tenant.headers)
    assert r.status_code == 204
    r = await api.client.get("/v1/secrets", headers=other.headers)
    assert [s["name"] for s in r.json()["items"]] == ["shared-name"]


async def test_sandbox_bound_tokens_are_refused(
    api: Api, tenant: Tenant, put: PutSecret, sandbox_record: SandboxRecorder
) -> None:
    await put(tenant, "s", secret_value())
    sandbox_id = await sandbox_record(tenant)
    bound = await api.token(
        tenant.key, scopes=["secrets:read", "secrets:write"], sandbox_id=sandbox_id
    )
    headers = api.bearer(bound["token"])
    assert (await api.client.get("/v1/secrets", headers=headers)).status_code == 403
    assert (await put(tenant, "s", secret_value(), headers)).status_code == 403
    assert (await api.client.delete("/v1/secrets/s", headers=headers)).status_code == 403
    r = await api.client.get("/v1/secrets", headers=tenant.headers)
    assert [s["name"] for s in r.json()["items"]] == ["s"]


async def test_the_operator_has_no_tenant_secrets(api: Api) -> None:
    r = await api.client.get("/v1/secrets", headers=api.operator)
    assert r.status_code == 403
    r = await api.client.put("/v1/secrets/s", json={"value": "v"}, headers=api.operator)
    assert r.status_code == 403


async def test_no_credential_is_401(api: Api) -> None:
    assert (await api.client.get("/v1/secrets")).status_code == 401
