"""TTL expiry: the reaper stops a sandbox past its TTL and its runtime processes go away."""

from __future__ import annotations

import asyncio
import time

from airlock_client.api.sandboxes import list_sandbox_transitions

from tests.e2e.conftest import Airlock, Tenant, run_exec, runtime_processes


async def test_expired_sandbox_is_stopped_and_its_processes_are_gone(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant, ttl_s=10)
    _, ex = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["sleep", "57"], wait=False, timeout_s=90
    )
    assert ex is not None
    rows = await airlock.db.fetch("SELECT runtime_id FROM sandboxes WHERE id = $1", sandbox.id)
    runtime_id = rows[0]["runtime_id"]
    assert runtime_id
    running = [p for p in runtime_processes(runtime_id) if "runsc" in p]
    assert running, "the check below would pass vacuously: no runsc process names the sandbox"

    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        current = await airlock.get_sandbox(tenant, sandbox.id)
        if current.state == "stopped":
            break
        await asyncio.sleep(0.5)
    assert current.state == "stopped", current
    transitions = await list_sandbox_transitions.asyncio(sandbox.id, client=tenant.client)
    assert transitions is not None
    assert [(t.from_state, t.to_state, t.reason) for t in transitions] == [
        (None, "creating", None),
        ("creating", "running", None),
        ("running", "stopping", "expired"),
        ("stopping", "stopped", "expired"),
    ]
    assert current.stopped_at is not None and current.stopped_at >= current.expires_at

    left: list[str] = []
    for _ in range(20):  # the runtime's processes may take a moment to exit
        left = [p for p in runtime_processes(runtime_id) if "runsc" in p]
        if not left:
            break
        await asyncio.sleep(0.5)
    assert left == [], f"runtime processes outlived the sandbox: {left}"
    async with airlock.http(tenant.key) as http:
        cut = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{ex.id}")).json()
    assert cut["state"] != "running", cut
    assert cut["finished_at"] is not None


async def test_extended_sandbox_outlives_its_first_ttl(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant, ttl_s=10)
    async with airlock.http(tenant.key) as http:
        r = await http.patch(f"/v1/sandboxes/{sandbox.id}", json={"ttl_s": 600})
        assert r.status_code == 200, r.text
    await asyncio.sleep(13)  # past the first expiry, with the reaper running every second
    current = await airlock.get_sandbox(tenant, sandbox.id)
    assert current.state == "running"
    assert current.ttl_s == 600
