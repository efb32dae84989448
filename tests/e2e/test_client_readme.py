"""What the generated client's README says of it, beyond its example (which
test_client_readme_walk.py runs with the README's other blocks): the client parses an exec
started without waiting and a replayed create."""

from __future__ import annotations

from airlock_client.api.execs import create_exec
from airlock_client.api.sandboxes import create_sandbox
from airlock_client.models import ExecCreate, SandboxCreate

from tests.e2e.conftest import Airlock, Tenant


async def test_client_parses_an_exec_started_without_waiting(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    r = await create_exec.asyncio_detailed(
        sandbox.id, client=tenant.client, body=ExecCreate(cmd=["true"], wait=False)
    )
    assert r.status_code == 202
    assert r.parsed is not None and r.parsed.state in ("running", "finished")


async def test_client_parses_a_replayed_sandbox_create(airlock: Airlock, tenant: Tenant) -> None:
    body = SandboxCreate(ttl_s=600)
    first = await create_sandbox.asyncio_detailed(
        client=tenant.client, body=body, idempotency_key="readme-retry"
    )
    assert first.status_code == 201 and first.parsed is not None
    tenant.sandboxes.append(first.parsed.id)
    again = await create_sandbox.asyncio_detailed(
        client=tenant.client, body=body, idempotency_key="readme-retry"
    )
    assert again.status_code == 200
    assert again.parsed is not None and again.parsed.id == first.parsed.id
