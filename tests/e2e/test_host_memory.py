"""A node's memory and disk are never promised twice, through HTTP on gVisor: admission counts
each sandbox's memory cap (its kernel inside it) against the host's budget
(AIRLOCK_HOST_MEMORY_MIB, 3/4 of MemTotal by default), its writable space is a file system
allocated in full on the node's disk, and what the node cannot hold is refused with 503 and
Retry-After instead of an OOM or a full host disk."""

from __future__ import annotations

import asyncio
import secrets
import shutil
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from service.db import migrate
from service.runtime.gvisor import bundle, disk
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
        # The node's capacity on record (its budget) or the runtime's own admission.
        assert_host_full(r, "no_capacity", "resource_exhausted")
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


async def test_a_disk_the_node_does_not_have_is_refused(airlock: Airlock) -> None:
    """Even where the operator's quotas allow it, 256 GiB of writable space is refused on a
    node whose disk does not have it, before anything is allocated."""
    disk_mib = 262_144
    free_before = shutil.disk_usage(airlock.server.state_dir).free
    assert free_before < disk_mib * MIB, "this node has the disk: the test means nothing here"
    tenant = await airlock.tenant(max_disk_mib=disk_mib)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"memory_mib": 128, "disk_mib": disk_mib})
        if r.status_code == 201:
            tenant.sandboxes.append(r.json()["id"])
        assert_host_full(r)
        assert "disk" in r.json()["detail"], r.json()
        async with httpx.AsyncClient(base_url=airlock.server.url, timeout=10) as anon:
            assert (await anon.get("/healthz")).status_code == 200
    # Nothing was allocated on the way (other work on the host moves this by a little).
    assert shutil.disk_usage(airlock.server.state_dir).free > free_before - 512 * MIB


async def _fill(airlock: Airlock, tenant: Tenant, sandbox_id: str) -> dict[str, Any]:
    _, result = await run_exec(
        tenant.client,
        sandbox_id,
        cmd=["sh", "-c", "dd if=/dev/zero of=/work/fill bs=1M; wc -c < /work/fill"],
        timeout_s=300,
    )
    assert result is not None
    return result.to_dict()


async def test_a_full_disk_is_enospc_on_the_nodes_disk_not_in_memory(airlock: Airlock) -> None:
    """A sandbox that fills the writable space its quota allowed (four times its memory) gets
    ENOSPC and lives on; what it wrote is on the node's disk, in the sandbox's own file system,
    which goes with the sandbox."""
    disk_mib, memory_mib = 1024, 256
    tenant = await airlock.tenant(max_disk_mib=disk_mib)
    disks = f"gvisor/sandboxes/*/{disk.IMAGE}"
    before = set(airlock.server.state_dir.glob(disks))
    sandbox = await airlock.sandbox(tenant, memory_mib=memory_mib, disk_mib=disk_mib)
    limit = bundle.memory_limit_mib(SandboxSpec(memory_mib=memory_mib, disk_mib=disk_mib), True)
    assert limit == memory_mib
    images = list(set(airlock.server.state_dir.glob(disks)) - before)
    assert len(images) == 1
    result = await _fill(airlock, tenant, sandbox.id)
    assert "No space left on device" in result["stderr"], result
    written = int(result["stdout"].strip())
    assert disk_mib * MIB <= written <= disk_mib * MIB * 1.03
    async with airlock.http(tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox.id}")
        assert r.json()["state"] == "running"  # the sandbox lives on, only the write failed
        metrics = (await http.get(f"/v1/sandboxes/{sandbox.id}/metrics")).json()
        assert metrics["memory_limit_bytes"] == memory_mib * MIB, metrics
        assert metrics["memory_bytes"] <= memory_mib * MIB, metrics
        assert metrics["writable_bytes"] >= written, metrics
        assert (await http.delete(f"/v1/sandboxes/{sandbox.id}")).status_code == 204
    tenant.sandboxes.remove(sandbox.id)
    assert not images[0].exists()
