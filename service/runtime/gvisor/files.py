"""Files in and out of gVisor sandboxes, and between two of them, through the sandbox itself.

The scripts (`service/runtime/files.py`) run inside as the sandbox's user; uploads stream
into their stdin, downloads out of their stdout (through the agent where it answers), so the
host never resolves a sandbox path.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass

from .. import files as scripts
from .. import transfers
from ..errors import InvalidSpec, SandboxRuntimeError
from ..paths import sandbox_path
from ..specs import parse_user
from ..types import FileEntry
from . import bundle
from .agent_execution import AgentExecution
from .agent_link import AgentLost
from .core import HELPER_ENV, TRANSFER_TIMEOUT_S
from .execs import Execs
from .store import Sandbox, Store

# What a sandbox wrote in its work, home and scratch directories; `copy_files` moves it with
# tar inside both sandboxes. The directories themselves are not in the archive, so the
# target's keep their owner and mode, and neither is the image's empty file that keeps /tmp
# on the sandbox's disk (bundle.TMP_KEEP: root's, in a sticky directory, it cannot be
# replaced by the sandbox's user).
PACK_SCRIPT = rf"""
cd / || exit 1
for d in work home/sandbox tmp var/tmp; do
  [ -d "$d" ] && find "$d" -mindepth 1 -maxdepth 1 ! -path tmp/{bundle.TMP_KEEP} -print0
