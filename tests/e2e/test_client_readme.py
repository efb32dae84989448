"""The example in the generated client's README works as written against a real server."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys

from airlock_client.api.execs import create_exec
from airlock_client.api.sandboxes import create_sandbox
from airlock_client.models import ExecCreate, SandboxCreate

from tests.e2e.conftest import REPO, Airlock, Tenant

README = REPO / "clients/python/README.md"


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, f"no python example in {README}"
    return blocks[0]


async def test_readme_round_trip(airlock: Airlock, tenant: Tenant) -> None:
    code = example()
    assert len(code.strip().splitlines()) <= 25, "the example should stay short"
    env = {
        **os.environ,
        "AIRLOCK_URL": airlock.server.url,
        "AIRLOCK_API_KEY": tenant.key,
    }
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["0 done", "b'{\"answer\": 42}'"], done.stdout
    async with airlock.http(tenant.key) as http:
        listed = (await http.get("/v1/sandboxes")).json()["items"]
    assert [s["state"] for s in listed] == ["stopped"]


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
