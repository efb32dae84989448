"""A sandbox's life is bounded by its tenant's `max_lifetime_s`, counted from its creation: a
create cannot ask past it, and extending the TTL again and again stops at it."""

from __future__ import annotations

import asyncio

from tests.e2e.conftest import Airlock, Tenant

LIFETIME_S = 120


async def _with_lifetime(airlock: Airlock, tenant: Tenant) -> None:
    async with airlock.http(airlock.operator_key) as op:
        r = await op.patch(
            f"/v1/tenants/{tenant.id}", json={"quotas": {"max_lifetime_s": LIFETIME_S}}
        )
        assert r.status_code == 200, r.text
        assert r.json()["quotas"]["max_lifetime_s"] == LIFETIME_S


async def test_ttl_extensions_cannot_keep_a_sandbox_past_the_max_lifetime(
    airlock: Airlock, tenant: Tenant
) -> None:
    await _with_lifetime(airlock, tenant)
    sandbox = await airlock.sandbox(tenant, ttl_s=60)
    async with airlock.http(tenant.key) as http:
        path = f"/v1/sandboxes/{sandbox.id}"
        # Within the lifetime: extended as asked.
        r = await http.patch(path, json={"ttl_s": 100})
        assert r.status_code == 200, r.text
        await asyncio.sleep(3)
        # The same extension again, later: its expiry would be past creation + lifetime.
        r = await http.patch(path, json={"ttl_s": LIFETIME_S - 2})
        assert r.status_code == 422, r.text
        problem = r.json()
        assert problem["code"] == "lifetime_exceeded", problem
        assert problem["max_lifetime_s"] == LIFETIME_S
        longest = problem["longest_ttl_s"]
        assert 0 < longest <= LIFETIME_S - 3, problem
        current = (await http.get(path)).json()
        assert current["ttl_s"] == 100, current  # the refused extension changed nothing
        # What the problem says still fits does.
        r = await http.patch(path, json={"ttl_s": longest - 5})
        assert r.status_code == 200, r.text
        extended = r.json()
    assert extended["ttl_s"] == longest - 5
    extensions = await airlock.db.count(
        "SELECT count(*) FROM audit_events WHERE chain = $1 AND target = $2 AND action = $3",
        tenant.id,
        sandbox.id,
        "sandbox.ttl",
    )
    assert extensions == 2  # the refused one left no record


async def test_a_create_cannot_ask_for_a_ttl_past_the_max_lifetime(
    airlock: Airlock, tenant: Tenant
) -> None:
    await _with_lifetime(airlock, tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"ttl_s": LIFETIME_S + 60})
        assert r.status_code == 422, r.text
        assert r.json()["code"] == "lifetime_exceeded", r.text
        assert (await http.get("/v1/sandboxes")).json()["items"] == []
