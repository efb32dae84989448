"""The path every user walks first: operator key → tenant → API key → token → a scoped call."""

from __future__ import annotations

import pytest

from tests.conftest import Api

pytestmark = pytest.mark.sqlite


async def test_operator_to_scoped_token(api: Api) -> None:
    tenant = await api.tenant()
    issued = await api.token(tenant.key, scopes=["audit:read"], ttl_s=60)
    assert issued["scopes"] == ["audit:read"]

    r = await api.client.get("/v1/audit", headers=api.bearer(issued["token"]))
    assert r.status_code == 200, r.text
    actions = [e["action"] for e in r.json()["items"]]
    assert actions[:3] == ["token.issue", "api_key.create", "tenant.create"]

    r = await api.client.get("/v1/audit/verify", headers=api.bearer(issued["token"]))
    assert r.json()["valid"] is True
    assert r.json()["events_checked"] == 3


async def test_health_and_readiness(api: Api) -> None:
    assert (await api.client.get("/healthz")).json()["status"] == "ok"
    r = await api.client.get("/readyz")
    assert r.status_code == 200
    assert r.json()["checks"]["database"] == "ok"
