"""A crash mid-exec (SIGKILL) and a restart with the same settings: no record is lost, the
cut-off exec is `interrupted` (and audited so), and none of its processes is left running."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import pytest

from tests.e2e.conftest import Airlock, Tenant, audit_events, run_exec, runtime_processes

T = TypeVar("T")

# The command lines of every process in the sandbox.
PS = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null"


async def wait_for(check: Callable[[], Awaitable[T]], timeout_s: float = 20.0) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = await check()
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.25)


async def sleeping(tenant: Tenant, sandbox_id: str, command: str) -> bool:
    """Whether `command` runs in the sandbox (seen from inside)."""

    async def seen() -> bool:
        _, ps = await run_exec(tenant.client, sandbox_id, cmd=["sh", "-c", PS])
        assert ps is not None
        return command in (ps.stdout or "")

    return await wait_for(seen)


@dataclass
class Crash:
    tenant: Tenant
    sandbox_id: str
    finished_id: str
    interrupted_id: str
    runtime_exec_id: str
    rows_before: dict[str, int]


COUNTS = {
    "sandboxes": "SELECT count(*) FROM sandboxes WHERE tenant_id = $1",
    "execs": "SELECT count(*) FROM execs WHERE tenant_id = $1",
}


async def row_counts(airlock: Airlock, tenant: Tenant) -> dict[str, int]:
    return {table: await airlock.db.count(sql, tenant.id) for table, sql in COUNTS.items()}


@pytest.fixture(scope="module")
async def crash(airlock: Airlock) -> Crash:
    """One finished exec and one `sleep 60` running when the server is SIGKILLed and restarted."""
    tenant = await airlock.tenant()
    sandbox = await airlock.sandbox(tenant)
    _, done = await run_exec(tenant.client, sandbox.id, cmd=["echo", "before"])
    _, ex = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["sleep", "60"], wait=False, timeout_s=120
    )
    assert done is not None and ex is not None

    async def runtime_exec_id() -> str | None:
        rows = await airlock.db.fetch("SELECT runtime_exec_id FROM execs WHERE id = $1", ex.id)
        return rows[0]["runtime_exec_id"]

    handle = await wait_for(runtime_exec_id)
    assert handle, "the exec never got a runtime handle"
    # What the checks after the restart look for is there before it: the process in the
    # sandbox (an exec through the sandbox's agent has no host process of its own; one through
    # `runsc exec` has, and the checks look for both).
    assert await sleeping(tenant, sandbox.id, "sleep 60"), "the exec is not running"
    before = await row_counts(airlock, tenant)
    assert before["sandboxes"] == 1 and before["execs"] >= 3  # echo, sleep, one ps or more

    airlock.server.kill()
    airlock.server.start()
    await airlock.server.wait_ready()
    return Crash(tenant, sandbox.id, done.id, ex.id, handle, before)


async def test_no_record_is_lost(airlock: Airlock, crash: Crash) -> None:
    assert await row_counts(airlock, crash.tenant) == crash.rows_before
    async with airlock.http(crash.tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{crash.sandbox_id}")
        assert r.status_code == 200, r.text
        r = await http.get(f"/v1/sandboxes/{crash.sandbox_id}/execs/{crash.finished_id}")
        assert (r.json()["state"], r.json()["stdout"]) == ("finished", "before\n")
        history = (await http.get(f"/v1/sandboxes/{crash.sandbox_id}/execs")).json()["items"]
        assert [e["id"] for e in history][:2] == [crash.finished_id, crash.interrupted_id]


async def test_sandbox_is_usable_after_the_restart(airlock: Airlock, crash: Crash) -> None:
    sandbox = await airlock.get_sandbox(crash.tenant, crash.sandbox_id)
    assert sandbox.state == "running"
    _, ex = await run_exec(crash.tenant.client, crash.sandbox_id, cmd=["echo", "after"])
    assert ex is not None and (ex.exit_code, ex.stdout) == (0, "after\n")


async def test_cut_off_exec_is_interrupted_and_audited(airlock: Airlock, crash: Crash) -> None:
    async with airlock.http(crash.tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{crash.sandbox_id}/execs/{crash.interrupted_id}")
        assert r.status_code == 200, r.text
        assert r.json()["state"] == "interrupted"
        assert r.json()["finished_at"] is not None
    events = [
        e
        for e in await audit_events(airlock, crash.tenant)
        if e["action"] == "exec.interrupted" and e["target"] == crash.interrupted_id
    ]
    assert len(events) == 1


async def test_no_process_of_the_cut_off_exec_is_left(airlock: Airlock, crash: Crash) -> None:
    async def left() -> list[str]:
        state_dir = airlock.server.state_dir
        return runtime_processes(crash.runtime_exec_id) + runtime_processes("sleep 60", state_dir)

    async def gone() -> bool:
        return not await left()

    assert await wait_for(gone), f"still running on the host: {await left()}"
    sandbox = (await airlock.get_sandbox(crash.tenant, crash.sandbox_id)).state
    if sandbox == "running":  # the sandbox outlived the restart: the sleep must not live in it
        _, inside = await run_exec(crash.tenant.client, crash.sandbox_id, cmd=["sh", "-c", PS])
        assert inside is not None
        assert "sleep 60" not in (inside.stdout or ""), inside.stdout


async def test_graceful_stop_mid_exec_then_restart(airlock: Airlock, tenant: Tenant) -> None:
    """SIGTERM (a deploy): the running exec is recorded `interrupted` and its processes end."""
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["sleep", "59"], wait=False, timeout_s=120
    )
    assert ex is not None

    async def runtime_exec_id() -> str | None:
        rows = await airlock.db.fetch("SELECT runtime_exec_id FROM execs WHERE id = $1", ex.id)
        return rows[0]["runtime_exec_id"]

    handle = await wait_for(runtime_exec_id)
    assert handle and await sleeping(tenant, sandbox.id, "sleep 59")

    airlock.server.stop()
    airlock.server.start()
    await airlock.server.wait_ready()

    async with airlock.http(tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{ex.id}")
        assert r.json()["state"] == "interrupted", r.json()

    async def gone() -> bool:
        return not runtime_processes(handle)

    assert await wait_for(gone), f"still running on the host: {runtime_processes(handle)}"
    if (await airlock.get_sandbox(tenant, sandbox.id)).state == "running":
        _, inside = await run_exec(tenant.client, sandbox.id, cmd=["sh", "-c", PS])
        assert inside is not None
        assert "sleep 59" not in (inside.stdout or ""), inside.stdout
