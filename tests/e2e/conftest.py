"""End-to-end fixtures: a real `airlock serve` process on the gVisor runtime and a fresh PostgreSQL
database, driven over HTTP through the generated client (`airlock_client`).

The server has its own state dir (its runtime state and sandboxes are separate from other
suites'), sharing only the built images; its log goes to a file the tests can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from airlock_client import AuthenticatedClient
from airlock_client.api.execs import create_exec
from airlock_client.api.sandboxes import create_sandbox, delete_sandbox, get_sandbox
from airlock_client.api.tenants import create_tenant
from airlock_client.models import Exec, ExecCreate, Sandbox, SandboxCreate, TenantCreate

from service.db import migrate
from service.runtime import images
from service.runtime.gvisor import destroy_left
from tests.conftest import create_pg_database, database_kind

REPO = Path(__file__).resolve().parents[2]
# Where the built images live (as for the runtime suite): the server's state dir links to them.
SHARED_STATE = Path(os.environ.get("AIRLOCK_STATE_DIR") or REPO / ".airlock").resolve()
READY_TIMEOUT_S = 90.0
# Ports of sandboxes answer on `{port}-{id}.` this (sent as the Host header; no DNS needed).
PREVIEW_DOMAIN = "preview.airlock.test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One `airlock serve` process; `kill()` and `start()` again simulate a crash and restart."""

    state_dir: Path
    env: dict[str, str]
    port: int
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(REPO / ".venv/bin/airlock"), "serve", "--port", str(self.port)],
                env=self.env,
                cwd=self.state_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        async with httpx.AsyncClient(base_url=self.url, timeout=5) as http:
            while time.monotonic() < deadline:
                assert self.proc is not None
                if self.proc.poll() is not None:
                    pytest.fail(f"airlock serve exited with {self.proc.returncode}:\n{self.log()}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/readyz")).status_code == 200:
                        return
                await asyncio.sleep(0.2)
        pytest.fail(f"airlock serve not ready after {READY_TIMEOUT_S} s:\n{self.log()}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.proc.wait(timeout=60)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass
class Database:
    """Direct SQL on the server's database, for what the API must not (or cannot) show."""

    url: str  # plain postgresql:// for asyncpg

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        conn = await asyncpg.connect(self.url)
        try:
            return await conn.fetch(sql, *args)
        finally:
            await conn.close()

    async def count(self, sql: str, *args: Any) -> int:
        conn = await asyncpg.connect(self.url)
        try:
            return int(await conn.fetchval(sql, *args))
        finally:
            await conn.close()

    async def dump(self) -> str:
        """Every row of every table as text (bytea decoded): to search for what must not be."""
        conn = await asyncpg.connect(self.url)
        try:
            tables = await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
            )
            parts = []
            for (table,) in tables:
                for row in await conn.fetch(f'SELECT * FROM "{table}"'):  # noqa: S608 (catalog names)
                    for value in row.values():
                        if isinstance(value, bytes | bytearray | memoryview):
                            parts.append(bytes(value).decode("utf-8", errors="replace"))
                        else:
                            parts.append(str(value))
            return "\n".join(parts)
        finally:
            await conn.close()


@dataclass
class Tenant:
    id: str
    key: str
    client: AuthenticatedClient
    sandboxes: list[str] = field(default_factory=list)


