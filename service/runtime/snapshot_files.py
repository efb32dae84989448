"""A snapshot's directory moved between nodes: written out as a tar stream that is the same bytes
every time (sorted names, no times, no owners), so its sha256 names its content, and read back
into a new directory that takes the snapshot's place only once all of it is there.

What is read back came from another node of the same deployment, and is still extracted with
the care an untrusted archive gets: regular files and directories only, nothing outside the
new directory, no modes beyond rw-r--r-- and rwxr-xr-x.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tarfile
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path

CHUNK = 1 << 20
_BLOCK = tarfile.BLOCKSIZE


async def tar_stream(directory: Path) -> AsyncIterator[bytes]:
    """The directory's files as a deterministic tar stream."""
    paths = await asyncio.to_thread(lambda: sorted(directory.rglob("*")))
    for path in paths:
        name = path.relative_to(directory).as_posix()
        info = tarfile.TarInfo(name)
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        if path.is_symlink():
            raise ValueError(f"{path} is a symbolic link: a snapshot holds files only")
        if path.is_dir():
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            yield info.tobuf(format=tarfile.PAX_FORMAT)
            continue
        size = path.stat().st_size
        info.size, info.mode = size, 0o644
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        with path.open("rb") as fh:
            left = size
            while left > 0:
                data = await asyncio.to_thread(fh.read, min(CHUNK, left))
                if not data:
                    raise ValueError(f"{path} shrank while it was sent")
                left -= len(data)
                yield data
        if size % _BLOCK:
            yield b"\0" * (_BLOCK - size % _BLOCK)
    yield b"\0" * (2 * _BLOCK)


async def receive(chunks: AsyncIterable[bytes], into: Path) -> None:
    """Extract a tar stream into the new directory `into` (its parent must exist); `into` exists
    only once the whole stream arrived and extracted. An error in `chunks` (a digest that does
    not match, a broken connection) leaves nothing behind."""
    token = secrets.token_hex(6)
    staging = into.parent / f".incoming-{into.name}-{token}"
    archive = into.parent / f".incoming-{into.name}-{token}.tar"
    try:
        with archive.open("wb") as fh:
            async for chunk in chunks:
                await asyncio.to_thread(fh.write, chunk)
        await asyncio.to_thread(_extract, archive, staging, into)
    finally:
        archive.unlink(missing_ok=True)
        if staging.exists():
            await asyncio.to_thread(shutil.rmtree, staging, True)


def _extract(archive: Path, staging: Path, into: Path) -> None:
    staging.mkdir(mode=0o700)
    with tarfile.open(archive, mode="r:") as tar:
        for member in tar:
            if not (member.isfile() or member.isdir()):
                raise ValueError(f"{member.name}: a snapshot holds files and directories only")
            member.mode = 0o755 if member.isdir() else 0o644
            tar.extract(member, staging, filter="data")
    try:
        os.rename(staging, into)
    except OSError:
        if not into.is_dir():
            raise
        # Another fetch of the same snapshot finished first: its copy stays.
