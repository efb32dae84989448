"""Tenant quotas, set by the operator, answered with 429 and Retry-After (or 422 for a request
that could never fit); a refused request creates nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from airlock_client.api.tenants import update_tenant
from airlock_client.models import TenantUpdate

from tests.e2e.conftest import Airlock, Tenant


async def set_quotas(airlock: Airlock, tenant: Tenant, **quotas: int) -> None:
    r = await update_tenant.asyncio_detailed(
        tenant.id, client=airlock.operator, body=TenantUpdate.from_dict({"quotas": quotas})
    )
    assert r.status_code == 200, r.content
    assert r.parsed is not None
    for name, value in quotas.items():
        assert getattr(r.parsed.quotas, name) == value


def assert_quota_answer(r: Any, quota: str) -> None:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["code"] == "quota_exceeded"
    assert quota in r.text
    assert int(r.headers["Retry-After"]) >= 1


async def sandbox_rows(airlock: Airlock, tenant: Tenant) -> int:
    return await airlock.db.count("SELECT count(*) FROM sandboxes WHERE tenant_id = $1", tenant.id)


async def test_max_sandboxes(airlock: Airlock, tenant: Tenant) -> None:
    await set_quotas(airlock, tenant, max_sandboxes=1)
    first = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"ttl_s": 600})
        assert_quota_answer(r, "max_sandboxes")
        assert await sandbox_rows(airlock, tenant) == 1
        # A stopped sandbox no longer counts.
        assert (await http.delete(f"/v1/sandboxes/{first.id}")).status_code == 204
        r = await http.post("/v1/sandboxes", json={"ttl_s": 600})
        assert r.status_code == 201, r.text
        tenant.sandboxes.append(r.json()["id"])


async def test_concurrent_creates_respect_max_sandboxes(airlock: Airlock, tenant: Tenant) -> None:
    await set_quotas(airlock, tenant, max_sandboxes=2)
    async with airlock.http(tenant.key) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/sandboxes", json={"ttl_s": 600}) for _ in range(4))
        )
    tenant.sandboxes.extend(r.json()["id"] for r in answers if r.status_code == 201)
    assert sorted(r.status_code for r in answers) == [201, 201, 429, 429]
    active = await airlock.db.count(
        "SELECT count(*) FROM sandboxes WHERE tenant_id = $1 AND state = 'running'", tenant.id
    )
    assert active == 2


async def test_max_vcpus_and_memory(airlock: Airlock, tenant: Tenant) -> None:
    await set_quotas(airlock, tenant, max_vcpus=2, max_memory_mib=1024)
    await airlock.sandbox(tenant, cpus=1, memory_mib=512)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"cpus": 2, "memory_mib": 256})
        assert_quota_answer(r, "max_vcpus")
        r = await http.post("/v1/sandboxes", json={"cpus": 1, "memory_mib": 768})
        assert_quota_answer(r, "max_memory_mib")
    assert await sandbox_rows(airlock, tenant) == 1


async def test_execs_per_minute(airlock: Airlock, tenant: Tenant) -> None:
    await set_quotas(airlock, tenant, execs_per_minute=2)
    sandbox = await airlock.sandbox(tenant)
    path = f"/v1/sandboxes/{sandbox.id}/execs"
    async with airlock.http(tenant.key) as http:
        for _ in range(2):
            assert (await http.post(path, json={"cmd": ["true"]})).status_code == 200
        r = await http.post(path, json={"cmd": ["touch", "/tmp/third"]})
        assert_quota_answer(r, "execs_per_minute")
        assert int(r.headers["Retry-After"]) <= 61
        history = (await http.get(path)).json()["items"]
        assert len(history) == 2
    count = await airlock.db.count("SELECT count(*) FROM execs WHERE sandbox_id = $1", sandbox.id)
    assert count == 2


async def test_ttl_above_maximum_is_422(airlock: Airlock, tenant: Tenant) -> None:
    await set_quotas(airlock, tenant, max_sandbox_ttl_s=120)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"ttl_s": 121})
        assert r.status_code == 422, r.text
        assert "120" in r.json()["detail"]
        assert await sandbox_rows(airlock, tenant) == 0
        r = await http.post("/v1/sandboxes", json={"ttl_s": 120})
        assert r.status_code == 201, r.text
        tenant.sandboxes.append(r.json()["id"])
        r = await http.patch(f"/v1/sandboxes/{r.json()['id']}", json={"ttl_s": 121})
        assert r.status_code == 422, r.text


async def test_exec_timeout_above_maximum_is_422(airlock: Airlock, tenant: Tenant) -> None:
    await set_quotas(airlock, tenant, max_exec_timeout_s=5)
    sandbox = await airlock.sandbox(tenant)
    path = f"/v1/sandboxes/{sandbox.id}/execs"
    async with airlock.http(tenant.key) as http:
        r = await http.post(path, json={"cmd": ["true"], "timeout_s": 5.5})
        assert r.status_code == 422, r.text
        assert "5" in r.json()["detail"]
        assert (await http.get(path)).json()["items"] == []
        r = await http.post(path, json={"cmd": ["true"], "timeout_s": 5})
        assert r.status_code == 200, r.text


async def test_disk_beyond_the_default_quota_is_refused(airlock: Airlock, tenant: Tenant) -> None:
    """Writable space is a quota like memory: a default tenant cannot ask for 256 GiB of it
    (on gVisor that is host memory)."""
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"memory_mib": 128, "disk_mib": 262_144})
        if r.status_code == 201:
            tenant.sandboxes.append(r.json()["id"])
        assert_quota_answer(r, "max_disk_mib")
    assert await sandbox_rows(airlock, tenant) == 0
    async with airlock.http(airlock.operator_key) as http:
        shown = (await http.get(f"/v1/tenants/{tenant.id}")).json()["quotas"]
    assert 0 < shown["max_disk_mib"] < 262_144


async def test_max_disk_counts_every_active_sandbox(airlock: Airlock, tenant: Tenant) -> None:
    await set_quotas(airlock, tenant, max_disk_mib=1536)
    first = await airlock.sandbox(tenant, memory_mib=128, disk_mib=1024)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"memory_mib": 128, "disk_mib": 1024})
        assert_quota_answer(r, "max_disk_mib")
        assert r.json()["in_use"] == 1024
        r = await http.post("/v1/sandboxes", json={"memory_mib": 128, "disk_mib": 512})
        assert r.status_code == 201, r.text
        tenant.sandboxes.append(r.json()["id"])
        # A stopped sandbox's space is free again.
        assert (await http.delete(f"/v1/sandboxes/{first.id}")).status_code == 204
        r = await http.post("/v1/sandboxes", json={"memory_mib": 128, "disk_mib": 1024})
        assert r.status_code == 201, r.text
        tenant.sandboxes.append(r.json()["id"])
    assert await sandbox_rows(airlock, tenant) == 3


async def test_max_running_execs(airlock: Airlock, tenant: Tenant) -> None:
    """Execs running at once are capped per tenant (each holds output buffers in the server),
    across its sandboxes; one that ends frees its place."""
    await set_quotas(airlock, tenant, max_running_execs=2)
    first = await airlock.sandbox(tenant)
    second = await airlock.sandbox(tenant)
    slow = {"cmd": ["sleep", "60"], "wait": False, "timeout_s": 120}
    async with airlock.http(tenant.key) as http:
        started = []
        for sandbox in (first, second):
            r = await http.post(f"/v1/sandboxes/{sandbox.id}/execs", json=slow)
            assert r.status_code == 202, r.text
            started.append((sandbox.id, r.json()["id"]))
        r = await http.post(f"/v1/sandboxes/{first.id}/execs", json={"cmd": ["true"]})
        assert_quota_answer(r, "max_running_execs")
        count = await airlock.db.count("SELECT count(*) FROM execs WHERE tenant_id = $1", tenant.id)
        assert count == 2
        sandbox_id, exec_id = started[0]
        r = await http.post(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}/kill")
        assert r.status_code in (200, 202), r.text
        for _ in range(100):
            state = (await http.get(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}")).json()["state"]
            if state != "running":
                break
            await asyncio.sleep(0.1)
        r = await http.post(f"/v1/sandboxes/{first.id}/execs", json={"cmd": ["true"]})
        assert r.status_code == 200, r.text
