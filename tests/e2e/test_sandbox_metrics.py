"""`GET /v1/sandboxes/{id}/metrics` on the real gVisor runtime: while an exec burns CPU, holds
memory, runs processes and fills writable space, the sandbox's metrics show each of them; the
route is the sandbox's own (a token bound to it may read it, another tenant gets a 404) and a
sandbox that stopped is a 409."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Airlock, Tenant, run_exec

MIB = 1 << 20
# Holds 160 MiB, starts three sleepers, then spins the CPU until killed.
BUSY = (
    "import subprocess, time\n"
    "held = bytearray(160 << 20)\n"
    "for i in range(0, len(held), 4096): held[i] = 1\n"
    "sleepers = [subprocess.Popen(['sleep', '300']) for _ in range(3)]\n"
    "while True: pass\n"
)


async def _metrics(airlock: Airlock, token: str, sandbox_id: str) -> tuple[int, dict[str, Any]]:
    async with airlock.http(token) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox_id}/metrics")
    return r.status_code, r.json()


async def _tenant_gauges(airlock: Airlock, tenant_id: str) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=airlock.server.url) as http:
        text = (await http.get("/metrics")).text
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("airlock_tenant_"):
            for sample in family.samples:
                if sample.labels.get("tenant_id") == tenant_id:
                    found[family.name.removeprefix("airlock_tenant_")] = sample.value
    return found


async def test_metrics_see_cpu_memory_processes_and_writable_space(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant, memory_mib=512, disk_mib=256)
    status, idle = await _metrics(airlock, tenant.key, sandbox.id)
    assert status == 200, idle
    assert idle["sandbox_id"] == sandbox.id and idle["processes"] == 0, idle
    assert idle["memory_limit_bytes"] >= 512 * MIB and idle["processes_limit"] > 0, idle
    assert idle["writable_limit_bytes"] >= 256 * MIB, idle

    _, wrote = await run_exec(
        tenant.client, sandbox.id, cmd=["sh", "-c", "head -c 33554432 /dev/zero > /work/blob"]
    )
    assert wrote is not None and wrote.exit_code == 0, wrote
    _, busy = await run_exec(
        tenant.client,
        sandbox.id,
        expect=202,
        cmd=["python3", "-c", BUSY],
        wait=False,
        timeout_s=120,
    )
    assert busy is not None

    seen: dict[str, Any] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, seen = await _metrics(airlock, tenant.key, sandbox.id)
        assert status == 200, seen
        if (
            seen["cpu_seconds"] - idle["cpu_seconds"] >= 2.0
            and seen["memory_bytes"] - idle["memory_bytes"] >= 150 * MIB
            and seen["processes"] >= 4
        ):
            break
        await asyncio.sleep(0.5)
    else:
        raise AssertionError(f"the metrics never showed the work: idle {idle}, last {seen}")
    assert seen["writable_bytes"] - idle["writable_bytes"] >= 32 * MIB, (idle, seen)
    # The same, summed per tenant on this node's /metrics (sampled every second here).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        tenant_usage = await _tenant_gauges(airlock, tenant.id)
        if (
            tenant_usage.get("memory_bytes", 0) >= 150 * MIB
            and tenant_usage["processes"] >= 4
            and tenant_usage["cpu_seconds"] >= 2.0
        ):
            break
        await asyncio.sleep(0.5)
    else:
        raise AssertionError(f"/metrics never showed the tenant's use: {tenant_usage}")
    assert tenant_usage["sandboxes"] == 1, tenant_usage

    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{sandbox.id}/execs/{busy.id}/kill")
        assert r.status_code in (200, 202, 204), r.text
        # A token bound to this sandbox reads its metrics; another tenant does not see them.
        r = await http.post(
            "/v1/tokens", json={"scopes": ["sandboxes:read"], "sandbox_id": sandbox.id}
        )
        assert r.status_code == 201, r.text
        bound = r.json()["token"]
    assert (await _metrics(airlock, bound, sandbox.id))[0] == 200
    other = await airlock.tenant()
    assert (await _metrics(airlock, other.key, sandbox.id))[0] == 404

    async with airlock.http(tenant.key) as http:
        assert (await http.delete(f"/v1/sandboxes/{sandbox.id}")).status_code == 204
    status, body = await _metrics(airlock, tenant.key, sandbox.id)
    assert status == 409 and body["code"] == "sandbox_not_running", body
