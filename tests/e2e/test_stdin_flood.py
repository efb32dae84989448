"""Stdin written to an exec is held in the API only up to a cap counted in bytes: a flood of
1 MiB writes into a process that never reads is refused (429 `stdin_full`) once the cap is
reached, instead of being buffered; a refused write is refused whole."""

from __future__ import annotations

import asyncio

import httpx

from tests.e2e.conftest import Airlock, Tenant, run_exec

MIB = 1 << 20


async def start_reading_later(airlock: Airlock, tenant: Tenant, script: str) -> tuple[str, str]:
    box = await airlock.sandbox(tenant)
    _, started = await run_exec(
        tenant.client,
        box.id,
        expect=202,
        cmd=["sh", "-c", script],
        stdin_open=True,
        wait=False,
        timeout_s=120,
    )
    assert started is not None
    return box.id, started.id


async def write(http: httpx.AsyncClient, url: str, data: bytes, close: bool = False) -> int:
    answer = await http.post(url, content=data, params={"close": "true"} if close else None)
    if answer.status_code == 429:
        problem = answer.json()
        assert problem["code"] == "stdin_full", problem
        assert problem["limit_bytes"] == MIB and answer.headers["retry-after"] == "1", problem
    else:
        assert answer.status_code == 200, answer.text
    return answer.status_code


async def test_stdin_flood_into_a_process_that_never_reads_is_refused_past_one_mib(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox_id, exec_id = await start_reading_later(airlock, tenant, "sleep 60")
    url = f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}/stdin"
    accepted = 0
    async with airlock.http(tenant.key) as http:
        # Two writers at once, as a flood would: one may wait for room, the other is told at
        # once; neither is taken once the cap is held.
        for _ in range(8):
            answers = await asyncio.gather(*(write(http, url, b"x" * MIB) for _ in range(2)))
            accepted += MIB * answers.count(200)
            if 429 in answers:
                break
        assert 429 in answers, f"{accepted} bytes accepted for a process that never reads"
        # What the sandbox took in (the process's 1 MiB pipe, the exec agent's 1 MiB window)
        # and the API's 1 MiB at most.
        assert accepted <= 3 * MIB, accepted
        again = await write(http, url, b"y")
        assert again == 429


async def test_a_refused_stdin_write_is_not_half_written(airlock: Airlock, tenant: Tenant) -> None:
    # Reads nothing until the writes have waited longer than the API waits for room (10 s),
    # then counts every byte it was given.
    sandbox_id, exec_id = await start_reading_later(airlock, tenant, "sleep 14; exec wc -c")
    url = f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}/stdin"
    async with airlock.http(tenant.key) as http:
        accepted = 0
        for _ in range(8):
            if await write(http, url, b"z" * MIB) == 429:
                break
            accepted += MIB
        else:
            raise AssertionError(f"{accepted} bytes accepted for a process that does not read")
        # Once the process reads, writes are taken again; the refused one never arrives.
        for _ in range(60):
            if await write(http, url, b"", close=True) == 200:
                break
            await asyncio.sleep(0.5)
        done = await http.get(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}")
        for _ in range(120):
            if done.json()["state"] != "running":
                break
            await asyncio.sleep(0.25)
            done = await http.get(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}")
    assert done.json()["exit_code"] == 0, done.json()
    assert int(done.json()["stdout"].strip()) == accepted, (done.json()["stdout"], accepted)
