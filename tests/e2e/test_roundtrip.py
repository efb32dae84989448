"""A sandbox's life through the generated client: create, exec, upload, download, list files,
exec history, delete."""

from __future__ import annotations

import hashlib
import secrets

from airlock_client.api.execs import get_exec, list_execs
from airlock_client.api.files import download_file, list_files, upload_file
from airlock_client.api.sandboxes import delete_sandbox, list_sandbox_transitions
from airlock_client.types import File

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

    # Files in and out: the program reads what was uploaded and writes what is downloaded.
    payload = secrets.token_bytes(3000) + b"\x00\xff end"
    up = await upload_file.asyncio_detailed(
        sandbox.id, "/work/in/data.bin", client=tenant.client, body=File(payload=payload)
    )
    assert up.status_code == 201, up.content
    assert up.parsed is not None and (up.parsed.path, up.parsed.size) == (
        "/work/in/data.bin",
        len(payload),
    )
    _, digest = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=[
            "python3",
            "-c",
            "import hashlib; d = open('in/data.bin', 'rb').read(); "
            "open('out.txt', 'w').write(hashlib.sha256(d).hexdigest())",
        ],
    )
    assert digest is not None and digest.exit_code == 0, digest
    down = await download_file.asyncio_detailed(sandbox.id, "/work/out.txt", client=tenant.client)
    assert down.status_code == 200
    assert down.content.decode() == hashlib.sha256(payload).hexdigest()
    back = await download_file.asyncio_detailed(
        sandbox.id, "/work/in/data.bin", client=tenant.client
    )
    assert back.status_code == 200 and back.content == payload
    listed = await list_files.asyncio(sandbox.id, client=tenant.client, dir_="/work")
    assert listed is not None
    assert {(f.name, f.kind) for f in listed.items} == {("in", "dir"), ("out.txt", "file")}
    missing = await download_file.asyncio_detailed(
        sandbox.id, "/work/nope.txt", client=tenant.client
    )
    assert missing.status_code == 404

    got = await get_exec.asyncio(sandbox.id, ran.id, client=tenant.client)
    assert got is not None and got.stdout == "hello from 42\n"

    history = await list_execs.asyncio(sandbox.id, client=tenant.client)
    assert history is not None
    assert [(e.id, e.exit_code) for e in history.items] == [
        (ran.id, 0),
        (failed.id, 1),
        (digest.id, 0),
    ]
    assert history.items[0].cmd == ["python3", "-c", "print('hello from', 6 * 7)"]

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


async def test_file_names_that_need_quoting(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    for path in ("/work/with space.txt", "/work/café/ünï.txt", "/work/a%2Fb", "/tmp/q?x=1#y"):
        body = path.encode() * 3
        up = await upload_file.asyncio_detailed(
            sandbox.id, path, client=tenant.client, body=File(payload=body)
        )
        assert up.status_code == 201, (path, up.content)
        assert up.parsed is not None and up.parsed.path == path
        down = await download_file.asyncio_detailed(sandbox.id, path, client=tenant.client)
        assert (down.status_code, down.content) == (200, body), path
    _, ls = await run_exec(tenant.client, sandbox.id, cmd=["ls", "/work", "/work/café"])
    assert ls is not None
    assert ls.stdout.split("\n").count("with space.txt") == 1
    assert "ünï.txt" in ls.stdout and "a%2Fb" in ls.stdout
