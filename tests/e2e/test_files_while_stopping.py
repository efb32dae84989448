"""A file read under way when its sandbox is deleted (or expires) answers what happened to the
sandbox, a 409 naming its state, never a 500: the read waits on a pipe no one writes, so it is
still open when the sandbox goes."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.conftest import Airlock, Tenant, run_exec


@pytest.mark.parametrize("max_bytes", [None, 1024], ids=["streamed", "whole"])
async def test_a_read_cut_by_the_sandboxs_delete_is_a_409(
    airlock: Airlock, tenant: Tenant, max_bytes: int | None
) -> None:
    box = await airlock.sandbox(tenant)
    _, made = await run_exec(tenant.client, box.id, cmd=["mkfifo", "/work/pipe"])
    assert made is not None and made.exit_code == 0, made
    params = {} if max_bytes is None else {"max_bytes": max_bytes}
    async with airlock.http(tenant.key) as http:
        read = asyncio.create_task(
            http.get(f"/v1/sandboxes/{box.id}/files/work/pipe", params=params)
        )
        await asyncio.sleep(2)
        assert not read.done(), "the read ended before the delete: the check below proves nothing"
        assert (await http.delete(f"/v1/sandboxes/{box.id}")).status_code == 204
        answer = await asyncio.wait_for(read, 60)
    assert answer.status_code == 409, answer.text
    problem = answer.json()
    assert problem["code"] == "sandbox_not_running", problem
    assert problem["state"] in ("stopping", "stopped"), problem