@dataclass
class Airlock:
    server: Server
    db: Database
    operator_key: str
    operator: AuthenticatedClient
    tenants: list[Tenant] = field(default_factory=list)

    def client(self, token: str) -> AuthenticatedClient:
        return AuthenticatedClient(
            base_url=self.server.url, token=token, timeout=httpx.Timeout(120)
        )

    def http(self, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.server.url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(120),
        )

    async def tenant(self, **quotas: int) -> Tenant:
        body: dict[str, Any] = {"name": f"e2e-{secrets.token_hex(6)}"}
        if quotas:
            body["quotas"] = quotas
        r = await create_tenant.asyncio_detailed(
            client=self.operator, body=TenantCreate.from_dict(body)
        )
        assert r.status_code == 201, r.content
        assert r.parsed is not None
        tenant = Tenant(
            id=r.parsed.tenant.id, key=r.parsed.api_key, client=self.client(r.parsed.api_key)
        )
        self.tenants.append(tenant)
        return tenant

    async def sandbox(self, tenant: Tenant, **body: Any) -> Sandbox:
        r = await create_sandbox.asyncio_detailed(
            client=tenant.client, body=SandboxCreate.from_dict({"ttl_s": 600, **body})
        )
        assert r.status_code == 201, r.content
        assert r.parsed is not None
        tenant.sandboxes.append(r.parsed.id)
        assert r.parsed.state == "running", r.parsed
        return r.parsed

    async def get_sandbox(self, tenant: Tenant, sandbox_id: str) -> Sandbox:
        r = await get_sandbox.asyncio_detailed(sandbox_id, client=tenant.client)
        assert r.status_code == 200, r.content
        assert r.parsed is not None
        return r.parsed


async def run_exec(
    client: AuthenticatedClient, sandbox_id: str, *, expect: int = 200, **body: Any
) -> tuple[httpx.Response, Exec | None]:
    """POST an exec; returns the raw answer and the exec it describes (parsed here: the
    document declares only 201 for this operation, so the generated parser returns nothing)."""
    r = await create_exec.asyncio_detailed(
        sandbox_id, client=client, body=ExecCreate.from_dict(body)
    )
    assert r.status_code == expect, r.content
    parsed = Exec.from_dict(json.loads(r.content)) if r.status_code in (200, 201, 202) else None
    return httpx.Response(r.status_code, headers=dict(r.headers), content=r.content), parsed


def runtime_processes(needle: str, of: Path | None = None) -> list[str]:
    """Host processes whose full command line mentions `needle`; with `of` (a server's state
    dir), only those that belong to that server: the command line of the process or of one of
    its ancestors names the state dir (other suites' processes on this host do not count)."""
    out = subprocess.run(
        ["ps", "-eww", "-o", "pid=,ppid=,args="], capture_output=True, text=True, check=True
    )
    procs: dict[int, tuple[int, str]] = {}
    for line in out.stdout.splitlines():
        pid, ppid, args = [*line.strip().split(None, 2), "", ""][:3]
        procs[int(pid)] = (int(ppid), args)

    def belongs(pid: int) -> bool:
        seen = set()
        while pid in procs and pid not in seen:
            seen.add(pid)
            ppid, args = procs[pid]
            if of is not None and str(of) in args:
                return True
            pid = ppid
        return of is None

    return [f"{pid} {args}" for pid, (_, args) in procs.items() if needle in args and belongs(pid)]


@pytest.fixture(scope="session")
def e2e_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    images.build_default_image(SHARED_STATE)  # instant when built
    state = tmp_path_factory.mktemp("e2e-state")
    (state / "images").symlink_to(SHARED_STATE / "images")
    return state


@pytest.fixture(scope="session")
async def airlock(e2e_state: Path) -> AsyncIterator[Airlock]:
    url, drop = await create_pg_database("airlock_e2e")
    await asyncio.to_thread(migrate.upgrade, url)
    operator_key = secrets.token_urlsafe(30)[:40]
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        # The server runs this checkout's code, also where the venv's editable install is
        # another checkout's (a worktree sharing one venv).
        "PYTHONPATH": str(REPO),
        "AIRLOCK_STATE_DIR": str(e2e_state),
        "AIRLOCK_DATABASE_URL": url,
        "AIRLOCK_RUNTIME": "gvisor",
        "AIRLOCK_OPERATOR_KEY": operator_key,
        "AIRLOCK_TTL_REAPER_INTERVAL_S": "1",
        "AIRLOCK_IDLE_CHECK_INTERVAL_S": "1",
        "AIRLOCK_USAGE_SAMPLE_INTERVAL_S": "1",
        "AIRLOCK_PREVIEW_DOMAIN": PREVIEW_DOMAIN,
    }
    server = Server(e2e_state, env, free_port(), e2e_state / "server.log")
    server.start()
    try:
        await server.wait_ready()
        operator = AuthenticatedClient(base_url=server.url, token=operator_key)
        yield Airlock(
            server=server,
            db=Database(url.replace("postgresql+asyncpg://", "postgresql://", 1)),
            operator_key=operator_key,
            operator=operator,
        )
    finally:
        server.stop()
        await destroy_left(e2e_state)  # a crash test's or a failed test's
        await drop()


