"""`AsyncSandbox` takes what `Sandbox` takes, against a real server on gVisor: an output cap on a
started exec, the exec's record, a listing by state, a directory download's size."""

from __future__ import annotations

from pathlib import Path

from airlock_sdk import AsyncSandbox

from tests.e2e.conftest import Airlock, Tenant


async def test_async_sandbox_is_level_with_the_sync_one(
    airlock: Airlock, tenant: Tenant, tmp_path: Path
) -> None:
    url, key = airlock.server.url, tenant.key
    box = await airlock.sandbox(tenant)
    sandbox = await AsyncSandbox.connect(box.id, url=url, api_key=key)
    try:
        exec_id = await sandbox.start("head -c 3000 /dev/zero | tr '\\0' x", max_output_bytes=1000)
        events = [e async for e in sandbox.events(exec_id)]
        assert "".join(e.text for e in events if e.kind == "stdout") == "x" * 1000
        assert events[-1].exit["stdout_truncated"] is True, events[-1]
        record = await sandbox.exec_record(exec_id)
        assert record.stdout == "x" * 1000 and record.stdout_truncated, record

        running = await AsyncSandbox.list(url=url, api_key=key, states=["running"])
        stopped = await AsyncSandbox.list(url=url, api_key=key, states=["stopped"])
        assert box.id in [s.id for s in running] and box.id not in [s.id for s in stopped]

        await sandbox.files.write("tree/a.txt", "a" * 5000)
        size = await sandbox.files.download_dir("/work/tree", tmp_path / "down")
        assert isinstance(size, int) and size > 5000, size
        assert (tmp_path / "down" / "a.txt").read_text() == "a" * 5000
    finally:
        await sandbox.close()
