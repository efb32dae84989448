"""Request rates: a tenant past its rate for a class of route gets 429 `rate_limited` with
Retry-After while other tenants are answered as usual; each class has its own bucket; callers
without a tenant are counted by address; AIRLOCK_RATE_LIMITS=false counts nothing. On SQLite
and on PostgreSQL (service/ratelimit)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.auth.principal import SCOPES, Principal, PrincipalKind
from service.errors import ConfigurationError
from service.ratelimit.buckets import BURST_S
from service.ratelimit.limiter import source
from service.settings import Settings
from service.tenants.schemas import Quotas
from tests.conftest import Api, served_over_tcp

pytestmark = pytest.mark.sqlite


async def flood(client: Any, path: str, headers: dict[str, str], n: int) -> list[httpx.Response]:
    return list(await asyncio.gather(*(client.get(path, headers=headers) for _ in range(n))))


def refused(answers: list[httpx.Response]) -> list[httpx.Response]:
    return [r for r in answers if r.status_code == 429]


def from_address(app: Litestar, host: str) -> Litestar:
    """`app`, seeing every request come from `host` (the test client has one address for all
    tests: this keeps a test's anonymous count its own)."""
    inner = app.asgi_handler

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        scope["client"] = (host, 40000)
        await inner(scope, receive, send)

    app.asgi_handler = handler
    return app


@asynccontextmanager
async def app_with(api: Api, **settings: Any) -> AsyncIterator[AsyncTestClient[Any]]:
    changed = msgspec.structs.replace(api.settings, **settings)
    app = from_address(create_app(changed, run_jobs=False), f"198.51.100.{secrets.randbelow(250)}")
    async with AsyncTestClient(app=app) as client:
        yield client


async def test_a_flooding_tenant_gets_429s_and_another_tenant_does_not(api: Api) -> None:
    flooder = await api.tenant(reads_per_s=2)
    other = await api.tenant()
    async with served_over_tcp(api) as tcp:  # requests at once, as a flood sends them
        started = time.monotonic()
        answers, others = await asyncio.gather(
            flood(tcp.client, "/v1/sandboxes", flooder.headers, 40),
            flood(tcp.client, "/v1/sandboxes", other.headers, 40),
        )
        elapsed = time.monotonic() - started
        assert [r.status_code for r in others] == [200] * 40
        passed = [r for r in answers if r.status_code == 200]
        assert len(passed) + len(refused(answers)) == 40
        # A burst of 5 seconds' worth, then the rate.
        assert 2 * BURST_S <= len(passed) <= 2 * BURST_S + 2 * elapsed + 1
        for r in refused(answers):
            problem = r.json()
            assert problem["code"] == "rate_limited", problem
            assert problem["route_class"] == "reads"
            assert problem["limit_per_s"] == 2
            assert r.headers["content-type"].startswith("application/problem+json")
            assert int(r.headers["retry-after"]) >= 1
        # Told to come back after Retry-After, it is answered then.
        await asyncio.sleep(int(refused(answers)[-1].headers["retry-after"]))
        assert (await tcp.client.get("/v1/sandboxes", headers=flooder.headers)).status_code == 200


async def test_each_class_of_route_has_its_own_bucket(api: Api) -> None:
    tenant = await api.tenant(writes_per_s=1)
    # Writes that change nothing (no such key) are still writes.
    writes = [
        await api.client.delete(f"/v1/api-keys/key_{n}", headers=tenant.headers)
        for n in range(BURST_S + 3)
    ]
    assert Counter(r.status_code for r in writes)[429] >= 2
    assert refused(writes)[0].json()["route_class"] == "writes"
    # Reads and exec calls are counted apart: still answered.
    assert (await api.client.get("/v1/api-keys", headers=tenant.headers)).status_code == 200
    r = await api.client.post(
        "/v1/sandboxes/sbx_none/execs", json={"cmd": ["true"]}, headers=tenant.headers
    )
    assert r.status_code == 404, r.text


async def test_a_new_tenant_has_generous_rates_and_the_operator_sets_them(api: Api) -> None:
    tenant = await api.tenant()
    r = await api.client.get(f"/v1/tenants/{tenant.id}", headers=api.operator)
    quotas = r.json()["quotas"]
    defaults = Quotas()
    assert quotas["reads_per_s"] == defaults.reads_per_s >= 100
    assert quotas["writes_per_s"] == defaults.writes_per_s
    assert quotas["exec_calls_per_s"] == defaults.exec_calls_per_s
    assert quotas["port_requests_per_s"] == defaults.port_requests_per_s
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"quotas": {"reads_per_s": 0}}, headers=api.operator
    )
    assert r.status_code == 422, r.text
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"quotas": {"reads_per_s": 1}}, headers=api.operator
    )
    assert r.json()["quotas"]["reads_per_s"] == 1
    # Read by the limiter within its few seconds (the tenant made no request yet: at once).
    answers = [
        await api.client.get("/v1/sandboxes", headers=tenant.headers) for _ in range(BURST_S + 3)
    ]
    assert len(refused(answers)) >= 2


