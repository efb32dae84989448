"""AIRLOCK_METRICS_TOKEN: with it set, /metrics answers only a bearer of that token; without it,
/metrics stays public (the default, see test_telemetry)."""

from __future__ import annotations

import secrets

import msgspec
import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.errors import ConfigurationError
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api

pytestmark = pytest.mark.sqlite


async def test_a_metrics_token_protects_metrics(api: Api) -> None:
    token = secrets.token_urlsafe(32)
    settings = msgspec.structs.replace(api.settings, metrics_token=token)
    tenant = await api.tenant()
    async with AsyncTestClient(app=create_app(settings, run_jobs=False)) as client:
        for headers in (
            {},
            {"Authorization": f"Bearer {token[:-1]}"},
            {"Authorization": f"Basic {token}"},
            {"Authorization": f"Bearer {OPERATOR_KEY}"},
            tenant.headers,
        ):
            r = await client.get("/metrics", headers=headers)
            assert r.status_code == 401, (headers, r.text)
            assert r.json()["code"] == "unauthenticated"
            assert "airlock_requests" not in r.text
        r = await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200, r.text
        assert "airlock_requests_total" in r.text
        # The other public routes stay public.
        assert (await client.get("/healthz")).status_code == 200


def test_a_short_metrics_token_is_refused(api: Api) -> None:
    with pytest.raises(ConfigurationError, match="AIRLOCK_METRICS_TOKEN"):
        Settings.from_env(
            {"AIRLOCK_METRICS_TOKEN": "short"},
            state_dir=api.settings.state_dir,
            operator_key=OPERATOR_KEY,
        )
    token = "m" * 32
    assert Settings.from_env({"AIRLOCK_METRICS_TOKEN": token}).metrics_token == token
