"""Uploads and downloads over a real HTTP connection (uvicorn on a loopback port), where bodies
arrive in pieces: a chunked upload is streamed into the sandbox, cut off at the tenant's
limit, and an announced oversize body is refused before any of it is sent."""

from __future__ import annotations

import asyncio
import gc
import hashlib
from collections.abc import AsyncIterator

import pytest

from tests.conftest import Api, served_over_tcp
from tests.files.conftest import Box, random_bytes

CHUNK = 64 << 10
MIB = 1 << 20


@pytest.fixture(scope="module")
async def served(files_api: Api) -> AsyncIterator[Api]:
    """A second app on the same database and runtime state dir, served over TCP."""
    async with served_over_tcp(files_api) as api_over_tcp:
        yield api_over_tcp


@pytest.fixture
async def live_box(served: Api) -> AsyncIterator[Box]:
    tenant = await served.tenant(max_upload_mib=1)
    r = await served.client.post(
        "/v1/sandboxes",
        json={"cpus": 1, "memory_mib": 256, "disk_mib": 256, "ttl_s": 900},
        headers=tenant.headers,
    )
    assert r.status_code == 201, r.text
    box = Box(id=r.json()["id"], tenant=tenant, client=served.client)  # type: ignore[arg-type]
    yield box
    await served.client.delete(box.url, headers=tenant.headers)


async def pieces(total: int, seed: hashlib._Hash) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        piece = random_bytes(min(CHUNK, total - sent))
        seed.update(piece)
        sent += len(piece)
        yield piece


async def test_chunked_upload_streams_in_and_downloads_intact(live_box: Box) -> None:
    sent = hashlib.sha256()
    r = await live_box.put("/work/streamed.bin", pieces(MIB - 1, sent))
    assert r.status_code == 201, r.text
    assert r.json()["size"] == MIB - 1

    got = hashlib.sha256()
    url = f"{live_box.url}/files/work/streamed.bin"
    async with live_box.client.stream("GET", url, headers=live_box.tenant.headers) as r:
        assert r.status_code == 200
        async for chunk in r.aiter_bytes():
            got.update(chunk)
    assert got.hexdigest() == sent.hexdigest()


async def test_chunked_upload_over_the_limit_is_cut_off_midway(live_box: Box) -> None:
    assert (await live_box.put("/work/keep.txt", b"original")).status_code == 201
    r = await live_box.put("/work/keep.txt", pieces(3 * MIB, hashlib.sha256()))
    assert r.status_code == 413, r.text
    assert r.json()["code"] == "payload_too_large"
    assert (await live_box.get("/work/keep.txt")).content == b"original"
    names = set(await live_box.listing())
    assert names == {"keep.txt"}, names

    r = await live_box.client.get(
        "/v1/audit", params={"action": "file.write"}, headers=live_box.tenant.headers
    )
    latest = r.json()["items"][0]
    assert latest["outcome"] == "failed"
    assert latest["details"]["error"] == "PayloadTooLarge"
    assert MIB < latest["details"]["bytes"] < 3 * MIB  # stopped reading soon after the limit


async def test_announced_oversize_body_is_refused_before_it_is_sent(
    served: Api, live_box: Box
) -> None:
    host, port = str(served.client.base_url.host), served.client.base_url.port
    reader, writer = await asyncio.open_connection(host, port)
    request = (
        f"PUT {live_box.url}/files/work/huge.bin HTTP/1.1\r\n"
        f"Host: {host}\r\n"
        f"Authorization: Bearer {live_box.tenant.key}\r\n"
        f"Content-Length: {10 << 30}\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), 30)  # no body was sent at all
    writer.close()
    assert status.startswith(b"HTTP/1.1 413"), status
    assert "huge.bin" not in await live_box.listing()


async def test_a_download_abandoned_midway_leaves_no_temporary_archive(live_box: Box) -> None:
    """The clean-up must not wait for the garbage collector: it is off for the whole test."""
    ran = await live_box.sh(
        "mkdir -p /work/big && head -c 8000000 /dev/urandom > /work/big/noise.bin"
    )
    assert ran["exit_code"] == 0, ran
    url = f"{live_box.url}/archive"
    params = {"dir": "/work/big"}
    gc.disable()
    try:
        async with live_box.client.stream(
            "GET", url, params=params, headers=live_box.tenant.headers
        ) as r:
            assert r.status_code == 200
            async for _chunk in r.aiter_raw():
                break  # the client goes away after the first piece
        for _ in range(300):  # the removal is an exec in the sandbox: slower on a busy host
            names = set(await live_box.listing())
            if names == {"big"}:
                break
            await asyncio.sleep(0.1)
    finally:
        gc.enable()
    assert names == {"big"}, names
