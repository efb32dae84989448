"""A whole directory as a tar, in either direction, packed and unpacked INSIDE the sandbox.

The host never parses an archive: an upload is streamed to a temporary file in the sandbox and
unpacked there by `tar` as the sandbox's user (so `..` and absolute members are tar's and the
sandbox's problem, not the host's); a download is packed there into a temporary file, then
streamed out with `read_file`. Temporary files live in /work (the largest writable space) under
a random name that the packing step excludes.
"""

from __future__ import annotations

from collections.abc import AsyncIterable

from service.errors import SandboxNotUsable
from service.files import service as files
from service.files.errors import ArchiveFailed, ArchiveRejected, PayloadTooLarge
from service.files.schemas import ArchiveWritten
from service.files.target import SandboxCall, absolute_path, audit, while_running
from service.runtime import (
    ExecResult,
    PathNotAllowed,
    PathNotFound,
    SandboxRuntimeError,
)
from service.streaming import Body

TEMP_DIR = "/work"
TIMEOUT_S = 600.0
NOT_FOUND, NOT_DIR, DENIED = 44, 46, 47

# $1: the uploaded archive, $2: the directory to unpack into (made if missing).
EXTRACT_SCRIPT = r"""
a="$1"; d="$2"
if ! mkdir -p -- "$d" 2>/dev/null; then rm -f -- "$a"; exit 47; fi
tar -x -f "$a" -C "$d" --no-same-owner --no-same-permissions; rc=$?
rm -f -- "$a"
exit $rc
"""

# $1: the archive to make, $2: the directory. Prints the archive's size.
PACK_SCRIPT = r"""
a="$1"; d="$2"
[ -e "$d" ] || exit 44
[ -d "$d" ] || exit 46
[ -r "$d" ] && [ -x "$d" ] || exit 47
(umask 077; tar -c -f "$a" -C "$d" --exclude="${a##*/}" .); rc=$?
if [ "$rc" -gt 1 ]; then rm -f -- "$a"; exit 2; fi
wc -c < "$a"
"""


def _tar_stderr(result: ExecResult) -> str:
    text = result.stderr.decode(errors="replace").strip()
    return text[-2000:] or f"tar ended with {result.outcome} (exit {result.exit_code})"


async def upload_archive(
    call: SandboxCall, directory: str, body: AsyncIterable[bytes], *, content_length: int | None
) -> ArchiveWritten:
    dest = absolute_path(directory, "dir")
    runtime = await call.holder.get()
    target = await call.target()
    db, ctx = call.db, call.ctx
    files.refuse_declared(content_length, target.upload_limit)
    capped = files.CappedBody(body, target.upload_limit)
    temp = files.temp_name(TEMP_DIR) + ".tar"
    try:
        async with while_running(db, target, ArchiveRejected):
            size = await files.stream_into(runtime, target, temp, capped)
            result = await files.sh(
                runtime, target, EXTRACT_SCRIPT, temp, dest, timeout_s=TIMEOUT_S
            )
            if result.exit_code == DENIED:
                raise PathNotAllowed(dest, "cannot create the directory")
            if result.exit_code != 0:
                if result.outcome != "exited":
                    await files.remove_quietly(runtime, target, temp)
                raise ArchiveRejected(
                    f"tar could not unpack the archive into {dest}: {_tar_stderr(result)}",
                    extra={"dir": dest, "stderr": _tar_stderr(result)},
                )
    except (PayloadTooLarge, ArchiveRejected, SandboxRuntimeError, SandboxNotUsable) as exc:
        await audit(
            db, ctx, target, "archive.write", outcome="failed", dir=dest,
            bytes=capped.received, error=type(exc).__name__,
        )  # fmt: skip
        raise
    await audit(db, ctx, target, "archive.write", dir=dest, bytes=size)
    return ArchiveWritten(dir=dest, size=size)


async def download_archive(call: SandboxCall, directory: str) -> files.Download:
    source = absolute_path(directory, "dir")
    runtime = await call.holder.get()
    target = await call.target()
    db, ctx = call.db, call.ctx
    temp = files.temp_name(TEMP_DIR) + ".tar"
    async with while_running(db, target, ArchiveFailed):
        result = await files.sh(runtime, target, PACK_SCRIPT, temp, source, timeout_s=TIMEOUT_S)
        if result.exit_code == NOT_FOUND:
            raise PathNotFound(source)
        if result.exit_code == NOT_DIR:
            raise PathNotAllowed(source, "not a directory")
        if result.exit_code == DENIED:
            raise PathNotAllowed(source, "permission denied")
        if result.exit_code != 0:
            await files.remove_quietly(runtime, target, temp)
            raise ArchiveFailed(
                f"tar could not pack {source}: {_tar_stderr(result)}",
                extra={"dir": source, "stderr": _tar_stderr(result)},
            )
    size = int(result.stdout.strip() or 0)
    # Read no more than the size just measured and announced as the Content-Length: the
    # sandbox may have put something else (a link to a device) at the temporary name since.
    chunks = runtime.read_file(target.runtime_id, temp, max_bytes=size)
    try:
        async with while_running(db, target):
            first = await files.first_chunk(chunks)
        await audit(db, ctx, target, "archive.read", dir=source, bytes=size)
    except BaseException:
        await files.remove_quietly(runtime, target, temp)
        raise
    name = source.rstrip("/").rsplit("/", 1)[-1] or "root"

    async def remove() -> None:
        await files.remove_quietly(runtime, target, temp)

    body = Body(first, chunks, after=remove)  # the archive goes once the body is closed
    return files.Download(path=f"/{name}.tar", chunks=body, size=size)