done | tar -cf - --null -T -
"""
# tar stops reading at the archive's end marker; the rest is read too, so the source's tar is
# always read to its end and its exit status (a file it could not read) is never missed.
UNPACK_SCRIPT = "cd / && tar -xpf - --no-overwrite-dir && exec cat >/dev/null"

Finish = Callable[[int | None, bytes], None]


@dataclass
class Files:
    """Files of the store's sandboxes, moved by scripts run inside them through `execs`."""

    store: Store
    execs: Execs

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
        sandbox = await self.store.ready(sandbox_id)
        if not 0 <= mode <= 0o7777:
            raise InvalidSpec("mode must be between 0 and 0o7777")
        upload = transfers.Counted(data)
        token = secrets.token_hex(8)
        execution = await self.execs.start_exec(
            sandbox,
            transfers.write_argv(target, mode, token),
            user=user,
            stdin=upload.chunks(),
            timeout_s=TRANSFER_TIMEOUT_S,
            output_cap=transfers.SCRIPT_OUTPUT_CAP,
            helper=True,
        )
        result = await execution.wait()
        if execution.feed_error is not None or result.outcome != "exited":
            with contextlib.suppress(SandboxRuntimeError):
                cleanup = await self.execs.start_exec(
                    sandbox,
                    ["rm", "-f", "--", scripts.upload_temp_path(target, token)],
                    user=user,
                    helper=True,
                )
                await cleanup.wait()
        if execution.feed_error is not None:
            raise execution.feed_error
        scripts.raise_for(result.exit_code, target, result.stderr)
        return upload.count

    async def read_file(
        self, sandbox_id: str, path: str, *, user: str | None = None, max_bytes: int | None = None
    ) -> AsyncIterator[bytes]:
        target = sandbox_path(path)
        sandbox = await self.store.ready(sandbox_id)

        def finish(code: int | None, errors: bytes) -> None:
            scripts.raise_for_read(code, target, errors, max_bytes)

        argv = transfers.read_argv(target, max_bytes)
        chunks = self._stream_out(sandbox, argv, user, repr(target), finish)
        if max_bytes is not None:
            chunks = transfers.at_most(chunks, max_bytes, target)
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                yield chunk

    async def list_files(
        self, sandbox_id: str, path: str, *, user: str | None = None
    ) -> list[FileEntry]:
        target = sandbox_path(path)
        sandbox = await self.store.ready(sandbox_id)
        execution = await self.execs.start_exec(
            sandbox,
            transfers.list_argv(target),
            user=user,
            timeout_s=transfers.LIST_TIMEOUT_S,
            output_cap=transfers.LIST_OUTPUT_CAP,
            helper=True,
        )
        result = await execution.wait()
        scripts.raise_for(result.exit_code, target, result.stderr)
        if result.stdout_truncated:
            raise SandboxRuntimeError(f"directory listing of {target!r} is too large")
        return scripts.parse_listing(result.stdout)

    async def copy_files(self, source_id: str, target_id: str) -> int:
        """Copy what the source sandbox wrote into the target: everything under its work,
        home and scratch directories (PACK_SCRIPT), streamed from a `tar` in one into a `tar`
        in the other, each as its sandbox's user. The host only passes bytes along; it never opens
        the archive. Returns the bytes moved; SandboxRuntimeError with tar's words if either
        end fails. Processes and memory are not carried, only files."""
        source = await self.store.ready(source_id)
        target = await self.store.ready(target_id)

        def finish(code: int | None, errors: bytes) -> None:
            if code != 0:
                text = errors.decode(errors="replace").strip()[-400:]
                raise SandboxRuntimeError(f"packing the files of {source_id} failed: {text}")

        moved = 0

        async def packed() -> AsyncIterator[bytes]:
            nonlocal moved
            argv = ["/bin/sh", "-c", PACK_SCRIPT]
            async for chunk in self._stream_out(source, argv, None, "the packed files", finish):
                moved += len(chunk)
                yield chunk

        execution = await self.execs.start_exec(
            target,
            ["/bin/sh", "-c", UNPACK_SCRIPT],
            stdin=packed(),
            timeout_s=TRANSFER_TIMEOUT_S,
            helper=True,
        )
        result = await execution.wait()
        if execution.feed_error is not None:
            raise execution.feed_error
        if result.outcome != "exited" or result.exit_code != 0:
            text = result.stderr.decode(errors="replace").strip()[-400:]
            raise SandboxRuntimeError(
                f"unpacking files into {target_id} ended {result.outcome} "
                f"{result.exit_code}: {text}"
            )
        return moved

    async def _stream_out(
        self, sandbox: Sandbox, argv: list[str], user: str | None, what: str, finish: Finish
    ) -> AsyncIterator[bytes]:
        """The stdout of `argv` run in the sandbox, as it comes; `finish(exit code, stderr)`
        raises for a failed end once the output is read."""
        uid, gid = parse_user(user or sandbox.spec.user)
        process = bundle.exec_process(argv=argv, cwd="/", env=HELPER_ENV, uid=uid, gid=gid)
        if sandbox.agent is not None:
            try:
                execution = await self.execs.agent_exec(
                    sandbox,
                    process,
                    stdin=None,
                    timeout_s=TRANSFER_TIMEOUT_S,
                    output_cap=0,
                    requested=time.monotonic(),
                    stream=True,
                )
            except AgentLost:
                pass
            else:
                async for chunk in _read_through_agent(execution, what, finish):
                    yield chunk
                return
        read_id = "read-" + secrets.token_hex(8)
        spawned = await self.execs.spawn_exec(sandbox, read_id, process, with_stdin=False)
        errors = asyncio.create_task(spawned.stderr.read(64 * 1024))
        try:
            while chunk := await spawned.stdout.read(256 * 1024):
                yield chunk
            code = await spawned.proc.wait()
            finish(code, await errors)
        finally:
            errors.cancel()
            if spawned.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    spawned.proc.kill()
                await spawned.proc.wait()
            spawned.close()
            self.execs.exec_done(sandbox, read_id)


async def _read_through_agent(
    execution: AgentExecution, what: str, finish: Finish
) -> AsyncIterator[bytes]:
    errors = bytearray()
    try:
        async for chunk in execution.output():
            if chunk.stream == "stdout":
                yield chunk.data
            elif len(errors) < 64 * 1024:
                errors += chunk.data
        result = await execution.wait()
        if result.outcome != "exited":
            raise SandboxRuntimeError(f"reading {what} ended: {result.outcome}")
        finish(result.exit_code, bytes(errors))
    finally:
        if not execution.done:  # the reader went away early
            await execution.kill()
