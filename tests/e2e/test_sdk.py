"""The SDK (`airlock_sdk`) against a real server on gVisor: a whole round trip, sync and async,
as an agent would make it: create, upload a directory, run, stream, download, delete."""

from __future__ import annotations

import asyncio
import filecmp
import os
from pathlib import Path

import pytest
from airlock_sdk import AsyncSandbox, Sandbox, errors

from tests.e2e.conftest import Airlock, Tenant

# Prints one line a tenth of a second apart, so the output arrives as several events.
COUNTER = "import time\nfor i in range(5):\n    print('tick', i, flush=True)\n    time.sleep(0.1)\n"


def project(root: Path) -> Path:
    """A small directory tree with text, binary and nested files."""
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "main.py").write_text(
        "import json, pathlib\n"
        "data = pathlib.Path('pkg/deep/blob.bin').read_bytes()\n"
        "pathlib.Path('out').mkdir(exist_ok=True)\n"
        "pathlib.Path('out/result.json').write_text(json.dumps({'n': len(data)}))\n"
        "pathlib.Path('out/copy.bin').write_bytes(data[::-1])\n"
        "print('bytes', len(data))\n"
    )
    (root / "pkg" / "deep" / "blob.bin").write_bytes(os.urandom(200_000))
    (root / "pkg" / "notes.txt").write_text("ünïcödé\n" * 100)
    (root / "counter.py").write_text(COUNTER)
    return root


def same_tree(a: Path, b: Path) -> bool:
    left = sorted(p.relative_to(a) for p in a.rglob("*"))
    right = sorted(p.relative_to(b) for p in b.rglob("*"))
    if left != right:
        return False
    files = [str(p) for p in left if (a / p).is_file()]
    match, mismatch, errs = filecmp.cmpfiles(a, b, files, shallow=False)
    return not mismatch and not errs and len(match) == len(files)


def sync_round_trip(url: str, key: str, tmp: Path) -> str:
    local = project(tmp / "up")
    with Sandbox.create(ttl=600, url=url, api_key=key) as sandbox:
        assert sandbox.state == "running"
        assert sandbox.files.upload_dir(local, "/work/proj") > 200_000

        # A plain run: the whole result, exit code as data.
        done = sandbox.run(["python3", "main.py"], cwd="/work/proj")
        assert done.ok and done.stdout == "bytes 200000\n", done
        failed = sandbox.run("echo oops >&2; exit 3")
        assert (failed.exit_code, failed.outcome, failed.stderr) == (3, "exited", "oops\n")

        # Streaming: the callback sees the output in pieces as it is written.
        pieces: list[str] = []
        streamed = sandbox.run(["python3", "counter.py"], cwd="/work/proj", on_stdout=pieces.append)
        assert streamed.ok and streamed.stdout == "".join(f"tick {i}\n" for i in range(5))
        assert "".join(pieces) == streamed.stdout and len(pieces) >= 2, pieces
        kinds = [e.kind for e in sandbox.stream("echo out; echo err >&2")]
        assert sorted(kinds[:-1]) == ["stderr", "stdout"] and kinds[-1] == "exit"

        # Files one by one, and the directory back as it is now.
        assert sandbox.files.write("notes/a.txt", "hello") == 5
        assert sandbox.files.read("/work/notes/a.txt") == b"hello"
        names = {f.name for f in sandbox.files.list("/work/proj")}
        assert {"main.py", "pkg", "out", "counter.py"} <= names
        sandbox.files.download_dir("/work/proj", tmp / "down")
        assert (tmp / "down" / "out" / "copy.bin").read_bytes() == (
            local / "pkg" / "deep" / "blob.bin"
        ).read_bytes()[::-1]
        for name in ("out", "out/result.json", "out/copy.bin"):  # made in the sandbox
            assert (tmp / "down" / name).exists()
        assert same_tree(local / "pkg", tmp / "down" / "pkg")

        # A token bound to this sandbox works here and nowhere else.
        token = sandbox.token()
        with Sandbox.connect(sandbox.id, url=url, api_key=token) as agent:
            assert agent.run("echo as agent").stdout == "as agent\n"
            assert [e.id for e in agent.history()][:1] == [agent.history()[0].id]
        sandbox_id = sandbox.id
    return sandbox_id


