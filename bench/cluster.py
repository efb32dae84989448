"""What routing through an API replica costs, and what a second node gives, measured side by
side in one run.

Starts an all-in-one `airlock serve` (its own database) and a local cluster of two nodes and one
API replica (scripts/cluster.py, its own database), both on gVisor on this machine. Prints:

- an exec of `true`, and a 10 MiB download, through the all-in-one server and through the
  replica (which forwards to the node): median and p90 of each, interleaved so both see the
  same machine load, and what routing adds at the median (target: < 2 ms);
- creates per second through the replica, with one node taking them (the other drained) and
  with both.

    .venv/bin/python bench/cluster.py [--runs 200] [--downloads 30] [--creates 12]

Needs PostgreSQL: AIRLOCK_TEST_PG_ADMIN_URL (scripts/postgres.sh prints one). The nodes share
this machine's CPUs, so the second node's gain here is the most two processes on the same cores
can give, not what a second host would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import (  # noqa: E402
    database_url,
    destroy_all,
    drop_database,
    free_port,
    pct,
    state_dir,
    wait_ready,
)
from service.db import migrate  # noqa: E402
from service.runtime import images  # noqa: E402

MIB = 1 << 20
QUOTAS = {
    "execs_per_minute": 1_000_000,
    "max_sandboxes": 64,
    "max_vcpus": 64,
    "max_memory_mib": 65536,
    "max_running_execs": 64,
}


class Target:
    """A base URL, a tenant on it, one sandbox with a 10 MiB file."""

    def __init__(self, name: str, base: str, operator: str) -> None:
        self.name, self.base, self.operator = name, base, operator
        self.http: aiohttp.ClientSession
        self.auth: dict[str, str] = {}
        self.sandbox = ""

    async def open(self) -> None:
        self.http = aiohttp.ClientSession(self.base)
        op = {"Authorization": f"Bearer {self.operator}"}
        body = {"name": f"bench-{secrets.token_hex(3)}", "quotas": QUOTAS}
        async with self.http.post("/v1/tenants", json=body, headers=op) as r:
            assert r.status == 201, await r.text()
            self.auth = {"Authorization": f"Bearer {(await r.json())['api_key']}"}
        self.sandbox = await self.create()
        data = os.urandom(10 * MIB)
        async with self.http.put(self.files, data=data, headers=self.auth) as r:
            assert r.status == 201, await r.text()

    @property
    def files(self) -> str:
        return f"/v1/sandboxes/{self.sandbox}/files/work/ten.bin"

    async def create(self) -> str:
        body = {"ttl_s": 900, "cpus": 1, "memory_mib": 256, "disk_mib": 256}
        async with self.http.post("/v1/sandboxes", json=body, headers=self.auth) as r:
            assert r.status == 201, await r.text()
            return str((await r.json())["id"])

    async def delete(self, sandbox_id: str) -> None:
        async with self.http.delete(f"/v1/sandboxes/{sandbox_id}", headers=self.auth) as r:
            assert r.status == 204, await r.text()

    async def exec_true(self) -> float:
        t0 = time.perf_counter()
        async with self.http.post(
            f"/v1/sandboxes/{self.sandbox}/execs", json={"cmd": ["true"]}, headers=self.auth
        ) as r:
            body = await r.json()
        elapsed = time.perf_counter() - t0
        assert r.status == 200 and body["exit_code"] == 0, body
        return elapsed

    async def download(self) -> float:
        t0 = time.perf_counter()
        size = 0
        async with self.http.get(self.files, headers=self.auth) as r:
            assert r.status == 200, await r.text()
            async for chunk in r.content.iter_any():
                size += len(chunk)
        elapsed = time.perf_counter() - t0
        assert size == 10 * MIB
        return elapsed


async def interleaved(a: Target, b: Target, what: str, runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {a.name: [], b.name: []}
    for _ in range(3):  # warm-up, not counted
        await getattr(a, what)()
        await getattr(b, what)()
    for i in range(runs):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        times[first.name].append(await getattr(first, what)())
        times[second.name].append(await getattr(second, what)())
    return times


def report(title: str, times: dict[str, list[float]], local: str, routed: str) -> None:
    print(f"\n{title}")
    for name, values in times.items():
        ms = [v * 1000 for v in values]
        print(f"  {name:28} p50 {statistics.median(ms):8.2f} ms   p90 {pct(ms, 90):8.2f} ms")
    added = (statistics.median(times[routed]) - statistics.median(times[local])) * 1000
    ratio = statistics.median(times[routed]) / statistics.median(times[local])
    print(f"  routing adds {added:+.2f} ms at the median ({ratio:.2f}x)")


async def creates_per_second(target: Target, total: int, parallel: int) -> float:
    made: list[str] = []
    queue = list(range(total))

    async def worker() -> None:
        while queue:
            queue.pop()
            made.append(await target.create())

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(parallel)))
    elapsed = time.perf_counter() - t0
    for sandbox_id in made:
        await target.delete(sandbox_id)
    return total / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--downloads", type=int, default=30)
    parser.add_argument("--creates", type=int, default=12)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    admin = os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL")
    if not admin:
        raise SystemExit("set AIRLOCK_TEST_PG_ADMIN_URL (scripts/postgres.sh prints one)")

    images.build_default_image(REPO / ".airlock")
    with tempfile.TemporaryDirectory(prefix="airlock-bench-cluster-") as tmp:
        root = Path(tmp)
        url, _ = await database_url(root)
        await asyncio.to_thread(migrate.upgrade, url)
        operator = "alo_bench_" + secrets.token_urlsafe(32)
        port = free_port()
        env = {
            **os.environ,
            "AIRLOCK_STATE_DIR": str(state_dir(root, "all-in-one")),
            "AIRLOCK_DATABASE_URL": url,
            "AIRLOCK_RUNTIME": "gvisor",
            "AIRLOCK_OPERATOR_KEY": operator,
            "AIRLOCK_LOG_LEVEL": "WARNING",
        }
        log = (root / "all-in-one.log").open("wb")
        proc = subprocess.Popen(  # noqa: ASYNC220
            [str(REPO / ".venv/bin/airlock"), "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        cluster_dir = root / "cluster"
        database = f"airlock_bench_cluster_{secrets.token_hex(4)}"
        cluster_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")},
            "AIRLOCK_RUNTIME": "gvisor",
            "AIRLOCK_LOG_LEVEL": "WARNING",
        }
        if os.environ.get("AIRLOCK_RUNSC_PLATFORM"):
            cluster_env["AIRLOCK_RUNSC_PLATFORM"] = os.environ["AIRLOCK_RUNSC_PLATFORM"]
        script = [sys.executable, str(REPO / "scripts/cluster.py")]
        try:
            subprocess.run(  # noqa: ASYNC221
                [*script, "start", "--dir", str(cluster_dir), "--nodes", "2", "--apis", "1",
                 "--port", str(free_port() % 20000 + 30000), "--database", database,
                 "--admin-url", admin, "--images", str(REPO / ".airlock" / "images")],
                env=cluster_env, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            info = json.loads((cluster_dir / "cluster.json").read_text())
            replica = next(p["url"] for p in info["processes"] if p["role"] == "api")
            await wait_ready(f"http://127.0.0.1:{port}", proc)
            await run(args, f"http://127.0.0.1:{port}", operator, replica, info)
        finally:
            subprocess.run(  # noqa: ASYNC221
                [*script, "stop", "--clean", "--dir", str(cluster_dir)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            proc.terminate()
            proc.wait(timeout=30)
            await destroy_all(root / "all-in-one")
            log.close()
            await drop_database(url)
            await drop_database(f"postgresql+asyncpg:///{database}")


async def run(
    args: argparse.Namespace, local_url: str, operator: str, replica_url: str, info: dict
) -> None:
    cluster_operator = info["env"]["AIRLOCK_OPERATOR_KEY"]
    local = Target("all-in-one", local_url, operator)
    routed = Target("replica -> node", replica_url, cluster_operator)
    await local.open()
    await routed.open()
    try:
        platform = os.environ.get("AIRLOCK_RUNSC_PLATFORM") or "chosen by probe"
        print(f"gVisor ({platform}); {os.cpu_count()} CPUs; PostgreSQL; aiohttp client")
        times = await interleaved(local, routed, "exec_true", args.runs)
        report(f"exec `true`, {args.runs} runs each", times, local.name, routed.name)
        times = await interleaved(local, routed, "download", args.downloads)
        report(f"10 MiB download, {args.downloads} runs each", times, local.name, routed.name)

        print(f"\ncreates per second through the replica ({args.creates} creates, "
              f"{args.parallel} at a time)")  # fmt: skip
        op = {"Authorization": f"Bearer {cluster_operator}"}
        async with routed.http.post("/v1/nodes/node-2/drain", headers=op) as r:
            assert r.status == 200, await r.text()
        one = await creates_per_second(routed, args.creates, args.parallel)
        async with routed.http.post("/v1/nodes/node-2/ready", headers=op) as r:
            assert r.status == 200, await r.text()
        two = await creates_per_second(routed, args.creates, args.parallel)
        print(f"  one node   {one:6.2f} creates/s")
        print(f"  two nodes  {two:6.2f} creates/s   ({two / one:.2f}x)")
    finally:
        await local.http.close()
        await routed.http.close()


if __name__ == "__main__":
    asyncio.run(main())
