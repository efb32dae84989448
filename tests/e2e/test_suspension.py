"""A suspended tenant's running execs are killed and say why, through a real server on gVisor;
making the tenant active again restarts none of them (its sandboxes themselves stay)."""

from __future__ import annotations

import asyncio
import time

from service.tenants.suspension import REASON
from tests.e2e.conftest import Airlock, Tenant, run_exec

BOUND_S = 30.0  # far sooner than the command would end by itself


async def set_status(airlock: Airlock, tenant: Tenant, status: str) -> None:
    async with airlock.http(airlock.operator_key) as op:
        r = await op.patch(f"/v1/tenants/{tenant.id}", json={"status": status})
        assert r.status_code == 200, r.text


async def exec_row(airlock: Airlock, exec_id: str) -> dict[str, object]:
    rows = await airlock.db.fetch("SELECT state, outcome, error FROM execs WHERE id = $1", exec_id)
    return dict(rows[0])


async def test_a_running_exec_is_killed_when_its_tenant_is_suspended(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, started = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["sleep", "300"], wait=False, timeout_s=600
    )
    assert started is not None
    try:
        await set_status(airlock, tenant, "suspended")
        deadline = time.monotonic() + BOUND_S
        row = await exec_row(airlock, started.id)
        while row["state"] == "running" and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            row = await exec_row(airlock, started.id)
        assert (row["outcome"], row["error"]) == ("killed", REASON), row
        kills = await airlock.db.fetch(
            "SELECT actor, details FROM audit_events WHERE chain = $1 AND target = $2 "
            "AND action = 'exec.kill'",
            tenant.id,
            started.id,
        )
        assert [k["actor"] for k in kills] == ["system:suspension"], kills
    finally:
        await set_status(airlock, tenant, "active")
    async with airlock.http(tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{started.id}")
        assert r.status_code == 200, r.text
        assert (r.json()["outcome"], r.json()["error"]) == ("killed", REASON), r.json()
    # The sandbox is the tenant's to use again; the killed command stays ended.
    _, again = await run_exec(tenant.client, sandbox.id, cmd=["echo", "back"])
    assert again is not None and again.stdout == "back\n"
    assert (await exec_row(airlock, started.id))["state"] != "running"
