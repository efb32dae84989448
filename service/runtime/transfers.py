"""File transfers both runtimes make through the sandbox itself (scripts in `files.py`).

The host never resolves a sandbox path: uploads stream into a shell script's stdin, listings
and downloads come out of its stdout, each run as the sandbox's user.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from contextlib import aclosing

from . import files
from .errors import FileTooLarge

TRANSFER_TIMEOUT_S = 3600.0  # file uploads, downloads and copies
LIST_TIMEOUT_S = 120.0
LIST_OUTPUT_CAP = 64 << 20
SCRIPT_OUTPUT_CAP = 64 * 1024  # what an upload's script may say (its errors)


class Counted:
    """An upload's data as chunks, counting the bytes that went by."""

    def __init__(self, data: bytes | AsyncIterable[bytes]) -> None:
        self._data = data
        self.count = 0

    async def chunks(self) -> AsyncIterator[bytes]:
        if isinstance(self._data, bytes | bytearray):
            self.count = len(self._data)
            yield bytes(self._data)
            return
        async for chunk in self._data:
            self.count += len(chunk)
            yield chunk


def write_argv(target: str, mode: int, token: str) -> list[str]:
    """Write stdin to a temporary file beside `target`, then rename it into place."""
    temp = files.upload_temp_name(token)
    return ["/bin/sh", "-c", files.WRITE_SCRIPT, "sh", target, f"{mode:o}", temp]


def list_argv(target: str) -> list[str]:
    return ["/bin/sh", "-c", files.LIST_SCRIPT, "sh", target]


def read_argv(target: str, max_bytes: int | None, script: str = files.READ_SCRIPT) -> list[str]:
    limit = "" if max_bytes is None else str(max_bytes)
    return ["/bin/sh", "-c", script, "sh", target, limit]


async def at_most(chunks: AsyncIterator[bytes], limit: int, path: str) -> AsyncIterator[bytes]:
    """`chunks` while they stay within `limit` bytes, then FileTooLarge. The reader in the
    sandbox stops one byte past the limit, but it is the sandbox's program: this is the cap that
    holds whatever it sends. The chunk that crosses the limit is dropped, never passed on, and
    the source is closed (its process ended) at once."""
    count = 0
    async with aclosing(chunks):
        async for chunk in chunks:
            count += len(chunk)
            if count > limit:
                raise FileTooLarge(path, limit)
            yield chunk
