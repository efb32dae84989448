"""A sandbox's files, one by one or a directory as a tar: `Files` for `Sandbox`, `AsyncFiles`
for `AsyncSandbox` (the same methods, awaited)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import httpx

from airlock_client import AuthenticatedClient
from airlock_client.api.files import list_files
from airlock_client.models import FileInfo

from . import _common as common
from . import errors
from .retries import aretry, retry


class Owner(Protocol):
    """What a sandbox's files need of it: its id and its connection."""

    client: AuthenticatedClient

    @property
    def id(self) -> str: ...


class Files:
    """A sandbox's files. Relative paths are under /work."""

    def __init__(self, sandbox: Owner) -> None:
        self.sandbox = sandbox

    @property
    def _http(self) -> httpx.Client:
        return self.sandbox.client.get_httpx_client()

    def write(self, path: str, data: bytes | str, *, mode: str | None = None) -> int:
        """Write (or replace) one file; parent directories are made. Returns its size."""
        content = data.encode() if isinstance(data, str) else data
        params = {"mode": mode} if mode else None
        url = common.file_url(self.sandbox.id, path)
        answer = retry(lambda: errors.check(self._http.put(url, content=content, params=params)))
        return int(answer.json()["size"])

    def read(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """One file whole. With `max_bytes` (at most 16 MiB) the service reads no more than
        that and a longer file raises FileTooLarge."""
        url = common.file_url(self.sandbox.id, path)
        params = common.read_params(max_bytes)
        return retry(lambda: errors.check(self._http.get(url, params=params))).content

    def upload(self, local_path: str | Path, path: str, *, mode: str | None = None) -> int:
        """Stream a local file into the sandbox (never read whole into memory)."""
        params = {"mode": mode} if mode else None
        url = common.file_url(self.sandbox.id, path)

        def send() -> httpx.Response:
            with Path(local_path).open("rb") as body:
                return errors.check(self._http.put(url, content=body, params=params))

        return int(retry(send).json()["size"])

    def download(self, path: str, local_path: str | Path) -> int:
        """Stream a file of the sandbox into `local_path`; returns its size."""
        url = common.file_url(self.sandbox.id, path)

        def fetch() -> int:
            size = 0
            with self._http.stream("GET", url) as answer:
                errors.check(answer)
                with Path(local_path).open("wb") as out:
                    for chunk in answer.iter_bytes(1 << 20):
                        size += out.write(chunk)
            return size

        return retry(fetch)

    def list(self, dir: str = "/work") -> list[FileInfo]:  # noqa: A002 (the API's name)
        listing = retry(
            lambda: common.unwrap(
                list_files.sync_detailed(self.sandbox.id, client=self.sandbox.client, dir_=common.remote_path(dir))
            )
        )
        return list(listing.items)

    def upload_dir(self, local_dir: str | Path, remote_dir: str = "/work") -> int:
        """Copy a local directory's content into `remote_dir` (made if missing) as one tar,
        streamed from a temporary file. Returns the archive's size."""
        archive = common.pack(local_dir)
        url = f"/v1/sandboxes/{self.sandbox.id}/archive"
        params = {"dir": common.remote_path(remote_dir)}
        headers = {"Content-Type": "application/x-tar"}
        try:

            def send() -> httpx.Response:
                with archive.open("rb") as body:
                    return errors.check(self._http.put(url, content=body, params=params, headers=headers))

            return int(retry(send).json()["size"])
        finally:
            archive.unlink(missing_ok=True)

    def download_dir(self, remote_dir: str, local_dir: str | Path) -> int:
        """Copy `remote_dir`'s content into `local_dir` (made if missing), streamed through a
        temporary file and unpacked with tarfile's `data` filter. Returns the archive's size
        (as `upload_dir` does)."""
        url = f"/v1/sandboxes/{self.sandbox.id}/archive"
        params = {"dir": common.remote_path(remote_dir)}
        archive = common.pack_target()
        try:

            def fetch() -> int:
                size = 0
                with self._http.stream("GET", url, params=params) as answer:
                    errors.check(answer)
                    with archive.open("wb") as out:
                        for chunk in answer.iter_bytes(1 << 20):
                            size += out.write(chunk)
                return size

            size = retry(fetch)
            common.unpack(archive, local_dir)
            return size
        finally:
            archive.unlink(missing_ok=True)


class AsyncFiles:
    """A sandbox's files. Relative paths are under /work."""

    def __init__(self, sandbox: Owner) -> None:
        self.sandbox = sandbox

    @property
    def _http(self) -> httpx.AsyncClient:
        return self.sandbox.client.get_async_httpx_client()

    async def write(self, path: str, data: bytes | str, *, mode: str | None = None) -> int:
        content = data.encode() if isinstance(data, str) else data
        params = {"mode": mode} if mode else None
        url = common.file_url(self.sandbox.id, path)

        async def call() -> httpx.Response:
            return await errors.acheck(await self._http.put(url, content=content, params=params))

        return int((await aretry(call)).json()["size"])

    async def read(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """One file whole. With `max_bytes` (at most 16 MiB) the service reads no more than
        that and a longer file raises FileTooLarge."""
        url = common.file_url(self.sandbox.id, path)
        params = common.read_params(max_bytes)

        async def call() -> httpx.Response:
            return await errors.acheck(await self._http.get(url, params=params))

        return (await aretry(call)).content

    async def upload(self, local_path: str | Path, path: str, *, mode: str | None = None) -> int:
        params = {"mode": mode} if mode else None
        url = common.file_url(self.sandbox.id, path)

        async def call() -> httpx.Response:
            answer = await self._http.put(url, content=_chunks(Path(local_path)), params=params)
            return await errors.acheck(answer)

        return int((await aretry(call)).json()["size"])

    async def download(self, path: str, local_path: str | Path) -> int:
        url = common.file_url(self.sandbox.id, path)

        async def call() -> int:
            size = 0
            async with self._http.stream("GET", url) as answer:
                await errors.acheck(answer)
                with Path(local_path).open("wb") as out:
                    async for chunk in answer.aiter_bytes(1 << 20):
                        size += out.write(chunk)
            return size

        return await aretry(call)

    async def list(self, dir: str = "/work") -> list[FileInfo]:  # noqa: A002 (the API's name)
        async def call() -> Any:
            answer = await list_files.asyncio_detailed(
                self.sandbox.id, client=self.sandbox.client, dir_=common.remote_path(dir)
            )
            return common.unwrap(answer)

        return list((await aretry(call)).items)

    async def upload_dir(self, local_dir: str | Path, remote_dir: str = "/work") -> int:
        archive = await asyncio.to_thread(common.pack, local_dir)
        url = f"/v1/sandboxes/{self.sandbox.id}/archive"
        params = {"dir": common.remote_path(remote_dir)}
        headers = {"Content-Type": "application/x-tar"}

        async def call() -> httpx.Response:
            answer = await self._http.put(url, content=_chunks(archive), params=params, headers=headers)
            return await errors.acheck(answer)

        try:
            return int((await aretry(call)).json()["size"])
        finally:
            archive.unlink(missing_ok=True)

    async def download_dir(self, remote_dir: str, local_dir: str | Path) -> int:
        """`Files.download_dir`, awaited: returns the archive's size."""
        url = f"/v1/sandboxes/{self.sandbox.id}/archive"
        params = {"dir": common.remote_path(remote_dir)}
        archive = common.pack_target()

        async def call() -> int:
            size = 0
            async with self._http.stream("GET", url, params=params) as answer:
                await errors.acheck(answer)
                with archive.open("wb") as out:
                    async for chunk in answer.aiter_bytes(1 << 20):
                        size += out.write(chunk)
            return size

        try:
            size = await aretry(call)
            await asyncio.to_thread(common.unpack, archive, local_dir)
            return size
        finally:
            archive.unlink(missing_ok=True)


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    """A local file in 1 MiB pieces, read off the event loop's thread."""
    with path.open("rb") as body:
        while chunk := await asyncio.to_thread(body.read, 1 << 20):
            yield chunk
