"""A sandbox's life through the generated client: create, exec, files, history, delete."""

from __future__ import annotations

from airlock_client.api.execs import get_exec, list_execs
from airlock_client.api.sandboxes import delete_sandbox, list_sandbox_transitions

from tests.e2e.conftest import Airlock, Tenant, run_exec


async def test_create_exec_history_delete(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant, labels={"suite": "e2e"})
    assert sandbox.runtime == "gvisor"

    _, ran = await run_exec(
        tenant.client, sandbox.id, cmd=["python3", "-c", "print('hello from', 6 * 7)"]
    )
    assert ran is not None
    assert (ran.state, ran.outcome, ran.exit_code) == ("finished", "exited", 0)
    assert ran.stdout == "hello from 42\n"
    assert ran.stderr == ""

    _, failed = await run_exec(
        tenant.client, sandbox.id, cmd=["python3", "-c", "import sys; sys.exit('boom')"]
    )
    assert failed is not None
    assert (failed.state, failed.exit_code) == ("finished", 1)
    assert failed.stderr == "boom\n"

    got = await get_exec.asyncio(sandbox.id, ran.id, client=tenant.client)
    assert got is not None and got.stdout == "hello from 42\n"

    history = await list_execs.asyncio(sandbox.id, client=tenant.client)
    assert history is not None
    assert [(e.id, e.cmd, e.exit_code) for e in history.items] == [
        (ran.id, ["python3", "-c", "print('hello from', 6 * 7)"], 0),
        (failed.id, ["python3", "-c", "import sys; sys.exit('boom')"], 1),
    ]

    deleted = await delete_sandbox.asyncio_detailed(sandbox.id, client=tenant.client)
    assert deleted.status_code == 204
    after = await airlock.get_sandbox(tenant, sandbox.id)
    assert after.state == "stopped"
    transitions = await list_sandbox_transitions.asyncio(sandbox.id, client=tenant.client)
    assert transitions is not None
    assert [(t.from_state, t.to_state) for t in transitions][-2:] == [
        ("running", "stopping"),
        ("stopping", "stopped"),
    ]
    await run_exec(tenant.client, sandbox.id, expect=409, cmd=["true"])
