"""Exec overhead of the API against the runtime itself, measured side by side in one run.

Starts a real `airlock serve` (gVisor runtime, its own state dir and database), and in this
process a GVisorRuntime of its own. Prints the median and p95 of an exec of `true` through
the API and directly through the runtime, interleaved so all see the same machine load, the
ratio and the difference; then execs per second through the API with 1, 8 and 32 concurrent
clients. The API is timed with two HTTP clients: httpx (what the generated Python client
uses; it spends ~1.3 ms of CPU per request here by itself) and aiohttp (C-accelerated), so the
service's own overhead and what a Python httpx caller sees are both shown. The overhead is
given twice: the difference of the two medians (paths timed apart, each with the runtime's own
spread of several ms), and exec by exec, each API exec's time less the runtime's part of that
same exec as the server measured it (its `Server-Timing` header), with that part's median
beside the runtime's directly, so time the server lost inside the runtime's part shows too.
Then `GET /healthz` back to back, and each after a pause as long as an exec: what this host adds
to a request its processes serve after waiting that long, which an exec's answer always is.

    .venv/bin/python bench/api.py [--runs 200] [--seconds 10] [--json PATH]

Uses PostgreSQL when AIRLOCK_TEST_PG_ADMIN_URL is set (as `scripts/test.sh` does), otherwise
the embedded SQLite database. `--json PATH` also writes the tables to PATH for
`bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import uvloop

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.tables import MEDIAN_P95, Better, Column, Label, Report, json_argument  # noqa: E402
from service.db import migrate  # noqa: E402
from service.runtime import ExecRequest, SandboxSpec, images  # noqa: E402
from service.runtime.gvisor import GVisorRuntime, destroy_left  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A process that holds `size` bytes of random memory (a checkpoint cannot compress it), says so
# in /work/ready, and idles. The buffer is made once and written 1 MiB at a time, so the
# process never needs more than `size` and a MiB (`bytearray(os.urandom(size))` held the bytes
# and their copy at once: twice `size`, past a sandbox's memory cap when `size` is half of it).
HOLD = (
    "import os, time\n"
    "held = bytearray({size})\n"
    "for at in range(0, len(held), 1 << 20):\n"
    "    held[at:at + (1 << 20)] = os.urandom(min(1 << 20, len(held) - at))\n"
    "open('/work/ready', 'w').write('1')\n"
    "while True: time.sleep(1)\n"
)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def runtime_s(server_timing: str | None) -> float | None:
    """The `runtime` duration of an exec's `Server-Timing` header, in seconds (None from a
    server that does not send it: a version before it, compared with this bench)."""
    for entry in (server_timing or "").split(","):
        name, *params = (part.strip() for part in entry.split(";"))
        if name == "runtime":
            for param in params:
                key, _, value = param.partition("=")
                if key == "dur":
                    return float(value) / 1e3
    return None


def state_dir(root: Path, name: str) -> Path:
    path = root / name
    path.mkdir()
    (path / "images").symlink_to(REPO / ".airlock" / "images")
    return path


async def database_url(root: Path) -> tuple[str, str]:
    admin = os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL")
    if not admin:
        return f"sqlite+aiosqlite:///{root / 'bench.db'}", "SQLite"
    import asyncpg
    from sqlalchemy.engine import make_url

    name = f"airlock_bench_{secrets.token_hex(4)}"
    conn = await asyncpg.connect(admin)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = make_url(admin).set(drivername="postgresql+asyncpg", database=name)
    return url.render_as_string(hide_password=False), "PostgreSQL"


async def drop_database(url: str) -> None:
    """The benchmark's PostgreSQL database goes with it (SQLite's is in the temporary dir)."""
    admin = os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL")
    if not admin or not url.startswith("postgresql"):
        return
    import asyncpg

    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def local_cluster(
    name: str, env: dict[str, str] | None = None, nodes: int = 2, apis: int = 1
) -> AsyncIterator[dict]:
    """A local cluster (scripts/cluster.py) on gVisor with its own database, for the length of
    the block; yields its cluster.json. `env`: AIRLOCK_* settings for every process (the
    caller's own AIRLOCK_* variables are not passed on, AIRLOCK_RUNSC_PLATFORM aside)."""
    admin = os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL")
    if not admin:
        raise SystemExit("set AIRLOCK_TEST_PG_ADMIN_URL (scripts/postgres.sh prints one)")
    images.build_default_image(REPO / ".airlock")
    script = [sys.executable, str(REPO / "scripts/cluster.py")]
    database = f"airlock_bench_{name}_{secrets.token_hex(4)}"
    cluster_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")},
        "AIRLOCK_RUNTIME": "gvisor",
        "AIRLOCK_LOG_LEVEL": "WARNING",
        **(env or {}),
    }
    if os.environ.get("AIRLOCK_RUNSC_PLATFORM"):
        cluster_env["AIRLOCK_RUNSC_PLATFORM"] = os.environ["AIRLOCK_RUNSC_PLATFORM"]
    with tempfile.TemporaryDirectory(prefix=f"airlock-bench-{name}-") as tmp:
        directory = Path(tmp) / "cluster"
        try:
            subprocess.run(  # noqa: ASYNC221
                [*script, "start", "--dir", str(directory), "--nodes", str(nodes),
                 "--apis", str(apis), "--port", "0",
                 "--database", database, "--admin-url", admin,
                 "--images", str(REPO / ".airlock" / "images")],
                env=cluster_env, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            yield json.loads((directory / "cluster.json").read_text())
        finally:
            subprocess.run(  # noqa: ASYNC221
                [*script, "stop", "--clean", "--dir", str(directory)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            await drop_database(f"postgresql+asyncpg:///{database}")


@dataclass
class Server:
    """An all-in-one `airlock serve` of a benchmark: where it answers, its operator key, its
    state dir, its database kind and its log file."""

    base: str
    operator: str
    state: Path
    db_kind: str
    log: Path


@contextlib.asynccontextmanager
async def local_server(
    env: dict[str, str] | None = None, stop_timeout_s: float = 60
) -> AsyncIterator[Server]:
    """An all-in-one `airlock serve` on gVisor with its own state dir and database (PostgreSQL
    when AIRLOCK_TEST_PG_ADMIN_URL is set, else SQLite), ready, for the length of the block;
    then stopped, every sandbox it left destroyed, its database dropped. `env`: AIRLOCK_*
    settings of its own."""
    images.build_default_image(REPO / ".airlock")
    with tempfile.TemporaryDirectory(prefix="airlock-bench-") as tmp:
        root = Path(tmp)
        url, db_kind = await database_url(root)
        try:
            await asyncio.to_thread(migrate.upgrade, url)
            server = Server(
                base=f"http://127.0.0.1:{free_port()}",
                operator="alo_bench_" + secrets.token_urlsafe(32),
                state=state_dir(root, "service"),
                db_kind=db_kind,
                log=root / "server.log",
            )
            proc_env = {
                **os.environ,
                "AIRLOCK_STATE_DIR": str(server.state),
                "AIRLOCK_DATABASE_URL": url,
                "AIRLOCK_RUNTIME": "gvisor",
                "AIRLOCK_OPERATOR_KEY": server.operator,
                "AIRLOCK_LOG_LEVEL": "WARNING",
                **(env or {}),
            }
            with server.log.open("wb") as log:
                proc = subprocess.Popen(  # noqa: ASYNC220
                    [str(REPO / ".venv/bin/airlock"), "serve", "--port",
                     server.base.rsplit(":")[-1]],
                    env=proc_env, stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
                try:
                    await wait_ready(server.base, proc)
                    yield server
                finally:
                    proc.terminate()
                    try:
                        proc.wait(timeout=stop_timeout_s)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
                    await destroy_left(server.state)
        finally:
            await drop_database(url)


async def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(int(timeout_s * 10)):
            if proc.poll() is not None:
                raise SystemExit("the server exited; see its log")
            try:
                if (await client.get(f"{base}/readyz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit("the server did not become ready")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    json_argument(parser)
    args = parser.parse_args()
    report = Report("api", args)
    with tempfile.TemporaryDirectory(prefix="airlock-bench-direct-") as direct_state:
        async with local_server() as server:
            report.database = server.db_kind
            # the platform the server chooses (AIRLOCK_RUNSC_PLATFORM, else the probe's)
            direct = await GVisorRuntime.open(
                state_dir(Path(direct_state), "direct"),
                os.environ.get("AIRLOCK_RUNSC_PLATFORM") or None,
            )
            report.runsc, report.platform = direct.runsc_version.split()[-1], direct.platform
            direct_ids: list[str] = []
            try:
                await run(server, direct, direct_ids, args, report)
            finally:
                for sid in direct_ids:
                    await direct.destroy(sid)
                await direct.close()
    report.write()


async def run(
    server: Server,
    direct: GVisorRuntime,
    direct_ids: list[str],
    args: argparse.Namespace,
    report: Report,
) -> None:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=server.base, timeout=60, limits=limits) as client:
        op = {"Authorization": f"Bearer {server.operator}"}
        quotas = {
            "execs_per_minute": 1_000_000,
            "max_sandboxes": 10,
            "max_vcpus": 64,
            "max_running_execs": 64,
        }
        r = await client.post("/v1/tenants", json={"name": "bench", "quotas": quotas}, headers=op)
        r.raise_for_status()
        auth = {"Authorization": f"Bearer {r.json()['api_key']}"}
        sandboxes = []
        for _ in range(4):
            r = await client.post("/v1/sandboxes", json={"ttl_s": 3600}, headers=auth)
            r.raise_for_status()
            sandboxes.append(r.json()["id"])
        info = await direct.create(images.DEFAULT_IMAGE, SandboxSpec(memory_mib=512))
        direct_ids.append(info.id)

        # Each API exec's time less the runtime's part of it, as the server measured it for
        # that exec (`Server-Timing`): what the API adds, paired exec by exec.
        paired: dict[str, list[float]] = {"httpx": [], "aiohttp": []}
        inside: list[float] = []  # the runtime's part, in the server

        async def api_exec(sandbox_id: str) -> float:
            t0 = time.perf_counter()
            r = await client.post(
                f"/v1/sandboxes/{sandbox_id}/execs", json={"cmd": ["true"]}, headers=auth
            )
            elapsed = time.perf_counter() - t0
            body = r.json()
            assert r.status_code == 200 and body["exit_code"] == 0, body
            runtime = runtime_s(r.headers.get("server-timing"))
            if runtime is not None:
                paired["httpx"].append(elapsed - runtime)
            return elapsed

        async def direct_exec() -> float:
            t0 = time.perf_counter()
            result = await direct.run(info.id, ExecRequest(argv=["true"]))
            elapsed = time.perf_counter() - t0
            assert result.exit_code == 0, result
            return elapsed

        async with aiohttp.ClientSession(server.base) as lean:

            async def lean_exec(sandbox_id: str) -> float:
                t0 = time.perf_counter()
                async with lean.post(
                    f"/v1/sandboxes/{sandbox_id}/execs", json={"cmd": ["true"]}, headers=auth
                ) as r:
                    body = await r.json()
                elapsed = time.perf_counter() - t0
                assert r.status == 200 and body["exit_code"] == 0, body
                runtime = runtime_s(r.headers.get("Server-Timing"))
                if runtime is not None:
                    paired["aiohttp"].append(elapsed - runtime)
                    inside.append(runtime)
                return elapsed

            for _ in range(10):  # warm every path
                await api_exec(sandboxes[0])
                await lean_exec(sandboxes[0])
                await direct_exec()
            times: dict[str, list[float]] = {"httpx": [], "aiohttp": [], "direct": []}
            for kept in (*paired.values(), inside):
                kept.clear()  # the warm-up's
            for _ in range(args.runs):
                times["httpx"].append(await api_exec(sandboxes[0]))
                times["aiohttp"].append(await lean_exec(sandboxes[0]))
                times["direct"].append(await direct_exec())

            # The same request back to back and after a pause as long as an exec: what this
            # host charges a request served after its processes waited that long.
            pause_s = statistics.median(times["direct"])

            async def health(pause: float) -> float:
                await asyncio.sleep(pause)
                t0 = time.perf_counter()
                async with lean.get("/healthz") as r:
                    await r.read()
                elapsed = time.perf_counter() - t0
                assert r.status == 200, r.status
                return elapsed

            alone = {
                "back to back": [await health(0) for _ in range(args.runs)],
                "a pause as long as an exec before": [
                    await health(pause_s) for _ in range(args.runs)
                ],
            }

        print(
            f"exec of `true`, {args.runs} runs each, interleaved ({server.db_kind} behind the "
            f"API; runsc {report.runsc}, platform {direct.platform})"
        )
        latency = report.table(
            "exec of true",
            Label("path", 30),
            *MEDIAN_P95,
        )
        latency.heading()
        labels = {
            "httpx": "API, httpx client",
            "aiohttp": "API, aiohttp client",
            "direct": "runtime directly",
        }
        for kind, values in times.items():
            latency.row(labels[kind], statistics.median(values) * 1e3, pct(values, 95) * 1e3)
        overhead = report.table(
            "API against the runtime directly",
            Label("client", 0),
            Column("ratio to direct at the median", "x", Better.LOWER, format=".2f"),
            Column("overhead at the median ms", "ms", Better.LOWER),
            Column("overhead at p95 ms", "ms", Better.LOWER),
        )
        direct_median, direct_p95 = statistics.median(times["direct"]), pct(times["direct"], 95)
        for kind in ("httpx", "aiohttp"):
            median = statistics.median(times[kind])
            ratio, extra = median / direct_median, (median - direct_median) * 1e3
            extra_p95 = (pct(times[kind], 95) - direct_p95) * 1e3
            overhead.record(labels[kind], ratio, extra, extra_p95)
            print(
                f"{labels[kind]}: ratio API/direct at the median {ratio:.2f}x; "
                f"API overhead at the median {extra:.1f} ms (p95: {extra_p95:.1f} ms)"
            )

        if inside:
            by_exec = report.table(
                "API overhead by exec",
                Label("client", 0),
                Column("overhead at the median ms", "ms", Better.LOWER),
                Column("overhead at p95 ms", "ms", Better.LOWER),
            )
            for kind in ("httpx", "aiohttp"):
                median, p95 = statistics.median(paired[kind]) * 1e3, pct(paired[kind], 95) * 1e3
                by_exec.record(labels[kind], median, p95)
                print(
                    f"{labels[kind]}, exec by exec (its time less its runtime part in the "
                    f"server's Server-Timing): API overhead at the median {median:.1f} ms "
                    f"(p95: {p95:.1f} ms)"
                )
            median = statistics.median(inside) * 1e3
            report.table(
                "runtime part in the server",
                Label("path", 0),
                Column("median ms", "ms", Better.LOWER),
            ).record("runtime part, aiohttp execs", median)
            print(
                f"the runtime's part in the server {median:.1f} ms at the median, the runtime "
                f"directly {direct_median * 1e3:.1f} ms"
            )
        else:
            print("(the server sends no Server-Timing: no overhead exec by exec)")

        print(
            "\nGET /healthz, aiohttp client: back to back, and each after a pause as long as "
            f"the runtime's median exec ({pause_s * 1e3:.1f} ms)"
        )
        pauses = report.table(
            "healthz",
            Label("when", 34),
            *MEDIAN_P95,
        )
        pauses.heading()
        for when, values in alone.items():
            pauses.row(when, statistics.median(values) * 1e3, pct(values, 95) * 1e3)

        print(f"\nexecs per second through the API ({args.seconds:.0f} s per level, 4 sandboxes)")
        throughput = report.table(
            "execs per second",
            Label("clients", 8, ">"),
            # the count follows from --seconds; `per s` is the figure to compare
            Column("execs", "execs", Better.NEITHER, width=8, format="d"),
            Column("per s", "execs/s", Better.HIGHER, width=8),
            Column("median ms", "ms", Better.LOWER, width=11),
            Column("p95 ms", "ms", Better.LOWER, width=9),
        )
        throughput.heading()
        for clients in (1, 8, 32):
            latencies: list[float] = []
            deadline = time.perf_counter() + args.seconds

            async def worker(
                n: int, latencies: list[float] = latencies, deadline: float = deadline
            ) -> None:
                while time.perf_counter() < deadline:
                    latencies.append(await api_exec(sandboxes[n % len(sandboxes)]))

            t0 = time.perf_counter()
            await asyncio.gather(*(worker(n) for n in range(clients)))
            wall = time.perf_counter() - t0
            throughput.row(
                clients,
                len(latencies),
                len(latencies) / wall,
                statistics.median(latencies) * 1e3,
                pct(latencies, 95) * 1e3,
            )
        for sandbox_id in sandboxes:
            await client.delete(f"/v1/sandboxes/{sandbox_id}", headers=auth)


if __name__ == "__main__":
    # The server's event loop (`airlock serve` runs on uvloop): the runtime timed directly in
    # this process then runs on the same loop as the runtime inside the server.
    uvloop.run(main())
