"""An exec that is killed, or whose sandbox goes away under it, ends: it is never left
`running`, and its processes are gone."""

from __future__ import annotations

import asyncio
import time

from tests.e2e.conftest import Airlock, Tenant, run_exec

PS = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null"


async def exec_state(airlock: Airlock, tenant: Tenant, sandbox_id: str, exec_id: str) -> dict:
    async with airlock.http(tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}")
        assert r.status_code == 200, r.text
        return r.json()


async def settled(airlock: Airlock, tenant: Tenant, sandbox_id: str, exec_id: str) -> dict:
    deadline = time.monotonic() + 30
    while True:
        ex = await exec_state(airlock, tenant, sandbox_id, exec_id)
        if ex["state"] != "running" or time.monotonic() > deadline:
            return ex
        await asyncio.sleep(0.25)


async def test_kill_ends_the_exec_and_its_processes(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        expect=202,
        cmd=["sh", "-c", "sleep 47 & sleep 48; echo never"],
        wait=False,
    )
    assert ex is not None
    await asyncio.sleep(1)
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{sandbox.id}/execs/{ex.id}/kill")
        assert r.status_code == 200, r.text
        assert r.json()["state"] == "finished"
        assert r.json()["outcome"] == "killed"
        assert "never" not in r.json()["stdout"]
        again = await http.post(f"/v1/sandboxes/{sandbox.id}/execs/{ex.id}/kill")
        assert again.status_code == 409, again.text
    _, ps = await run_exec(tenant.client, sandbox.id, cmd=["sh", "-c", PS])
    assert ps is not None
    assert "sleep 47" not in ps.stdout and "sleep 48" not in ps.stdout, ps.stdout


async def test_deleting_the_sandbox_ends_its_running_exec(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(tenant.client, sandbox.id, expect=202, cmd=["sleep", "45"], wait=False)
    assert ex is not None
    await asyncio.sleep(1)
    async with airlock.http(tenant.key) as http:
        assert (await http.delete(f"/v1/sandboxes/{sandbox.id}")).status_code == 204
    ended = await settled(airlock, tenant, sandbox.id, ex.id)
    assert ended["state"] != "running", ended
    assert ended["finished_at"] is not None


async def test_a_timeout_ends_the_whole_tree(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["sh", "-c", "sleep 37 & echo started; sleep 38"],
        timeout_s=1.5,
    )
    assert ex is not None
    assert (ex.state, ex.outcome) == ("finished", "timeout")
    assert ex.stdout == "started\n"
    _, ps = await run_exec(tenant.client, sandbox.id, cmd=["sh", "-c", PS])
    assert ps is not None
    assert "sleep 37" not in ps.stdout and "sleep 38" not in ps.stdout, ps.stdout
