"""On gVisor a sandbox's writable space is tmpfs held in memory: admission counts memory plus
writable space against the host's budget (AIRLOCK_HOST_MEMORY_MIB, 3/4 of MemTotal by default)
and refuses with 503 and Retry-After what the host cannot hold, instead of an OOM."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.db import migrate
from service.runtime.gvisor import bundle
from service.runtime.gvisor.host_memory import DEFAULT_FRACTION, mem_total_mib
from service.runtime.types import SandboxSpec
from tests.conftest import create_pg_database
from tests.e2e.conftest import Airlock, Server, Tenant, free_port, run_exec

MIB = 1 << 20
# What a sandbox of this size promises on the default image (it has /home/sandbox).
SMALL = {"cpus": 1, "memory_mib": 256, "disk_mib": 512}
SMALL_LIMIT = bundle.memory_limit_mib(
    SandboxSpec(memory_mib=SMALL["memory_mib"], disk_mib=SMALL["disk_mib"]), with_home=True
)
BUDGET_MIB = 2 * SMALL_LIMIT + SMALL_LIMIT // 2  # two such sandboxes fit, a third does not


def mem_available_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no MemAvailable")


def assert_host_full(r: httpx.Response, *codes: str) -> None:
    assert r.status_code == 503, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["code"] in (codes or ("resource_exhausted",))
    assert int(r.headers["Retry-After"]) >= 1


async def operator_tenant(server_url: str, operator_key: str, **quotas: int) -> str:
    async with httpx.AsyncClient(base_url=server_url, timeout=60) as http:
        r = await http.post(
            "/v1/tenants",
            headers={"Authorization": f"Bearer {operator_key}"},
            json={"name": f"e2e-{secrets.token_hex(6)}", "quotas": quotas},
        )
        assert r.status_code == 201, r.text
        return str(r.json()["api_key"])


@pytest.fixture(scope="module")
async def small_host(airlock: Airlock) -> AsyncIterator[tuple[Server, str]]:
    """A second server on the same images whose host budget holds two small sandboxes."""
    state = airlock.server.state_dir.parent / f"small-host-{secrets.token_hex(4)}"
    state.mkdir()
    (state / "images").symlink_to(airlock.server.state_dir / "images")
    url, drop = await create_pg_database("airlock_e2e_host")
    await asyncio.to_thread(migrate.upgrade, url)
    env = {
        **airlock.server.env,
        "AIRLOCK_STATE_DIR": str(state),
        "AIRLOCK_DATABASE_URL": url,
        "AIRLOCK_HOST_MEMORY_MIB": str(BUDGET_MIB),
    }
    server = Server(state, env, free_port(), state / "server.log")
    server.start()
    try:
        await server.wait_ready()
        yield server, env["AIRLOCK_OPERATOR_KEY"]
    finally:
        server.stop()
        await drop()


async def test_host_budget_refuses_what_it_cannot_hold(small_host: tuple[Server, str]) -> None:
    server, operator_key = small_host
    key = await operator_tenant(server.url, operator_key)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=120) as http:
        held = []
        for _ in range(2):
            r = await http.post("/v1/sandboxes", json={**SMALL, "ttl_s": 300})
            assert r.status_code == 201, r.text
            held.append(r.json()["id"])
        r = await http.post("/v1/sandboxes", json={**SMALL, "ttl_s": 300})
        assert_host_full(r)
        assert "MiB" in r.json()["detail"]
        # The service itself stays healthy, and room comes back when a sandbox goes.
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as anon:
            assert (await anon.get("/healthz")).status_code == 200
        assert (await http.delete(f"/v1/sandboxes/{held.pop()}")).status_code == 204
        r = await http.post("/v1/sandboxes", json={**SMALL, "ttl_s": 300})
        assert r.status_code == 201, r.text
        held.append(r.json()["id"])
        for sandbox_id in held:
            assert (await http.delete(f"/v1/sandboxes/{sandbox_id}")).status_code == 204


async def test_default_budget_refuses_a_sandbox_larger_than_the_host(
    airlock: Airlock,
) -> None:
    """Even where the operator's quotas allow it, 256 GiB of writable space is refused on a
    host that does not have it for sandboxes (the default budget is a share of MemTotal)."""
    huge = SandboxSpec(memory_mib=128, disk_mib=262_144)
    assert bundle.memory_limit_mib(huge, with_home=False) > mem_total_mib() * DEFAULT_FRACTION
    tenant = await airlock.tenant(max_disk_mib=262_144)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"memory_mib": 128, "disk_mib": 262_144})
        if r.status_code == 201:
            tenant.sandboxes.append(r.json()["id"])
        # Refused by the node's own capacity (its writable space is memory on gVisor), or by
        # the runtime's admission, which counts the sandbox kernel's share too.
        assert_host_full(r, "no_capacity", "resource_exhausted")
        async with httpx.AsyncClient(base_url=airlock.server.url, timeout=10) as anon:
            assert (await anon.get("/healthz")).status_code == 200


async def _fill(airlock: Airlock, tenant: Tenant, sandbox_id: str) -> dict[str, Any]:
    _, result = await run_exec(
        tenant.client,
        sandbox_id,
        cmd=["sh", "-c", "dd if=/dev/zero of=/work/fill bs=1M; wc -c < /work/fill"],
        timeout_s=300,
    )
    assert result is not None
    return result.to_dict()


async def test_disk_fill_ends_in_enospc_within_the_hosts_memory(airlock: Airlock) -> None:
    """A sandbox that fills the writable space its quota allowed gets ENOSPC; the host's
    free memory drops by about what was written (it is memory) and comes back on delete."""
    disk_mib = 1024
    tenant = await airlock.tenant(max_disk_mib=disk_mib)
    sandbox = await airlock.sandbox(tenant, memory_mib=256, disk_mib=disk_mib)
    limit = bundle.memory_limit_mib(SandboxSpec(memory_mib=256, disk_mib=disk_mib), with_home=True)
    before = mem_available_mib()
    result = await _fill(airlock, tenant, sandbox.id)
    during = mem_available_mib()
    assert "No space left on device" in result["stderr"], result
    written = int(result["stdout"].strip())
    assert disk_mib * MIB * 0.9 <= written <= disk_mib * MIB
    async with airlock.http(tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox.id}")
        assert r.json()["state"] == "running"  # the sandbox lives on, only the write failed
        async with httpx.AsyncClient(base_url=airlock.server.url, timeout=10) as anon:
            assert (await anon.get("/healthz")).status_code == 200
        assert (await http.delete(f"/v1/sandboxes/{sandbox.id}")).status_code == 204
    tenant.sandboxes.remove(sandbox.id)
    # The kernel gives the sandbox's memory back over a moment after its processes end: read
    # until it has (at most 20 s), then judge.
    after = mem_available_mib()
    for _ in range(40):
        if after - during >= written // MIB // 2:
            break
        await asyncio.sleep(0.5)
        after = mem_available_mib()
    print(
        f"\nMemAvailable: {before} MiB before, {during} MiB with {written // MIB} MiB written "
        f"(sandbox limit {limit} MiB), {after} MiB after delete"
    )
    # The host gave the sandbox no more than its promise (other work on the host moves these
    # figures by a few hundred MiB, hence the margin), and took the memory back.
    assert before - during <= limit + 512
    assert after - during >= written // MIB // 2
