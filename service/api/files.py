from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import quote

from litestar import Controller, Request, get, put
from litestar.params import FromPath, QueryParameter

from service.context import SANDBOX_CALL, SandboxCallDep
from service.errors import Unprocessable
from service.files import archives, service
from service.files.schemas import ABSOLUTE_PATH_PATTERN, ArchiveWritten, FileList, FileWritten
from service.openapi import binary_body_operation
from service.streaming import ClosingStream

_MODE = re.compile(r"^0?[0-7]{3,4}$")
DirParam = Annotated[
    str,
    QueryParameter(
        name="dir",
        min_length=1,
        max_length=1024,
        pattern=ABSOLUTE_PATH_PATTERN,
        description="An absolute directory",
    ),
]
ModeParam = Annotated[
    str | None,
    QueryParameter(
        pattern=_MODE.pattern,
        description="Octal permission bits of the new file, e.g. `0644` (default)",
    ),
]

# A read answered whole is held in the API until it is sent: this is the most it may ask for.
WHOLE_READ_LIMIT = 16 << 20
MaxBytesParam = Annotated[
    int | None,
    QueryParameter(
        ge=1,
        le=WHOLE_READ_LIMIT,
        description="Read the file whole, at most this many bytes, or refuse it (413)",
    ),
]


def _mode(value: str | None) -> int:
    if value is None:
        return 0o644
    if not _MODE.match(value):
        raise Unprocessable(f"mode {value!r} is not octal permission bits like 0644")
    return int(value, 8)


def _attachment(download: service.Download, media_type: str) -> ClosingStream:
    name = download.filename
    fallback = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "download"
    disposition = f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name)}"
    headers = {"Content-Disposition": disposition}
    if download.size is not None:
        headers["Content-Length"] = str(download.size)
    return ClosingStream(download.chunks, media_type=media_type, headers=headers)


def _upload(media_type: str) -> dict[str, Any]:
    """What an upload route declares: its body, documented as `media_type`, is streamed into
    the sandbox under the tenant's limit whatever its content type."""
    return {
        "opt": {"routed": "sandbox", "scope": "files:write", "streamed_body": True},
        "status_code": 201,
        "request_max_body_size": None,
        "operation_class": binary_body_operation(media_type),
    }


class FileController(Controller):
    path = "/v1/sandboxes/{sandbox_id:str}"
    tags = ["files"]
    # Every route is a call on the sandbox of its path, through the runtime.
    opt = {"bound_token": "sandbox", "runtime": True}
    dependencies = SANDBOX_CALL

    @put(
        "/files/{path:path}",
        operation_id="upload_file",
        summary="Upload a file into a sandbox",
        description="The raw body is the file's content, streamed into the sandbox and limited "
        "by the tenant's `max_upload_mib` (413 beyond it, leaving nothing behind). Parent "
        "directories are made; an existing file is replaced.",
        **_upload("application/octet-stream"),
    )
    async def upload_file(
        self,
        request: Request[Any, Any, Any],
        call: SandboxCallDep,
        path: FromPath[str],
        mode: ModeParam = None,
    ) -> FileWritten:
        return await service.upload(
            call, path, request.stream(), content_length=request.content_length, mode=_mode(mode)
        )

    @get(
        "/files/{path:path}",
        operation_id="download_file",
        summary="Download a file from a sandbox",
        description="The file is read by the sandbox's user inside the sandbox (a link is "
        "followed there) and streamed as it is read. With `max_bytes` (at most 16 MiB) it is "
        "read whole before the answer starts, which then has a Content-Length, and a file "
        "longer than `max_bytes` is a 413 `file_too_large`: a regular file (a link's target) is "
        "refused by its own size, given as `size`, before any of it is read; anything else (a "
        "device, a pipe, a file that grows while it is read) once it gave more than "
        "`max_bytes`. Never more than `max_bytes` bytes of it are held.",
        response_description="The file's bytes, streamed",
        opt={
            "routed": "sandbox",
            "scope": "files:read",
            "offload": True,
            "problems": {413: "The file is longer than `max_bytes` (`file_too_large`)"},
        },
        media_type="application/octet-stream",
    )
    async def download_file(
        self,
        call: SandboxCallDep,
        path: FromPath[str],
        max_bytes: MaxBytesParam = None,
    ) -> ClosingStream:
        download = await service.download_file(call, path, max_bytes)
        return _attachment(download, "application/octet-stream")

    @get(
        "/files",
        operation_id="list_files",
        summary="List a directory in a sandbox",
        opt={"routed": "sandbox", "scope": "files:read"},
    )
    async def list_files(
        self,
        call: SandboxCallDep,
        directory: DirParam = service.DEFAULT_DIR,
    ) -> FileList:
        return await service.list_files(call, directory)

    @put(
        "/archive",
        operation_id="upload_archive",
        summary="Unpack a tar archive into a sandbox directory",
        description="The body is a tar (`application/x-tar`), streamed into the sandbox and "
        "unpacked there by the sandbox's user; the directory is made if missing. A tar that "
        "cannot be unpacked is a 422 with tar's own message.",
        **_upload("application/x-tar"),
    )
    async def upload_archive(
        self,
        request: Request[Any, Any, Any],
        call: SandboxCallDep,
        directory: DirParam = service.DEFAULT_DIR,
    ) -> ArchiveWritten:
        return await archives.upload_archive(
            call, directory, request.stream(), content_length=request.content_length
        )

    @get(
        "/archive",
        operation_id="download_archive",
        summary="Download a sandbox directory as a tar archive",
        response_description="The directory as a tar archive, streamed",
        opt={"routed": "sandbox", "scope": "files:read", "offload": True},
        media_type="application/x-tar",
    )
    async def download_archive(
        self,
        call: SandboxCallDep,
        directory: DirParam = service.DEFAULT_DIR,
    ) -> ClosingStream:
        download = await archives.download_archive(call, directory)
        return _attachment(download, "application/x-tar")
