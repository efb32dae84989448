"""The files API on the real gVisor runtime, with its own runtime state directory.

The app opens the runtime itself (inside its own event loop) from settings that point at a
temporary state dir whose `images` is a symlink to the repository's built images, so these
tests never see or touch the sandboxes of other suites. Every sandbox made here is deleted
through the API, and anything left is destroyed from the state dir at the end.
"""

from __future__ import annotations

import hashlib
import io
import secrets
import tarfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.runtime import images
from service.runtime.gvisor import destroy_left
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api, Tenant

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def files_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared = REPO / ".airlock"
    images.build_default_image(shared)  # instant when already built
    state = tmp_path_factory.mktemp("files-state")
    (state / "images").symlink_to(images.images_dir(shared).resolve())
    return state


@pytest.fixture(scope="session")
async def files_api(files_state: Path, database_url: str) -> AsyncIterator[Api]:
    settings = Settings.from_env(
        {},
        state_dir=files_state,
        database_url=database_url,
        operator_key=OPERATOR_KEY,
        runtime="gvisor",
    )
    app = create_app(settings, run_jobs=False)
    try:
        async with AsyncTestClient(app=app, timeout=120) as client:
            yield Api(client=client, settings=settings)
    finally:
        await destroy_left(files_state, strict=True)


@dataclass
class Box:
    """A running sandbox of a tenant, with helpers for the calls the tests make."""

    id: str
    tenant: Tenant
    client: AsyncTestClient[Any]

    @property
    def url(self) -> str:
        return f"/v1/sandboxes/{self.id}"

    async def put(
        self, path: str, content: Any, headers: dict[str, str] | None = None, **kw: Any
    ) -> Any:
        url = f"{self.url}/files{path}"
        return await self.client.put(
            url, content=content, headers=headers or self.tenant.headers, **kw
        )

    async def get(self, path: str, headers: dict[str, str] | None = None) -> Any:
        url = f"{self.url}/files{path}"
        return await self.client.get(url, headers=headers or self.tenant.headers)

    async def listing(self, directory: str = "/work") -> dict[str, dict[str, Any]]:
        r = await self.client.get(
            f"{self.url}/files", params={"dir": directory}, headers=self.tenant.headers
        )
        assert r.status_code == 200, r.text
        return {item["name"]: item for item in r.json()["items"]}

    async def sh(self, script: str) -> dict[str, Any]:
        r = await self.client.post(
            f"{self.url}/execs",
            json={"cmd": ["/bin/sh", "-c", script], "timeout_s": 60},
            headers=self.tenant.headers,
        )
        assert r.status_code == 200, r.text
        return r.json()


BoxFactory = Callable[[Tenant], Awaitable[Box]]


@pytest.fixture
async def make_box(files_api: Api) -> AsyncIterator[BoxFactory]:
    made: list[Box] = []

    async def make(tenant: Tenant) -> Box:
        r = await files_api.client.post(
            "/v1/sandboxes",
            json={"cpus": 1, "memory_mib": 256, "disk_mib": 256, "ttl_s": 900},
            headers=tenant.headers,
        )
        assert r.status_code == 201, r.text
        assert r.json()["state"] == "running", r.json()
        box = Box(id=r.json()["id"], tenant=tenant, client=files_api.client)
        made.append(box)
        return box

    yield make
    for box in made:
        r = await files_api.client.delete(box.url, headers=box.tenant.headers)
        assert r.status_code in (200, 204, 404), r.text


@pytest.fixture
async def box(files_api: Api, make_box: BoxFactory) -> Box:
    return await make_box(await files_api.tenant())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_tar(
    members: dict[str, bytes | None],
    *,
    symlinks: dict[str, str] | None = None,
    links_first: bool = False,
) -> bytes:
    """A tar in memory: `None` content is a directory; symlinks after the members, or first."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        if links_first:
            _add_links(tar, symlinks or {})
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            if content is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = len(content), 0o644
                tar.addfile(info, io.BytesIO(content))
        if not links_first:
            _add_links(tar, symlinks or {})
    return buf.getvalue()


def _add_links(tar: tarfile.TarFile, symlinks: dict[str, str]) -> None:
    for name, target in symlinks.items():
        info = tarfile.TarInfo(name)
        info.type, info.linkname = tarfile.SYMTYPE, target
        tar.addfile(info)


def random_bytes(n: int) -> bytes:
    return secrets.token_bytes(n)