@pytest.fixture(scope="module")
async def site(
    airlock: Airlock, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Airlock]:
    """The server a module's tests run on where they are part of the SQLite run: the suite's
    (PostgreSQL), and on the SQLite run one of the module's own on a SQLite file (the suite's
    server always runs on PostgreSQL). Its `db` is still the suite's PostgreSQL database."""
    if database_kind() != "sqlite":
        yield airlock
        return
    async with sqlite_server(airlock, tmp_path_factory.mktemp("e2e-sqlite-state")) as server:
        yield server


@contextlib.asynccontextmanager
async def sqlite_server(airlock: Airlock, state: Path, **env: str) -> AsyncIterator[Airlock]:
    """An `airlock serve` of its own on a SQLite file in `state`, with the suite's settings and
    images, and `env` besides; its `db` is still the suite's PostgreSQL database."""
    (state / "images").symlink_to(airlock.server.state_dir / "images")
    url = f"sqlite+aiosqlite:///{state / 'airlock.db'}"
    await asyncio.to_thread(migrate.upgrade, url)
    env = {
        **airlock.server.env,
        "AIRLOCK_STATE_DIR": str(state),
        "AIRLOCK_DATABASE_URL": url,
        **env,
    }
    server = Server(state, env, free_port(), state / "server.log")
    server.start()
    try:
        await server.wait_ready()
        operator = AuthenticatedClient(base_url=server.url, token=airlock.operator_key)
        yield Airlock(server, airlock.db, airlock.operator_key, operator)
    finally:
        server.stop()
        await destroy_left(state)


@pytest.fixture(autouse=True)
async def _delete_sandboxes(airlock: Airlock) -> AsyncIterator[None]:
    """Sandboxes of the tenants a test made are deleted after it (the session end destroys
    whatever is left, for tests that crash the server)."""
    known = len(airlock.tenants)
    yield
    for t in airlock.tenants[known:]:
        for sandbox_id in t.sandboxes:
            with contextlib.suppress(Exception):
                await delete_sandbox.asyncio_detailed(sandbox_id, client=t.client)


@pytest.fixture
async def tenant(airlock: Airlock) -> Tenant:
    return await airlock.tenant()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test shows the end of the server's log."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and "airlock" in getattr(item, "funcargs", {}):
        server = item.funcargs["airlock"].server
        tail = "\n".join(server.log().splitlines()[-80:])
        report.sections.append(("airlock serve log (last 80 lines)", tail))


@dataclass
class Event:
    id: str | None
    event: str
    data: dict[str, Any]


async def sse_events(response: httpx.Response) -> AsyncIterator[Event]:
    """Server-sent events of a streaming response, one at a time."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if "data" in fields or "event" in fields:
                yield Event(
                    id=fields.get("id"),
                    event=fields.get("event", "message"),
                    data=json.loads(fields.get("data") or "null") or {},
                )
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        fields[name] = fields[name] + "\n" + value if name == "data" and name in fields else value


async def audit_events(airlock: Airlock, tenant: Tenant) -> list[dict[str, Any]]:
    """Every audit event of the tenant, through the API (all pages), as raw JSON objects."""
    events: list[dict[str, Any]] = []
    cursor: str | None = None
    async with airlock.http(tenant.key) as http:
        while True:
            params: dict[str, Any] = {"limit": 200}
            if cursor:
                params["cursor"] = cursor
            r = await http.get("/v1/audit", params=params)
            assert r.status_code == 200, r.text
            page = r.json()
            events.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                return events
