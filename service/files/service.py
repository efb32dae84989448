"""Files in and out of a sandbox, always through the sandbox's own processes.

Each call looks the sandbox up (tenant and token binding), lets the runtime move the bytes with
no transaction open, then records the audit event in a second short transaction. Uploads go to
a temporary name beside the target and are renamed only once the whole body arrived within the
tenant's limit, so a refused or broken upload leaves nothing behind. See README.md.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

from service import telemetry
from service.audit.recorder import AuditContext
from service.auth.principal import Principal
from service.db.session import Db
from service.errors import SandboxNotUsable
from service.files.errors import PayloadTooLarge
from service.files.schemas import FileInfo, FileList, FileWritten
from service.files.target import (
    SandboxCall,
    Target,
    absolute_path,
    audit,
    resolve,
    while_running,
)
from service.runtime import (
    ExecRequest,
    ExecResult,
    InvalidPath,
    PathNotAllowed,
    PathNotFound,
    SandboxRuntime,
    SandboxRuntimeError,
)
from service.runtime.holder import RuntimeHolder
from service.sandboxes.waking import Wake
from service.streaming import Body, close_body

log = logging.getLogger("airlock.files")

DEFAULT_DIR = "/work"
TEMP_PREFIX = ".airlock-"

# $1: the uploaded temporary file, $2: the target. A directory is never replaced; a symlink at
# the target is replaced by the file (rename does not follow it).
RENAME_SCRIPT = r"""
t="$1"; p="$2"
if [ -d "$p" ]; then rm -f -- "$t"; exit 45; fi
mv -f -- "$t" "$p" || { rm -f -- "$t"; exit 47; }
"""
IS_DIR, DENIED = 45, 47


def refuse_declared(content_length: int | None, limit: int) -> None:
    """Refuse an announced body above the limit before reading any of it."""
    if content_length is not None and content_length > limit:
        raise PayloadTooLarge(
            f"the body is {content_length} bytes; this tenant accepts at most {limit}",
            extra={"limit_bytes": limit},
        )


class CappedBody:
    """The request body, cut off past `limit` bytes.

    It never raises into the runtime's writer (the runtime would just see the end of its
    input); it remembers what went wrong, and `check()` raises it once the write returned.
    """

    def __init__(self, chunks: AsyncIterable[bytes], limit: int) -> None:
        self._chunks = chunks
        self.limit = limit
        self.received = 0
        self.too_large = False
        self.error: Exception | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._chunks:
                if not chunk:
                    continue
                self.received += len(chunk)
                if self.received > self.limit:
                    self.too_large = True
                    return
                yield chunk
        except Exception as exc:  # the client went away mid-upload
            self.error = exc

    def check(self) -> None:
        if self.too_large:
            raise PayloadTooLarge(
                f"the body exceeds this tenant's upload limit of {self.limit} bytes",
                extra={"limit_bytes": self.limit},
            )
        if self.error is not None:
            raise self.error


def temp_name(directory: str) -> str:
    return posixpath.join(directory, f"{TEMP_PREFIX}{secrets.token_hex(8)}")


async def sh(
    runtime: SandboxRuntime, target: Target, script: str, *args: str, timeout_s: float = 120.0
) -> ExecResult:
    """A small script in the sandbox, as the sandbox's user."""
    request = ExecRequest(
        argv=["/bin/sh", "-c", script, "sh", *args],
        cwd="/",
        timeout_s=timeout_s,
        output_cap=64 << 10,
        helper=True,
    )
    return await runtime.run(target.runtime_id, request)


async def remove_quietly(runtime: SandboxRuntime, target: Target, path: str) -> None:
    """Best-effort removal of a temporary file, even while the request is being cancelled."""

    async def remove() -> None:
        try:
            await sh(runtime, target, 'rm -f -- "$1"', path, timeout_s=30)
        except SandboxRuntimeError as exc:
            log.warning("could not remove %s in sandbox %s: %s", path, target.sandbox_id, exc)

    # Not a shielded scope (service.streaming.close_body): the cancelled request ends at once
    # and the removal, an exec of up to 30 s, finishes on its own.
    await asyncio.shield(remove())


async def stream_into(
    runtime: SandboxRuntime, target: Target, path: str, body: CappedBody, mode: int = 0o600
) -> int:
    """Write the body to `path`; on any failure (including the limit) remove it and raise."""
    attributes = {"airlock.sandbox_id": target.sandbox_id, "airlock.path": path}
    try:
        with telemetry.span("airlock.files.write", attributes) as span:
            size = await runtime.write_file(target.runtime_id, path, body, mode=mode)
            body.check()
            span.set_attribute("airlock.files.bytes", size)
    except BaseException:
        await remove_quietly(runtime, target, path)
        raise
    return size


async def upload_file(
    db: Db,
    holder: RuntimeHolder,
    wake: Wake,
    principal: Principal,
    ctx: AuditContext,
    sandbox_id: str,
    path: str,
    body: AsyncIterable[bytes],
    *,
    content_length: int | None,
    mode: int,
) -> FileWritten:
    """`upload` for a caller outside a request (the review pipeline), which holds the
    call's parts one by one."""
    call = SandboxCall(db, holder, wake, principal, ctx, sandbox_id)
    return await upload(call, path, body, content_length=content_length, mode=mode)


