"""Templates and the warm pool on the real gVisor runtime.

Each module gets its own PostgreSQL database and its own runtime state dir (with `images`
linked to the repository's built images): these apps run the background jobs (builder,
refiller, start-up reconciler), which act on every row of their database, so they must not
share one with other suites. Everything left in the state dir is destroyed at the end.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.db import migrate
from service.runtime import images
from service.runtime.gvisor import destroy_left
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api, Tenant, create_pg_database, database_kind

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")

# A setup that installs a small package into a venv in the sandbox user's home, and counts
# how often it ran: a sandbox from the template must have the package with the count at 1.
SITE = "/home/sandbox/venv/lib/python3.11/site-packages"
SETUP = [
    ["python3", "-m", "venv", "--without-pip", "/home/sandbox/venv"],
    [
        "/bin/sh",
        "-c",
        f"printf 'VALUE = 42\\n' > {SITE}/airlock_probe.py && echo installed"
        " && echo run >> /home/sandbox/setup-runs",
    ],
]
PROBE = ["/home/sandbox/venv/bin/python", "-c", "import airlock_probe; print(airlock_probe.VALUE)"]
BIG_QUOTAS = {
    "max_sandboxes": 100,
    "max_vcpus": 200,
    "max_memory_mib": 100_000,
    "max_disk_mib": 200_000,
}
# These suites hold dozens of idle small sandboxes at once (each promised ~2.4 GiB of memory
# and writable space, using ~12 MiB): they measure claims and builds, not host admission.
HOST_MEMORY_MIB = 1 << 20


async def eventually(check: Callable[[], Awaitable[T | None]], bound_s: float = 120.0) -> T:
    """Poll until `check` returns something truthy; the bound only keeps a broken run finite."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound_s
    while True:
        found = await check()
        if found:
            return found
        if loop.time() > deadline:
            pytest.fail(f"condition not reached within {bound_s} s")
        await asyncio.sleep(0.2)


def new_state(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    shared = REPO / ".airlock"
    images.build_default_image(shared)  # instant when already built
    state = tmp_path_factory.mktemp(name)
    (state / "images").symlink_to(images.images_dir(shared).resolve())
    return state


@pytest.fixture(scope="module")
async def own_database(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A migrated database of the module's own, of the kind the run tests."""
    if database_kind() == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('own-db') / 'airlock.db'}"
        await asyncio.to_thread(migrate.upgrade, url)
        yield url
        return
    url, drop = await create_pg_database("airlock_pool")
    await asyncio.to_thread(migrate.upgrade, url)
    yield url
    await drop()


@asynccontextmanager
async def serve(state: Path, database_url: str, **overrides: Any) -> AsyncIterator[Api]:
    """The app with its jobs running, on gVisor in `state`."""
    settings = Settings.from_env(
        {},
        state_dir=state,
        database_url=database_url,
        operator_key=OPERATOR_KEY,
        runtime="gvisor",
        pool_refill_interval_s=0.5,
        host_memory_mib=HOST_MEMORY_MIB,
        # Many small sandboxes at once on a 2-CPU machine, as with the memory above.
        cpu_overcommit=64,
        **overrides,
    )
    app = create_app(settings)
    async with AsyncTestClient(app=app, timeout=180) as client:
        yield Api(client=client, settings=settings)


@pytest.fixture(scope="module")
def template_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_state(tmp_path_factory, "templates-state")


@pytest.fixture(scope="module")
async def tapi(template_state: Path, own_database: str) -> AsyncIterator[Api]:
    try:
        async with serve(template_state, own_database) as api:
            yield api
    finally:
        await destroy_left(template_state, snapshots=True, strict=True)


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


async def build_template(
    api: Api, headers: dict[str, str], name: str, setup: list[list[str]] | None = None, **body: Any
) -> dict[str, Any]:
    """POST a template and wait for its newest version to finish building."""
    r = await api.client.post(
        "/v1/templates",
        json={"name": name, "setup": SETUP if setup is None else setup, **body},
        headers=headers,
    )
    assert r.status_code == 202, r.text
    wanted = r.json()["latest_version"]

    async def finished() -> dict[str, Any] | None:
        got = await api.client.get(f"/v1/templates/{name}", headers=headers)
        assert got.status_code == 200, got.text
        newest = got.json()["versions"][0]
        done = newest["version"] == wanted and newest["state"] in ("ready", "failed")
        return got.json() if done else None

    return await eventually(finished)


async def create_sandbox(api: Api, tenant: Tenant, **body: Any) -> dict[str, Any]:
    r = await api.client.post("/v1/sandboxes", json={"ttl_s": 900, **body}, headers=tenant.headers)
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "running", r.json()
    return dict(r.json())


async def run(api: Api, tenant: Tenant, sandbox_id: str, argv: list[str], **body: Any) -> Any:
    r = await api.client.post(
        f"/v1/sandboxes/{sandbox_id}/execs",
        json={"cmd": argv, "timeout_s": 60, **body},
        headers=tenant.headers,
    )
    assert r.status_code == 200, r.text
    return r.json()


async def delete_sandbox(api: Api, tenant: Tenant, sandbox_id: str) -> None:
    r = await api.client.delete(f"/v1/sandboxes/{sandbox_id}", headers=tenant.headers)
    assert r.status_code in (200, 204), r.text
