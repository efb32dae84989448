"""Files move through the sandbox itself; paths are checked; symlinks resolve inside."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from service.runtime import (
    FileTooLarge,
    InvalidPath,
    PathNotAllowed,
    PathNotFound,
    SandboxInfo,
    SandboxRuntime,
)
from service.runtime.paths import sandbox_path

from .helpers import sh


async def read_all(
    runtime: SandboxRuntime, sandbox_id: str, path: str, max_bytes: int | None = None
) -> bytes:
    chunks = runtime.read_file(sandbox_id, path, max_bytes=max_bytes)
    return b"".join([chunk async for chunk in chunks])


async def test_five_mib_round_trip(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    payload = os.urandom(5 << 20)
    written = await runtime.write_file(sandbox.id, "data/blob.bin", payload)
    assert written == len(payload)
    inside = await sh(runtime, sandbox.id, "sha256sum /work/data/blob.bin")
    assert inside.stdout.split()[0].decode() == hashlib.sha256(payload).hexdigest()
    assert await read_all(runtime, sandbox.id, "/work/data/blob.bin") == payload


async def test_streamed_upload(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(64):
            yield bytes([i]) * 4096

    assert await runtime.write_file(sandbox.id, "streamed", chunks(), mode=0o600) == 64 * 4096
    listing = {e.name: e for e in await runtime.list_files(sandbox.id, "/work")}
    assert listing["streamed"].kind == "file"
    assert listing["streamed"].size == 64 * 4096
    assert listing["streamed"].mode == 0o600
    owner = await sh(runtime, sandbox.id, "stat -c %u:%g /work/streamed")
    assert owner.stdout == b"1000:1000\n"


async def test_list_files(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    await sh(
        runtime, sandbox.id, "mkdir -p /work/d/sub && echo hi > /work/d/f && ln -s f /work/d/l"
    )
    entries = await runtime.list_files(sandbox.id, "d")
    assert [(e.name, e.kind) for e in entries] == [("f", "file"), ("l", "symlink"), ("sub", "dir")]
    with pytest.raises(PathNotFound):
        await runtime.list_files(sandbox.id, "/work/missing")
    with pytest.raises(PathNotAllowed):
        await runtime.list_files(sandbox.id, "/work/d/f")


async def test_missing_file_is_a_typed_error(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    with pytest.raises(PathNotFound):
        await read_all(runtime, sandbox.id, "nope.txt")
    with pytest.raises(PathNotAllowed):
        await read_all(runtime, sandbox.id, "/work")


async def test_permissions_apply_inside(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    with pytest.raises(PathNotAllowed):
        await runtime.write_file(sandbox.id, "/etc/planted", b"x")
    with pytest.raises(PathNotAllowed):
        await read_all(runtime, sandbox.id, "/etc/shadow")
    # root inside may read it, and it is the image's file, not the host's
    shadow = b"".join([c async for c in runtime.read_file(sandbox.id, "/etc/shadow", user="0")])
    assert b"sandbox:" in shadow


@pytest.mark.parametrize(
    "bad",
    ["../etc/passwd", "/work/../etc/passwd", "a/../../b", "./x", "a//b", "", "x\x00y", "a\\b"],
)
async def test_path_tricks_are_rejected(
    runtime: SandboxRuntime, sandbox: SandboxInfo, bad: str
) -> None:
    with pytest.raises(InvalidPath):
        await runtime.write_file(sandbox.id, bad, b"x")
    with pytest.raises(InvalidPath):
        await read_all(runtime, sandbox.id, bad)
    with pytest.raises(InvalidPath):
        await runtime.list_files(sandbox.id, bad)


def test_sandbox_path_normalises() -> None:
    assert sandbox_path("x/y") == "/work/x/y"
    assert sandbox_path("/tmp/x") == "/tmp/x"
    assert sandbox_path("/work/") == "/work"
    assert sandbox_path("/") == "/"


async def test_symlink_cannot_reach_host_files(
    runtime: SandboxRuntime, sandbox: SandboxInfo, tmp_path: Path
) -> None:
    marker = tmp_path / "host-only.txt"
    marker.write_text("host secret")
    await sh(runtime, sandbox.id, f"ln -s {marker} /work/to-host; ln -s /etc/hostname /work/h")
    with pytest.raises(PathNotFound):
        await read_all(runtime, sandbox.id, "to-host")
    # a link to a path that exists on both sides reads the sandbox's copy
    inside = await read_all(runtime, sandbox.id, "h")
    assert inside == (await sh(runtime, sandbox.id, "cat /etc/hostname")).stdout
    # writing over a planted link replaces the link inside the sandbox; the host is untouched
    await sh(runtime, sandbox.id, f"ln -s {tmp_path}/written /work/out")
    await runtime.write_file(sandbox.id, "out", b"escape?")
    assert not (tmp_path / "written").exists()
    assert await read_all(runtime, sandbox.id, "out") == b"escape?"


async def test_failed_upload_leaves_no_partial_file(
    runtime: SandboxRuntime, sandbox: SandboxInfo
) -> None:
    await runtime.write_file(sandbox.id, "kept", b"old content")

    async def broken() -> AsyncIterator[bytes]:
        yield b"partial " * 1000
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        await runtime.write_file(sandbox.id, "kept", broken())
    assert await read_all(runtime, sandbox.id, "kept") == b"old content"
    listing = await runtime.list_files(sandbox.id, "/work")
    assert [e.name for e in listing] == ["kept"]


async def test_a_capped_read_stops_at_the_cap_whatever_the_path_is(
    runtime: SandboxRuntime, sandbox: SandboxInfo
) -> None:
    await sh(
        runtime,
        sandbox.id,
        "head -c 5000 /dev/zero > /tmp/big && ln -s /tmp/big /work/link && "
        "ln -s /dev/zero /work/zero && echo small > /work/small",
    )
    # A link is refused by its target's own size, before anything is read.
    with pytest.raises(FileTooLarge) as by_size:
        await read_all(runtime, sandbox.id, "link", max_bytes=4096)
    assert (by_size.value.size, by_size.value.limit) == (5000, 4096)
    assert await read_all(runtime, sandbox.id, "link", max_bytes=5000) == bytes(5000)
    # A device has no size to refuse by: the read stops one byte past the cap.
    with pytest.raises(FileTooLarge) as endless:
        await read_all(runtime, sandbox.id, "zero", max_bytes=4096)
    assert endless.value.size is None
    # Root in the sandbox puts a reader that never stops first on the helpers' PATH: the
    # host's own count still ends the read, and passes nothing on past the cap.
    fake = "printf '#!/bin/sh\\nexec cat /dev/zero\\n' > /usr/sbin/head && chmod 755 /usr/sbin/head"
    assert (await sh(runtime, sandbox.id, fake, user="0")).exit_code == 0
    passed = 0
    with pytest.raises(FileTooLarge):
        async for chunk in runtime.read_file(sandbox.id, "small", max_bytes=4096):
            passed += len(chunk)
    assert passed <= 4096