async def upload(
    call: SandboxCall,
    path: str,
    body: AsyncIterable[bytes],
    *,
    content_length: int | None,
    mode: int,
) -> FileWritten:
    dest = absolute_path(path)
    if dest == "/":
        raise InvalidPath(path, "names the root directory, not a file")
    runtime = await call.holder.get()
    target = await call.target()
    db, ctx = call.db, call.ctx
    refuse_declared(content_length, target.upload_limit)
    capped = CappedBody(body, target.upload_limit)
    temp = temp_name(posixpath.dirname(dest))
    try:
        async with while_running(db, target):
            try:
                size = await stream_into(runtime, target, temp, capped, mode)
            except (PathNotAllowed, PathNotFound) as exc:
                # Name the caller's path, not the temporary one.
                why = exc.why if isinstance(exc, PathNotAllowed) else "no such directory"
                raise PathNotAllowed(dest, why) from exc
            result = await sh(runtime, target, RENAME_SCRIPT, temp, dest)
            if result.outcome != "exited":
                await remove_quietly(runtime, target, temp)
                raise SandboxRuntimeError(f"renaming the upload into {dest} ended {result.outcome}")
            if result.exit_code != 0:
                why = "is a directory" if result.exit_code == IS_DIR else "permission denied"
                raise PathNotAllowed(dest, why)
    except (PayloadTooLarge, SandboxRuntimeError, SandboxNotUsable) as exc:
        await audit(
            db, ctx, target, "file.write", outcome="failed", path=dest, bytes=capped.received,
            error=type(exc).__name__,
        )  # fmt: skip
        raise
    await audit(db, ctx, target, "file.write", path=dest, bytes=size, mode=f"{mode:04o}")
    return FileWritten(path=dest, size=size)


async def first_chunk(chunks: AsyncIterator[bytes]) -> bytes | None:
    """Pull the first chunk so a missing or unreadable file fails before the response starts;
    None when the stream is already over (an empty file)."""
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None
    except BaseException:
        await close_body(chunks)
        raise


@dataclass(frozen=True, slots=True)
class Download:
    path: str
    chunks: Body
    size: int | None = None  # known for archives and whole reads, not for streamed files

    @property
    def filename(self) -> str:
        return posixpath.basename(self.path) or "download"


async def download_file(call: SandboxCall, path: str, max_bytes: int | None = None) -> Download:
    """The file as a stream; with `max_bytes`, read whole first (FileTooLarge, a 413, past it)."""
    source = absolute_path(path)
    runtime = await call.holder.get()
    target = await call.target()
    db, ctx = call.db, call.ctx
    if max_bytes is not None:
        return await _download_whole(db, runtime, ctx, target, source, max_bytes)
    chunks = runtime.read_file(target.runtime_id, source)
    # The span covers opening the file; its bytes stream after the request's handler returns.
    with telemetry.span(
        "airlock.files.read", {"airlock.sandbox_id": call.sandbox_id, "airlock.path": source}
    ):
        async with while_running(db, target):
            first = await first_chunk(chunks)
    try:
        await audit(db, ctx, target, "file.read", path=source)
    except BaseException:
        await close_body(chunks)
        raise
    return Download(path=source, chunks=Body(first, chunks))


async def _download_whole(
    db: Db, runtime: SandboxRuntime, ctx: AuditContext, target: Target, source: str, limit: int
) -> Download:
    """The whole file, held here: the runtime's cap (`max_bytes`) bounds what that can be,
    and a longer file is refused before any answer starts."""
    parts: list[bytes] = []
    with telemetry.span(
        "airlock.files.read", {"airlock.sandbox_id": target.sandbox_id, "airlock.path": source}
    ):
        async with while_running(db, target):
            async for chunk in runtime.read_file(target.runtime_id, source, max_bytes=limit):
                parts.append(chunk)
    size = sum(len(part) for part in parts)
    await audit(db, ctx, target, "file.read", path=source, bytes=size)
    first = parts.pop(0) if parts else None
    return Download(path=source, chunks=Body(first, _held(parts)), size=size)


async def _held(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def list_files(call: SandboxCall, directory: str) -> FileList:
    where = absolute_path(directory, "dir")
    runtime = await call.holder.get()
    # Not an audited call: a wake it needs is audited without the request's context.
    target = await resolve(call.db, call.principal, call.sandbox_id, call.wake)
    async with while_running(call.db, target):
        entries = await runtime.list_files(target.runtime_id, where)
    return FileList(
        dir=where,
        items=[
            FileInfo(
                name=e.name,
                kind=e.kind,
                size=e.size,
                mode=f"{e.mode & 0o7777:04o}",
                mtime=datetime.fromtimestamp(e.mtime, UTC),
            )
            for e in entries
        ],
    )
