"""Shared fixtures: a real database built by the migrations, and the app served in-process.

`AIRLOCK_TEST_DATABASE=postgresql` (the default of `make test`) creates a fresh database on the
server named by `AIRLOCK_TEST_PG_ADMIN_URL` for the session and drops it afterwards;
`AIRLOCK_TEST_DATABASE=sqlite` uses a file in a temporary directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import uvicorn
from litestar.testing import AsyncTestClient
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.app import create_app
from service.db import migrate, models
from service.db.session import make_engine, make_sessionmaker
from service.ids import new_id
from service.settings import Settings
from tests.wheels import wheels  # noqa: F401 (one build of the wheels for every suite)

OPERATOR_KEY = "alo_test_" + secrets.token_urlsafe(32)


def database_kind() -> str:
    return os.environ.get("AIRLOCK_TEST_DATABASE", "postgresql")


def pg_admin_url() -> str:
    url = os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL")
    if not url:
        pytest.fail(
            "AIRLOCK_TEST_PG_ADMIN_URL is not set: run the tests through `make test`, which "
            "starts PostgreSQL, or set AIRLOCK_TEST_DATABASE=sqlite for the smoke set"
        )
    return url


async def create_pg_database(prefix: str) -> tuple[str, Callable[[], Awaitable[None]]]:
    """A new empty database; returns its SQLAlchemy URL and a coroutine that drops it."""
    admin = pg_admin_url()
    name = f"{prefix}_{secrets.token_hex(4)}"
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = make_url(admin).set(drivername="postgresql+asyncpg", database=name)

    async def drop() -> None:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    return url.render_as_string(hide_password=False), drop


@pytest.fixture(scope="session")
def tmp_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("state")


@pytest.fixture(scope="session")
async def database_url(tmp_state: Path) -> AsyncIterator[str]:
    if database_kind() == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_state / 'test.db'}"
        await asyncio.to_thread(migrate.upgrade, url)
        yield url
        return
    url, drop = await create_pg_database("airlock_test")
    await asyncio.to_thread(migrate.upgrade, url)
    yield url
    await drop()


@pytest.fixture(scope="session")
def settings(tmp_state: Path, database_url: str) -> Settings:
    return Settings.from_env(
        {},
        state_dir=tmp_state,
        database_url=database_url,
        operator_key=OPERATOR_KEY,
    )


@dataclass
class Api:
    """The app in-process, with helpers for the credentials every test needs."""

    client: AsyncTestClient[Any]
    settings: Settings

    @property
    def app(self) -> Any:
        return self.client.app

    @staticmethod
    def bearer(credential: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {credential}"}

    @property
    def operator(self) -> dict[str, str]:
        return self.bearer(OPERATOR_KEY)

    async def tenant(self, **quotas: int) -> Tenant:
        name = f"t-{secrets.token_hex(6)}"
        body: dict[str, Any] = {"name": name}
        if quotas:
            body["quotas"] = quotas
        r = await self.client.post("/v1/tenants", json=body, headers=self.operator)
        assert r.status_code == 201, r.text
        data = r.json()
        return Tenant(id=data["tenant"]["id"], name=name, key=data["api_key"], api=self)

    async def key(self, tenant: Tenant, scopes: list[str]) -> str:
        r = await self.client.post(
            "/v1/api-keys", json={"name": "k", "scopes": scopes}, headers=tenant.headers
        )
        assert r.status_code == 201, r.text
        return r.json()["key"]

    async def token(self, key: str, **body: Any) -> dict[str, Any]:
        r = await self.client.post("/v1/tokens", json=body, headers=self.bearer(key))
        assert r.status_code == 201, r.text
        return r.json()


@dataclass
class Tenant:
    id: str
    name: str
    key: str
    api: Api

    @property
    def headers(self) -> dict[str, str]:
        return Api.bearer(self.key)


@pytest.fixture(scope="session")
async def api(settings: Settings) -> AsyncIterator[Api]:
    app = create_app(settings, run_jobs=False)
    async with AsyncTestClient(app=app) as client:
        yield Api(client=client, settings=settings)


@contextlib.asynccontextmanager
async def served_over_tcp(api: Api) -> AsyncIterator[Api]:
    """A second app on `api`'s settings (same database and state dir, no background jobs),
    served by uvicorn on a loopback port: requests really overlap and bodies arrive in pieces."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(api.settings, run_jobs=False)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), "uvicorn did not start"
            await asyncio.sleep(0.05)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            yield Api(client=client, settings=api.settings)  # type: ignore[arg-type]
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture(scope="session")
async def sessionmaker(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Direct database access for assertions, on the tests' own event loop (the app under test
    runs on another one, so its engine must not be shared)."""
    engine = make_engine(database_url)
    yield make_sessionmaker(engine)
    await engine.dispose()


SandboxRecorder = Callable[[Tenant], Awaitable[str]]


@pytest.fixture
def sandbox_record(sessionmaker: async_sessionmaker[AsyncSession]) -> SandboxRecorder:
    """A stopped sandbox's record, for tests of authorisation that need no runtime."""

    async def make(tenant: Tenant) -> str:
        now = datetime.now(UTC)
        row = models.Sandbox(
            id=new_id("sbx"),
            tenant_id=tenant.id,
            state="stopped",
            image="default",
            size="small",
            cpus=1,
            memory_mib=512,
            disk_mib=1024,
            network={"mode": "none"},
            env={},
            labels={},
            ttl_s=60,
            created_at=now,
            updated_at=now,
            expires_at=now,
            stopped_at=now,
        )
        async with sessionmaker() as session, session.begin():
            session.add(row)
        return row.id

    return make


@pytest.fixture
async def tenant(api: Api) -> Tenant:
    return await api.tenant()


@pytest.fixture
def anyio_backend() -> Iterator[str]:
    yield "asyncio"
