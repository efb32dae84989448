"""Authentication answers are cached while revocations reach the process (on SQLite always: one
process), and a revocation is refused at once: from this process, from another one (its
NOTIFY, PostgreSQL), and after the listening connection was lost (the cache is emptied and off
until it listens again)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable

import asyncpg
import pytest

from service.auth.cache import APPLICATION_NAME, CHANNEL, TTL_S
from tests.conftest import Api, Tenant


def _dsn(api: Api) -> str:
    url = api.settings.effective_database_url
    return url.replace("postgresql+asyncpg", "postgresql")


def _cached(api: Api, credential: str) -> bool:
    cache = api.app.state.authenticator.cache
    return cache.get(hashlib.sha256(credential.encode()).digest()) is not None


async def _until(check: Callable[[], bool], what: str, within_s: float = 10.0) -> None:
    for _ in range(int(within_s / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {within_s} s: {what}")


@pytest.fixture
async def cached(api: Api) -> None:
    await _until(lambda: api.app.state.authenticator.cache.enabled, "the cache is on")


@pytest.fixture
async def listening(api: Api) -> None:
    if api.app.state.auth_listener is None:
        pytest.skip("revocations made elsewhere come by NOTIFY, on PostgreSQL")
    await _until(lambda: api.app.state.authenticator.cache.enabled, "the listener listens")


async def _use(api: Api, key: str) -> int:
    return (await api.client.get("/v1/sandboxes", headers=api.bearer(key))).status_code


@pytest.mark.sqlite
async def test_a_key_is_cached_and_its_revocation_refused_at_once(
    api: Api, tenant: Tenant, cached: None
) -> None:
    key = await api.key(tenant, ["sandboxes:read"])
    assert await _use(api, key) == 200
    assert _cached(api, key)
    key_id = next(
        k["id"]
        for k in (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
        if key.startswith(k["prefix"])
    )
    r = await api.client.delete(f"/v1/api-keys/{key_id}", headers=tenant.headers)
    assert r.status_code == 204
    assert await _use(api, key) == 401


@pytest.mark.sqlite
async def test_a_suspended_tenant_and_a_revoked_token_are_refused_at_once(
    api: Api, cached: None
) -> None:
    tenant = await api.tenant()
    issued = await api.token(tenant.key, scopes=["sandboxes:read"])
    token = issued["token"]
    assert await _use(api, token) == 200 and await _use(api, tenant.key) == 200
    assert _cached(api, token) and _cached(api, tenant.key)
    r = await api.client.delete(f"/v1/tokens/{issued['jti']}", headers=tenant.headers)
    assert r.status_code == 204, r.text
    assert await _use(api, token) == 401
    assert await _use(api, tenant.key) == 200
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"status": "suspended"}, headers=api.operator
    )
    assert r.status_code == 200, r.text
    assert await _use(api, tenant.key) == 401


async def test_a_revocation_made_elsewhere_reaches_the_cache(
    api: Api, tenant: Tenant, listening: None
) -> None:
    """Another process revokes (here: a plain connection, with the NOTIFY the service sends):
    this one forgets what it cached as soon as the notification arrives."""
    key = await api.key(tenant, ["sandboxes:read"])
    assert await _use(api, key) == 200 and _cached(api, key)
    conn = await asyncpg.connect(_dsn(api))
    try:
        async with conn.transaction():
            await conn.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1",
                hashlib.sha256(key.encode()).hexdigest(),
            )
            await conn.execute("SELECT pg_notify($1, '')", CHANNEL)
    finally:
        await conn.close()
    # Well inside the entry's own lapse (TTL_S), which would empty it anyway.
    await _until(lambda: not _cached(api, key), "the notification empties the cache", TTL_S / 4)
    assert await _use(api, key) == 401


async def test_a_lost_listener_empties_the_cache_and_it_comes_back(
    api: Api, tenant: Tenant, listening: None
) -> None:
    """Without its listening connection a process cannot hear of revocations: what it cached
    is dropped, so even a revocation that sent no notification is refused."""
    listener = api.app.state.auth_listener
    key = await api.key(tenant, ["sandboxes:read"])
    assert await _use(api, key) == 200 and _cached(api, key)
    connects = listener.connects
    conn = await asyncpg.connect(_dsn(api))
    try:
        ended = await conn.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = $1 AND datname = current_database()",
            APPLICATION_NAME,
        )
        assert ended >= 1
        await _until(lambda: listener.connects > connects, "the listener listens again")
        await conn.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1",
            hashlib.sha256(key.encode()).hexdigest(),
        )
    finally:
        await conn.close()
    assert await _use(api, key) == 401
    assert api.app.state.authenticator.cache.enabled
