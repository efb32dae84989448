"""A real cluster for the tests: scripts/cluster.sh starts 2 nodes (gVisor) and 2 API replicas
on one fresh PostgreSQL database, each an `airlock serve` process of its own, and an nginx in
front of each replica as the chart deploys it.

Leases are short here (AIRLOCK_NODE_LEASE_S=6, heartbeat every second) so a node's loss is
seen within seconds; everything else is as a deployment runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from service.runtime import images
from tests.conftest import pg_admin_url

REPO = Path(__file__).resolve().parents[2]
SHARED_STATE = Path(os.environ.get("AIRLOCK_STATE_DIR") or REPO / ".airlock").resolve()
LEASE_S = 6.0
T = TypeVar("T")


@dataclass
class Cluster:
    directory: Path
    info: dict[str, Any]
    db_url: str  # postgresql:// for asyncpg
    made: list[tuple[str, str]] = field(default_factory=list)  # (key, sandbox id)
    traces: TraceSink | None = None  # the spans every process exported

    def process(self, name: str) -> dict[str, Any]:
        return next(p for p in self.info["processes"] if p["name"] == name)

    @property
    def apis(self) -> list[str]:
        return [p["url"] for p in self.info["processes"] if p["role"] == "api"]

    @property
    def proxies(self) -> list[str]:
        """The nginx in front of each replica (the chart's sidecar), in the replicas' order."""
        return [p["url"] for p in self.info["processes"] if p["role"] == "proxy"]

    @property
    def operator_key(self) -> str:
        return str(self.info["env"]["AIRLOCK_OPERATOR_KEY"])

    def pid(self, name: str) -> int:
        return int((self.directory / f"{name}.pid").read_text())

    def log(self, name: str) -> str:
        return (self.directory / f"{name}.log").read_text(errors="replace")

    def http(self, url: str, credential: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {credential}"}, timeout=120
        )

    def kill(self, name: str) -> None:
        """SIGKILL the node's server process alone, as a crash would: its sandboxes' runsc
        processes are left running, like a host whose service died."""
        os.kill(self.pid(name), signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid(name), 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)

    def restart(self, name: str) -> None:
        subprocess.run(
            ["bash", str(REPO / "scripts/cluster.sh"), "restart", name, "--dir",
             str(self.directory)],
            check=True,
        )  # fmt: skip
        self.info = json.loads((self.directory / "cluster.json").read_text())

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        conn = await asyncpg.connect(self.db_url)
        try:
            return await conn.fetch(sql, *args)
        finally:
            await conn.close()

    async def node_of(self, sandbox_id: str) -> str:
        rows = await self.fetch("SELECT node_id FROM sandboxes WHERE id = $1", sandbox_id)
        return str(rows[0]["node_id"])

    async def tenant(self, **quotas: int) -> str:
        """A new tenant's API key."""
        body: dict[str, Any] = {"name": f"cl-{secrets.token_hex(6)}"}
        if quotas:
            body["quotas"] = quotas
        async with self.http(self.apis[0], self.operator_key) as op:
            r = await op.post("/v1/tenants", json=body)
        assert r.status_code == 201, r.text
        return str(r.json()["api_key"])

    async def sandbox(self, key: str, via: int = 0, **body: Any) -> str:
        async with self.http(self.apis[via], key) as http:
            r = await http.post("/v1/sandboxes", json={"ttl_s": 900, **body})
        assert r.status_code == 201, r.text
        assert r.json()["state"] == "running", r.json()
        self.made.append((key, r.json()["id"]))
        return str(r.json()["id"])


async def wait_for(check: Callable[[], Awaitable[T]], timeout_s: float = 30.0) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        result = await check()
        if result or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.2)


async def serve_here(app: web.Application) -> tuple[web.AppRunner, int]:
    """`app` served on a free port of this host's loopback; the runner cleans it up."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


class TraceSink:
    """An OTLP/HTTP receiver the cluster's processes export their spans to."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/traces", self._receive)
        self._runner, port = await serve_here(app)
        self.url = f"http://127.0.0.1:{port}/v1/traces"

    async def _receive(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest.FromString(await request.read())
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(scope.spans)
        return web.Response(content_type="application/x-protobuf")

    def of_trace(self, trace_id: bytes) -> list[Span]:
        return [s for s in self.spans if s.trace_id == trace_id]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture(scope="module")
async def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Cluster]:
    """The module's cluster; a module's `CLUSTER_ENV` adds to (or overrides) its settings."""
    images.build_default_image(SHARED_STATE)  # instant when built
    directory = tmp_path_factory.mktemp("cluster")
    database = f"airlock_cluster_{secrets.token_hex(4)}"
    admin = pg_admin_url()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")},
        "AIRLOCK_RUNTIME": "gvisor",
        "AIRLOCK_NODE_LEASE_S": str(LEASE_S),
        "AIRLOCK_NODE_HEARTBEAT_S": "1",
        "AIRLOCK_TTL_REAPER_INTERVAL_S": "1",
        "AIRLOCK_POOL_REFILL_INTERVAL_S": "1",
        "AIRLOCK_TEST_PG_ADMIN_URL": admin,  # scripts/postgres.sh answers with it
    }
    env.update(getattr(request.module, "CLUSTER_ENV", {}))
    if os.environ.get("AIRLOCK_RUNSC_PLATFORM"):
        env["AIRLOCK_RUNSC_PLATFORM"] = os.environ["AIRLOCK_RUNSC_PLATFORM"]
    # Every process traces, to a receiver here: a request's spans can be followed across them.
    traces = TraceSink()
    await traces.start()
    env["OTEL_TRACES_EXPORTER"] = "otlp"
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = traces.url
    env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
    started = await asyncio.to_thread(
        subprocess.run,
        ["bash", str(REPO / "scripts/cluster.sh"), "start", "--dir", str(directory),
         "--nodes", "2", "--apis", "2", "--port", "0", "--database", database,
         "--images", str(SHARED_STATE / "images")],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    info_path = directory / "cluster.json"
    try:
        if started.returncode != 0:
            logs = "\n".join(
                f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                for p in directory.glob("*.log")
            )
            pytest.fail(f"cluster did not start:\n{started.stderr[-4000:]}\n{logs}")
        db_url = f"{admin.rsplit('/', 1)[0]}/{database}"
        yield Cluster(directory, json.loads(info_path.read_text()), db_url, traces=traces)
    finally:
        await traces.stop()
        await asyncio.to_thread(
            subprocess.run,
            ["bash", str(REPO / "scripts/cluster.sh"), "stop", "--clean", "--dir", str(directory)],
            capture_output=True,
        )  # fmt: skip
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        finally:
            await conn.close()


@pytest.fixture(autouse=True)
async def _delete_sandboxes(cluster: Cluster) -> AsyncIterator[None]:
    """What a test made is deleted after it: the nodes' capacity is real."""
    yield
    made, cluster.made = cluster.made, []
    for key, sandbox in made:
        with contextlib.suppress(httpx.HTTPError):
            async with cluster.http(cluster.apis[0], key) as http:
                await http.delete(f"/v1/sandboxes/{sandbox}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing test shows the end of every process's log."""
    outcome = yield
    report = outcome.get_result()
    cluster = getattr(item, "funcargs", {}).get("cluster")
    if report.failed and cluster is not None:
        for p in cluster.info["processes"]:
            tail = "\n".join(cluster.log(p["name"]).splitlines()[-40:])
            report.sections.append((f"{p['name']} log (last 40 lines)", tail))
