"""Files in and out of BoxLite boxes through exec stdin/stdout, never BoxLite's
`copy_in`/`copy_out` (they refuse paths under guest mounts such as `/tmp`). The scripts are
the ones gVisor runs (`service/runtime/files.py`); downloads travel as base64 lines, since
BoxLite's output streams are text lines."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
from collections.abc import AsyncIterable, AsyncIterator

from .. import files as scripts
from .. import transfers
from ..paths import sandbox_path
from ..types import HELPER_PATH, ExecRequest, FileEntry
from .execs import Execs


class Files(Execs):
    async def write_file(
        self,
        sandbox_id: str,
        path: str,
        data: bytes | AsyncIterable[bytes],
        *,
        mode: int = 0o644,
        user: str | None = None,
    ) -> int:
        target = sandbox_path(path)
        upload = transfers.Counted(data)
        argv = transfers.write_argv(target, mode, secrets.token_hex(8))
        request = ExecRequest(
            argv=argv,
            cwd="/",
            user=user,
            timeout_s=transfers.TRANSFER_TIMEOUT_S,
            output_cap=transfers.SCRIPT_OUTPUT_CAP,
            helper=True,
        )
        execution = await self._start(sandbox_id, request, upload.chunks())
        result = await execution.wait()
        if execution.feed_error is not None:
            raise execution.feed_error
        scripts.raise_for(result.exit_code, target, result.stderr)
        return upload.count

    async def read_file(
        self, sandbox_id: str, path: str, *, user: str | None = None, max_bytes: int | None = None
    ) -> AsyncIterator[bytes]:
        chunks = self._read(sandbox_id, path, user, max_bytes)
        if max_bytes is not None:
            chunks = transfers.at_most(chunks, max_bytes, sandbox_path(path))
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                yield chunk

    async def _read(
        self, sandbox_id: str, path: str, user: str | None, max_bytes: int | None
    ) -> AsyncIterator[bytes]:
        # BoxLite streams output as text lines: the bytes travel as base64 (76-column lines,
        # so any run of whole lines decodes on its own).
        target = sandbox_path(path)
        sandbox = self._sandbox(sandbox_id)
        sandbox.starting += 1
        try:
            native = await self._native_exec(
                sandbox,
                transfers.read_argv(target, max_bytes, scripts.READ_BASE64_SCRIPT),
                {"PATH": HELPER_PATH},
                user or sandbox.info.spec.user,
                3600,
                "/",
            )
            errors = bytearray()

            async def collect_errors() -> None:
                async for line in native.stderr():
                    if len(errors) < 65536:
                        errors.extend(line.encode() if isinstance(line, str) else line)

            error_task = asyncio.create_task(collect_errors())
            pending = ""
            try:
                async for line in native.stdout():
                    pending += line if isinstance(line, str) else line.decode()
                    complete, _, pending = pending.rpartition("\n")
                    if complete:
                        yield base64.b64decode("".join(complete.split()))
                if pending.strip():
                    yield base64.b64decode(pending.strip())
                result = await native.wait()
                await asyncio.wait({error_task}, timeout=1.0)
                scripts.raise_for_read(result.exit_code, target, bytes(errors), max_bytes)
            finally:
                error_task.cancel()
        finally:
            sandbox.starting -= 1

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]:
        target = sandbox_path(path)
        request = ExecRequest(
            argv=transfers.list_argv(target),
            cwd="/",
            user=user,
            timeout_s=transfers.LIST_TIMEOUT_S,
            output_cap=transfers.LIST_OUTPUT_CAP,
            helper=True,
        )
        result = await self.run(sandbox_id, request)
        scripts.raise_for(result.exit_code, target, result.stderr)
        return scripts.parse_listing(result.stdout)