async def test_callers_without_a_tenant_are_counted_by_address(api: Api) -> None:
    tenant = await api.tenant()
    async with app_with(api, anonymous_requests_per_s=1) as client:
        health = [await client.get("/healthz") for _ in range(BURST_S + 3)]
        assert len(refused(health)) >= 2
        assert refused(health)[0].json()["route_class"] == "anonymous"
        # A wrong credential from there is told to slow down, not to try another.
        r = await client.get("/v1/sandboxes", headers=api.bearer("alk_" + "x" * 40))
        assert r.status_code == 429, r.text
        assert r.json()["code"] == "rate_limited"
        # A tenant at the same address is counted as itself.
        assert (await client.get("/v1/sandboxes", headers=tenant.headers)).status_code == 200
    # And the wrong credential from another address is the usual 401.
    r = await api.client.get("/v1/sandboxes", headers=api.bearer("alk_" + "x" * 40))
    assert r.status_code == 401


async def test_rate_limits_switched_off_count_nothing(api: Api) -> None:
    tenant = await api.tenant(reads_per_s=1)
    async with app_with(api, rate_limits=False) as client:
        answers = await flood(client, "/v1/sandboxes", tenant.headers, 4 * BURST_S)
        assert [r.status_code for r in answers] == [200] * (4 * BURST_S)


async def test_a_call_an_api_replica_forwarded_is_not_counted_again(api: Api) -> None:
    tenant = await api.tenant(reads_per_s=1)
    # As an API replica names the caller in the call it forwards to this (all-in-one) node.
    principal = Principal(
        kind=PrincipalKind.API_KEY,
        actor="key_forwarded",
        tenant_id=tenant.id,
        scopes=frozenset(SCOPES),
        key_id="key_forwarded",
    )
    credentials = api.app.state.node_credentials
    forwarded = api.bearer(credentials.mint(principal, "203.0.113.7", credentials.node_id))
    answers = await flood(api.client, "/v1/sandboxes", forwarded, 4 * BURST_S)
    assert [r.status_code for r in answers] == [200] * (4 * BURST_S)
    # The tenant's own calls here are counted: its burst is whole, and no more.
    answers = await flood(api.client, "/v1/sandboxes", tenant.headers, BURST_S + 1)
    assert len(refused(answers)) == 1


async def test_a_caller_told_to_wait_is_told_again_without_its_key_looked_up(api: Api) -> None:
    tenant = await api.tenant(reads_per_s=1)
    r = await api.client.post(
        "/v1/api-keys", json={"name": "k", "scopes": ["sandboxes:read"]}, headers=tenant.headers
    )
    key, key_id = r.json()["key"], r.json()["api_key"]["id"]
    answers = [
        await api.client.get("/v1/sandboxes", headers=api.bearer(key)) for _ in range(BURST_S + 1)
    ]
    assert len(refused(answers)) == 1
    r = await api.client.delete(f"/v1/api-keys/{key_id}", headers=tenant.headers)
    assert r.status_code == 204, r.text
    # Until its Retry-After, the caller is refused before authentication, as it was...
    r = await api.client.get("/v1/sandboxes", headers=api.bearer(key))
    assert r.status_code == 429 and r.json()["code"] == "rate_limited", r.text
    # (a public route counts its callers by address, whatever they send)
    assert (await api.client.get("/healthz", headers=api.bearer(key))).status_code == 200
    # ...and then looked up again: the key is revoked.
    await asyncio.sleep(int(r.headers["retry-after"]))
    r = await api.client.get("/v1/sandboxes", headers=api.bearer(key))
    assert r.status_code == 401, r.text


def test_the_settings_are_read_and_checked(api: Api) -> None:
    base = {"state_dir": api.settings.state_dir, "operator_key": api.settings.operator_key}
    read = Settings.from_env(
        {"AIRLOCK_RATE_LIMITS": "false", "AIRLOCK_ANONYMOUS_REQUESTS_PER_S": "7"}, **base
    )
    assert read.rate_limits is False and read.anonymous_requests_per_s == 7
    assert Settings.from_env({}, **base).rate_limits is True
    with pytest.raises(ConfigurationError, match="AIRLOCK_ANONYMOUS_REQUESTS_PER_S"):
        Settings.from_env({"AIRLOCK_ANONYMOUS_REQUESTS_PER_S": "0"}, **base)


@pytest.mark.parametrize(
    ("client", "counted_as"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("::ffff:203.0.113.7", "203.0.113.7"),  # the same host, however it is written
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),  # one host holds a whole /64
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
    ],
)
def test_a_caller_without_a_tenant_is_counted_by_its_address(client: str, counted_as: str) -> None:
    assert source({"client": (client, 40000)}) == counted_as
