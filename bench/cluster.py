"""What routing through an API replica costs, and what a second node gives, measured side by
side in one run.

Starts an all-in-one `airlock serve` (its own database) and a local cluster of two nodes and one
API replica behind its nginx (scripts/cluster.py, its own database), both on gVisor on this
machine. Prints:

- an exec of `true`, and a 10 MiB download, through the all-in-one server, through the replica
  (which forwards to the node), through the nginx in front of the replica as the chart deploys
  it (which fetches a download from the node itself once the replica has authorized it), and
  on the node itself called directly (the node token a replica would send, minted here with
  the cluster's key): median and p90 of each, interleaved so all see the same machine load,
  and what each routed path adds at the median against the all-in-one server (target: < 2 ms)
  and against the node alone (the hop's own cost: the all-in-one server is one process where
  the cluster splits the work over two), both as the difference of the medians and as the
  median of the differences within each round;
- creates per second through the replica, with one node taking them (the other drained) and
  with both.

    .venv/bin/python bench/cluster.py [--runs 200] [--downloads 30] [--creates 12]
                                      [--parallel 4] [--json PATH]

Needs PostgreSQL: AIRLOCK_TEST_PG_ADMIN_URL (scripts/postgres.sh prints one). The nodes share
this machine's CPUs, so the second node's gain here is the most two processes on the same cores
can give, not what a second host would. `--json PATH` also writes the figures to PATH for
`bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import (  # noqa: E402
    local_cluster,
    local_server,
    pct,
)
from bench.tables import Better, Column, Label, Report, json_argument  # noqa: E402
from service.auth.keyring import KeyRing  # noqa: E402
from service.auth.principal import SCOPES, Principal, PrincipalKind  # noqa: E402
from service.nodes.credentials import NodeCredentials  # noqa: E402

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
        self.tenant_id = self.key_id = ""

    async def open(self) -> None:
        self.http = aiohttp.ClientSession(self.base)
        op = {"Authorization": f"Bearer {self.operator}"}
        body = {"name": f"bench-{secrets.token_hex(3)}", "quotas": QUOTAS}
        async with self.http.post("/v1/tenants", json=body, headers=op) as r:
            assert r.status == 201, await r.text()
            made = await r.json()
        self.auth = {"Authorization": f"Bearer {made['api_key']}"}
        self.tenant_id, self.key_id = made["tenant"]["id"], made["api_key_id"]
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

    async def node(self) -> str:
        async with self.http.get(f"/v1/sandboxes/{self.sandbox}", headers=self.auth) as r:
            assert r.status == 200, await r.text()
            return str((await r.json())["node_id"])

    def headers(self) -> dict[str, str]:
        return self.auth

    async def exec_true(self) -> float:
        t0 = time.perf_counter()
        async with self.http.post(
            f"/v1/sandboxes/{self.sandbox}/execs", json={"cmd": ["true"]}, headers=self.headers()
        ) as r:
            body = await r.json()
        elapsed = time.perf_counter() - t0
        assert r.status == 200 and body["exit_code"] == 0, body
        return elapsed

    async def download(self) -> float:
        t0 = time.perf_counter()
        size = 0
        async with self.http.get(self.files, headers=self.headers()) as r:
            assert r.status == 200, await r.text()
            async for chunk in r.content.iter_any():
                size += len(chunk)
        elapsed = time.perf_counter() - t0
        assert size == 10 * MIB
        return elapsed


class Shared(Target):
    """The replica's tenant and sandbox, called at another address."""

    def __init__(self, name: str, routed: Target, base: str) -> None:
        super().__init__(name, base, "")
        self.routed = routed

    async def open(self) -> None:
        self.http = aiohttp.ClientSession(self.base)
        self.sandbox, self.auth = self.routed.sandbox, self.routed.auth


class Direct(Shared):
    """The replica's tenant and sandbox, called on its node as the replica would call it."""

    def __init__(self, routed: Target, node_id: str, node_url: str, env: dict[str, str]) -> None:
        super().__init__("node alone (no replica)", routed, node_url)
        self.credentials = NodeCredentials(
            KeyRing(Path(env["AIRLOCK_JWT_KEYS_DIR"])),
            issuer=env.get("AIRLOCK_JWT_ISSUER", "airlock"),
        )
        self.principal = Principal(
            kind=PrincipalKind.API_KEY,
            actor=routed.key_id,
            tenant_id=routed.tenant_id,
            scopes=frozenset(SCOPES),
            key_id=routed.key_id,
        )
        self.node_id = node_id

    def headers(self) -> dict[str, str]:  # reminted before it runs out, as a replica does
        token = self.credentials.mint(self.principal, "127.0.0.1", self.node_id)
        return {"Authorization": f"Bearer {token}"}