async def test_sync_round_trip(airlock: Airlock, tenant: Tenant, tmp_path: Path) -> None:
    sandbox_id = await asyncio.to_thread(sync_round_trip, airlock.server.url, tenant.key, tmp_path)
    # Leaving the `with` block deleted it.
    async with airlock.http(tenant.key) as http:
        assert (await http.get(f"/v1/sandboxes/{sandbox_id}")).json()["state"] == "stopped"


async def test_async_round_trip(airlock: Airlock, tenant: Tenant, tmp_path: Path) -> None:
    local = project(tmp_path / "up")
    url, key = airlock.server.url, tenant.key
    async with await AsyncSandbox.create(ttl=600, url=url, api_key=key) as sandbox:
        await sandbox.files.upload_dir(local, "/work/proj")
        done = await sandbox.run("cd /work/proj && python3 main.py")
        assert done.ok and done.stdout == "bytes 200000\n", done
        pieces: list[str] = []
        streamed = await sandbox.run(["python3", "/work/proj/counter.py"], on_stdout=pieces.append)
        assert "".join(pieces) == streamed.stdout == "".join(f"tick {i}\n" for i in range(5))
        events = [e async for e in sandbox.stream(["sh", "-c", "echo a; exit 4"])]
        assert events[-1].kind == "exit" and events[-1].exit["exit_code"] == 4
        blob = local / "pkg" / "deep" / "blob.bin"
        assert await sandbox.files.upload(blob, "/work/blob2.bin") == blob.stat().st_size
        assert await sandbox.files.download("blob2.bin", tmp_path / "blob2") == blob.stat().st_size
        assert (tmp_path / "blob2").read_bytes() == blob.read_bytes()
        await sandbox.files.write("x/y.txt", b"\x00\x01binary")
        assert await sandbox.files.read("x/y.txt") == b"\x00\x01binary"
        await sandbox.files.download_dir("/work/proj", tmp_path / "down")
        assert same_tree(local / "pkg", tmp_path / "down" / "pkg")
        assert (tmp_path / "down" / "out" / "result.json").read_text() == '{"n": 200000}'
        sandbox_id = sandbox.id
    again = await AsyncSandbox.connect(sandbox_id, url=url, api_key=key)
    try:
        assert again.state == "stopped"
    finally:
        await again.close()


async def test_errors_are_typed_by_their_code(airlock: Airlock, tenant: Tenant) -> None:
    url, key = airlock.server.url, tenant.key
    with pytest.raises(errors.NotFound) as missing:
        await AsyncSandbox.connect("sbx_does_not_exist", url=url, api_key=key)
    assert missing.value.status == 404 and missing.value.code == "not_found"
    with pytest.raises(errors.Unauthenticated):
        await AsyncSandbox.create(url=url, api_key="alk_not_a_real_key_at_all_000000000000")
    with pytest.raises(errors.ValidationFailed) as bad:
        await AsyncSandbox.create(url=url, api_key=key, size="enormous")
    assert bad.value.status in (400, 422)

    sandbox = await AsyncSandbox.create(url=url, api_key=key, ttl=600)
    tenant.sandboxes.append(sandbox.id)
    try:
        # A token without `exec` is refused with the scope it lacks.
        reader = await sandbox.token(scopes=["sandboxes:read"])
        limited = await AsyncSandbox.connect(sandbox.id, url=url, api_key=reader)
        try:
            with pytest.raises(errors.MissingScope):
                await limited.run("true")
        finally:
            await limited.close()
        await sandbox.delete()
        with pytest.raises(errors.SandboxNotRunning):
            await sandbox.run("true")
    finally:
        await sandbox.close()


async def test_a_create_retried_after_a_lost_answer_makes_one_sandbox(
    airlock: Airlock, tenant: Tenant
) -> None:
    """The SDK sends one Idempotency-Key per create: sent twice, one sandbox comes of it."""
    url, key = airlock.server.url, tenant.key
    first = await AsyncSandbox.create(url=url, api_key=key, ttl=600, idempotency_key="sdk-once")
    second = await AsyncSandbox.create(url=url, api_key=key, ttl=600, idempotency_key="sdk-once")
    tenant.sandboxes.append(first.id)
    try:
        assert first.id == second.id
    finally:
        await first.close()
        await second.close()
