"""Time to a first exec result: cold start, start from a template's snapshot, warm pool claim.

Starts a real `airlock serve` (gVisor runtime, its own state dir and database), builds one
shared template twice over (one without a pool, one with a pool), then, interleaved so all see
the same machine load, times "create a sandbox and get the result of its first exec" for:

- a cold start from the image (no template),
- a start from the template's snapshot (no pool),
- a claim from the warm pool (the pool refilled between runs, untimed),

beside a bare exec on a sandbox that already exists. The timed requests go through aiohttp
(httpx alone spends about a millisecond of CPU per request here; see bench/api.py). Every
timed path starts on a settled host
(the pool full, and half a second for the background work of the one before: a refill, a
destroy). Prints median and p95 and the ratios
(targets: warm claim >= 10x faster than cold at the median, within 2x of a bare exec).

    .venv/bin/python bench/pool.py [--runs 20] [--json PATH]

Uses PostgreSQL when AIRLOCK_TEST_PG_ADMIN_URL is set, otherwise the embedded SQLite database.
`--json PATH` also writes the tables to PATH for `bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from api import Server, local_server, pct  # noqa: E402

from bench.tables import MEDIAN_P95, Better, Column, Label, Report, json_argument  # noqa: E402

SITE = "/home/sandbox/venv/lib/python3.11/site-packages"
SETUP = [
    ["python3", "-m", "venv", "--without-pip", "/home/sandbox/venv"],
    ["/bin/sh", "-c", f"printf 'VALUE = 42\\n' > {SITE}/airlock_probe.py"],
]
FIRST_EXEC = {"cmd": ["true"]}
SETTLE_S = 0.5
QUOTAS = {
    "execs_per_minute": 1_000_000,
    "max_sandboxes": 50,
    "max_vcpus": 64,
    "max_memory_mib": 64_000,
}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    json_argument(parser)
    args = parser.parse_args()
    report = Report("pool", args)

    async with (
        local_server({"AIRLOCK_POOL_REFILL_INTERVAL_S": "0.2"}) as server,
        httpx.AsyncClient(base_url=server.base, timeout=120) as client,
        aiohttp.ClientSession(server.base) as lean,
    ):
        report.database = server.db_kind
        await run(client, lean, server, args.runs, report)
    report.write()


async def build(client: httpx.AsyncClient, op: dict[str, str], name: str) -> None:
    r = await client.post("/v1/templates", json={"name": name, "setup": SETUP}, headers=op)
    r.raise_for_status()
    for _ in range(1200):
        state = (await client.get(f"/v1/templates/{name}", headers=op)).json()["state"]
        if state in ("ready", "failed"):
            assert state == "ready", (await client.get(f"/v1/templates/{name}", headers=op)).text
            return
        await asyncio.sleep(0.1)
    raise SystemExit(f"template {name} did not build")


async def pool_ready(client: httpx.AsyncClient, op: dict[str, str], name: str, n: int) -> None:
    for _ in range(1200):
        pools = (await client.get("/v1/pool", headers=op)).json()["pools"]
        status = next(p for p in pools if p["template"] == name)
        if status["ready"] >= n and status["starting"] == 0:
            return
        await asyncio.sleep(0.05)
    raise SystemExit("the pool did not refill")


async def tenant(client: httpx.AsyncClient, op: dict[str, str]) -> dict[str, str]:
    body = {"name": f"bench-{secrets.token_hex(4)}", "quotas": QUOTAS}
    r = await client.post("/v1/tenants", json=body, headers=op)
    r.raise_for_status()
    return {"Authorization": f"Bearer {r.json()['api_key']}"}


CREATE_ONLY: dict[str, list[float]] = {"cold": [], "snapshot": [], "warm": []}


async def start_and_exec(
    lean: aiohttp.ClientSession, auth: dict[str, str], body: dict[str, Any], kind: str
) -> tuple[float, str, str]:
    """Seconds to a first exec result; the sandbox id and how it started."""
    t0 = time.perf_counter()
    async with lean.post("/v1/sandboxes", json={"ttl_s": 600, **body}, headers=auth) as r:
        sandbox = await r.json()
    created = time.perf_counter() - t0
    assert r.status == 201, sandbox
    async with lean.post(
        f"/v1/sandboxes/{sandbox['id']}/execs", json=FIRST_EXEC, headers=auth
    ) as r:
        result = await r.json()
    elapsed = time.perf_counter() - t0
    assert r.status == 200 and result["exit_code"] == 0, result
    CREATE_ONLY[kind].append(created)
    return elapsed, sandbox["id"], sandbox["started_from"]


async def run(
    client: httpx.AsyncClient,
    lean: aiohttp.ClientSession,
    server: Server,
    runs: int,
    report: Report,
) -> None:
    op = {"Authorization": f"Bearer {server.operator}"}
    await build(client, op, "bench-snap")
    await build(client, op, "bench-pool")
    r = await client.put("/v1/pool/bench-pool", json={"size": "small", "target": 2}, headers=op)
    r.raise_for_status()
    auth = await tenant(client, op)
    r = await client.post("/v1/sandboxes", json={"ttl_s": 3600}, headers=auth)
    r.raise_for_status()
    existing = r.json()["id"]

    async def bare() -> float:
        t0 = time.perf_counter()
        async with lean.post(f"/v1/sandboxes/{existing}/execs", json=FIRST_EXEC, headers=auth) as r:
            result = await r.json()
        elapsed = time.perf_counter() - t0
        assert r.status == 200 and result["exit_code"] == 0, result
        return elapsed

    times: dict[str, list[float]] = {"cold": [], "snapshot": [], "warm": [], "bare": []}

    async def settled() -> None:
        # Each timed path starts on a settled host: the pool full, and the background work of
        # the path before (a refill, a destroy, an agent starting) given time to finish.
        await pool_ready(client, op, "bench-pool", 2)
        await asyncio.sleep(SETTLE_S)

    for i in range(runs + 2):  # the first two rounds warm every path up and are not counted
        rounds: dict[str, float] = {}
        made: list[tuple[dict[str, str], str]] = []
        for kind, body in (("cold", {}), ("snapshot", {"template": "bench-snap"})):
            await settled()
            rounds[kind], sid, started = await start_and_exec(lean, auth, body, kind)
            assert started == ("image" if kind == "cold" else "snapshot"), started
            made.append((auth, sid))
        # one fresh tenant per claim: a tenant's fair share would otherwise cap its claims
        claimer = await tenant(client, op)
        await settled()
        rounds["warm"], sid, started = await start_and_exec(
            lean, claimer, {"template": "bench-pool"}, "warm"
        )
        assert started == "pool", f"run {i}: the warm create started from {started}"
        made.append((claimer, sid))
        await settled()
        rounds["bare"] = await bare()
        for who, sid in made:
            await client.delete(f"/v1/sandboxes/{sid}", headers=who)
        if i >= 2:
            for kind, value in rounds.items():
                times[kind].append(value)

    labels = {
        "cold": "cold start from the image",
        "snapshot": "start from the template snapshot",
        "warm": "claim from the warm pool",
        "bare": "bare exec, existing sandbox",
    }
    print(f"create + first exec (`true`), {runs} interleaved runs each ({server.db_kind}, gVisor);")
    print("`create ms`: the median of the create request alone")
    first_exec = report.table(
        "create and first exec",
        Label("path", 36),
        *MEDIAN_P95,
        Column("create ms", "ms", Better.LOWER, width=11),
    )
    first_exec.heading()
    for kind, values in times.items():
        create = CREATE_ONLY.get(kind, [])[2:]  # the counted runs only
        first_exec.row(
            labels[kind],
            statistics.median(values) * 1e3,
            pct(values, 95) * 1e3,
            statistics.median(create) * 1e3 if create else None,
        )
    med = {kind: statistics.median(values) for kind, values in times.items()}
    ratios = report.table(
        "ratios at the median",
        Label("", 0),
        Column("cold / warm", "x", Better.HIGHER, format=".1f"),  # target >= 10x
        # no goal of its own: both figures are in the table above
        Column("snapshot / warm", "x", Better.NEITHER, format=".1f"),
        Column("warm / bare exec", "x", Better.LOWER, format=".2f"),  # target <= 2x
    )
    cold_warm, snapshot_warm = med["cold"] / med["warm"], med["snapshot"] / med["warm"]
    warm_bare = med["warm"] / med["bare"]
    ratios.record("median", cold_warm, snapshot_warm, warm_bare)
    print(
        f"cold / warm at the median: {cold_warm:.1f}x (target >= 10x)\n"
        f"snapshot / warm at the median: {snapshot_warm:.1f}x\n"
        f"warm / bare exec at the median: {warm_bare:.2f}x (target <= 2x)"
    )
    await client.delete(f"/v1/sandboxes/{existing}", headers=auth)


if __name__ == "__main__":
    asyncio.run(main())