async def interleaved(targets: list[Target], what: str, runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {t.name: [] for t in targets}
    for _ in range(3):  # warm-up, not counted
        for t in targets:
            await getattr(t, what)()
    for i in range(runs):
        for t in targets[i % len(targets) :] + targets[: i % len(targets)]:
            times[t.name].append(await getattr(t, what)())
    return times


def report(
    title: str, times: dict[str, list[float]], routed: list[str], tables: Report, kind: str
) -> None:
    """Print the figures of one kind of request, and keep them (they are printed in
    sentences) as the tables `kind` and `kind: what routing adds`."""
    latency = tables.table(
        kind,
        Label("path", 0),
        Column("p50 ms", "ms", Better.LOWER, format=".2f"),
        Column("p90 ms", "ms", Better.LOWER, format=".2f"),
    )
    adds = tables.table(
        f"{kind}: what routing adds",
        Label("routed path against", 0),
        Column("added at the median ms", "ms", Better.LOWER, format=".2f"),
        Column("ratio at the median", "x", Better.LOWER, format=".2f"),
        Column("median of the differences ms", "ms", Better.LOWER, format=".2f"),
    )
    print(f"\n{title}")
    for name, values in times.items():
        ms = [v * 1000 for v in values]
        latency.record(name, statistics.median(ms), pct(ms, 90))
        print(f"  {name:34} p50 {statistics.median(ms):8.2f} ms   p90 {pct(ms, 90):8.2f} ms")
    for path in routed:
        print(f"  {path}:")
        for name in times:
            if name in routed:
                continue
            added = (statistics.median(times[path]) - statistics.median(times[name])) * 1000
            ratio = statistics.median(times[path]) / statistics.median(times[name])
            # Each round times every path back to back: the difference within a round sees
            # one machine load, so its median moves less with the load than the medians'.
            paired = statistics.median(r - o for r, o in zip(times[path], times[name], strict=True))
            adds.record(f"{path} against {name}", added, ratio, paired * 1000)
            print(
                f"    routing adds {added:+.2f} ms at the median against {name} ({ratio:.2f}x); "
                f"median of the differences within a round {paired * 1000:+.2f} ms"
            )


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
    json_argument(parser)
    args = parser.parse_args()
    tables = Report("cluster", args)
    if not os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL"):
        raise SystemExit("set AIRLOCK_TEST_PG_ADMIN_URL (scripts/postgres.sh prints one)")
    async with (
        local_server(stop_timeout_s=30) as server,
        local_cluster("cluster", nodes=2, apis=1) as info,
    ):
        tables.database = server.db_kind
        await run(args, server.base, server.operator, info, tables)
    tables.write()


async def run(
    args: argparse.Namespace, local_url: str, operator: str, info: dict, tables: Report
) -> None:
    cluster_operator = info["env"]["AIRLOCK_OPERATOR_KEY"]
    replica_url = next(p["url"] for p in info["processes"] if p["role"] == "api")
    proxy_url = next(p["url"] for p in info["processes"] if p["role"] == "proxy")
    local = Target("all-in-one", local_url, operator)
    routed = Target("replica -> node", replica_url, cluster_operator)
    proxied = Shared("nginx -> replica -> node", routed, proxy_url)
    targets: list[Target] = []
    try:
        for target in (local, routed):
            await target.open()
            targets.append(target)
        node_id = await routed.node()
        node_url = next(p["url"] for p in info["processes"] if p.get("node_id") == node_id)
        direct = Direct(routed, node_id, node_url, info["env"])
        for target in (proxied, direct):
            await target.open()
            targets.append(target)
        platform = os.environ.get("AIRLOCK_RUNSC_PLATFORM") or "chosen by probe"
        print(f"gVisor ({platform}); {os.cpu_count()} CPUs; PostgreSQL; aiohttp client")
        paths = [proxied.name, routed.name]
        times = await interleaved(targets, "exec_true", args.runs)
        report(f"exec `true`, {args.runs} runs each", times, paths, tables, "exec of true")
        times = await interleaved(targets, "download", args.downloads)
        report(
            f"10 MiB download, {args.downloads} runs each", times, paths, tables, "10 MiB download"
        )

        print(f"\ncreates per second through the replica ({args.creates} creates, "
              f"{args.parallel} at a time)")  # fmt: skip
        op = {"Authorization": f"Bearer {cluster_operator}"}
        async with routed.http.post("/v1/nodes/node-2/drain", headers=op) as r:
            assert r.status == 200, await r.text()
        one = await creates_per_second(routed, args.creates, args.parallel)
        async with routed.http.post("/v1/nodes/node-2/ready", headers=op) as r:
            assert r.status == 200, await r.text()
        two = await creates_per_second(routed, args.creates, args.parallel)
        creates = tables.table(
            "creates per second through the replica",
            Label("nodes", 0),
            Column("creates/s", "creates/s", Better.HIGHER, format=".2f"),
            Column("against one node", "x", Better.HIGHER, format=".2f"),
        )
        creates.record("one node", one, None)
        creates.record("two nodes", two, two / one)
        print(f"  one node   {one:6.2f} creates/s")
        print(f"  two nodes  {two:6.2f} creates/s   ({two / one:.2f}x)")
    finally:
        for t in targets:
            await t.http.close()


if __name__ == "__main__":
    asyncio.run(main())
