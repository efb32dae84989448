"""Another tenant's exec latency while one tenant floods the API, with the request limiter on
and off, side by side in one run.

Starts two `airlock serve` on gVisor, each with its own state dir and database (PostgreSQL when
AIRLOCK_TEST_PG_ADMIN_URL is set, else SQLite): one as configured by default (request rates
on), one with AIRLOCK_RATE_LIMITS=false. Tenant B runs `true` back to back in its sandbox,
timed, first alone (quiet) and then while tenant A's 16 clients send GET /v1/sandboxes back to
back, ignoring Retry-After (flood). Three setups: the limiter on with A on the default quotas
(reads_per_s 100), on with A at `--flood-reads-per-s` (an operator's choice for a tenant sharing
this small host), and off. The phases take turns across the setups for a few rounds, so all see
the same machine. Prints for each setup B's exec median and p95, quiet and under the flood,
and what the flood was answered: requests a second, 200s and 429s a second; on PostgreSQL also
the statements that took tokens from the shared buckets, per 100 requests the server counted.

    .venv/bin/python bench/fairness.py [--rounds 3] [--seconds 5] [--flood-reads-per-s 20]
                                       [--json PATH]

The flood's clients run on the same cores as the server (aiohttp, so that they take as little
of them as a Python client can). `--json PATH` also writes the table to PATH for
`bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import Server, local_server, pct  # noqa: E402
from bench.tables import Better, Column, Label, Report, json_argument  # noqa: E402

FLOOD_CLIENTS = 16
SERVERS = {"on": {"AIRLOCK_RATE_LIMITS": "true"}, "off": {"AIRLOCK_RATE_LIMITS": "false"}}


@dataclass
class Setup:
    """One server of the run and what was measured on it."""

    name: str
    server: Server
    http: aiohttp.ClientSession
    flooder_quotas: dict[str, int]
    flooder: dict[str, str] = field(default_factory=dict)
    other: dict[str, str] = field(default_factory=dict)
    sandbox: str = ""
    quiet: list[float] = field(default_factory=list)
    flooded: list[float] = field(default_factory=list)
    answers: Counter[int] = field(default_factory=Counter)
    flood_s: float = 0.0
    counted: float = 0.0  # requests the server counted while flooded
    claims: float = 0.0  # statements that took tokens from PostgreSQL meanwhile


async def tenant(setup: Setup, name: str, quotas: dict[str, int]) -> dict[str, str]:
    operator = {"Authorization": f"Bearer {setup.server.operator}"}
    body = {"name": name, "quotas": quotas}
    async with setup.http.post("/v1/tenants", json=body, headers=operator) as r:
        assert r.status == 201, await r.text()
        return {"Authorization": f"Bearer {(await r.json())['api_key']}"}


async def prepare(setup: Setup) -> None:
    slug = "".join(c if c.isalnum() else "-" for c in setup.name)
    setup.flooder = await tenant(setup, f"flooder {slug}", setup.flooder_quotas)
    # B runs execs back to back: past the default execs_per_minute, which is not measured here.
    setup.other = await tenant(setup, f"other {slug}", {"execs_per_minute": 1_000_000})
    async with setup.http.post("/v1/sandboxes", json={"ttl_s": 3600}, headers=setup.other) as r:
        assert r.status == 201, await r.text()
        setup.sandbox = (await r.json())["id"]
    for _ in range(10):  # warm every path
        await exec_true(setup)


async def exec_true(setup: Setup) -> float:
    t0 = time.perf_counter()
    async with setup.http.post(
        f"/v1/sandboxes/{setup.sandbox}/execs", json={"cmd": ["true"]}, headers=setup.other
    ) as r:
        body = await r.json()
    assert r.status == 200 and body["exit_code"] == 0, body
    return time.perf_counter() - t0


async def execs_for(setup: Setup, seconds: float, into: list[float]) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        into.append(await exec_true(setup))


async def hammer(setup: Setup, deadline: float) -> None:
    while time.perf_counter() < deadline:
        async with setup.http.get("/v1/sandboxes", headers=setup.flooder) as r:
            await r.read()
            setup.answers[r.status] += 1


async def metric(setup: Setup, name: str) -> float:
    """A counter of the server's /metrics, summed over its labels (0 when it has none)."""
    async with setup.http.get("/metrics") as r:
        text = await r.text()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and not line.startswith("#")
    )


async def flooded(setup: Setup, seconds: float) -> None:
    before = (
        await metric(setup, "airlock_requests_total"),
        await metric(setup, "airlock_rate_limit_claims_total"),
    )
    deadline = time.perf_counter() + seconds
    flood = [asyncio.create_task(hammer(setup, deadline)) for _ in range(FLOOD_CLIENTS)]
    await asyncio.sleep(0.5)  # the flood under way before B is timed
    t0 = time.perf_counter()
    await execs_for(setup, deadline - time.perf_counter(), setup.flooded)
    await asyncio.gather(*flood)
    setup.flood_s += time.perf_counter() - t0 + 0.5
    setup.counted += await metric(setup, "airlock_requests_total") - before[0]
    setup.claims += await metric(setup, "airlock_rate_limit_claims_total") - before[1]


def report(setups: list[Setup], args: argparse.Namespace, tables: Report) -> None:
    kind = setups[0].server.db_kind
    tables.database = kind
    print(
        f"tenant B's exec of `true` while tenant A floods GET /v1/sandboxes from "
        f"{FLOOD_CLIENTS} clients ({kind} behind the API; {args.rounds} rounds of "
        f"{args.seconds:g} s per phase, taking turns)"
    )
    columns = [
        Column("quiet p50", "ms", Better.LOWER, width=10),
        Column("flood p50", "ms", Better.LOWER, width=10),
        Column("ratio", "x", Better.LOWER, width=6, format=".2f", suffix="x"),
        Column("quiet p95", "ms", Better.LOWER, width=10),
        Column("flood p95", "ms", Better.LOWER, width=10),
        # what the flood was answered: how it splits is the limiter's design, not a goal
        Column("A req/s", "req/s", Better.NEITHER, width=9, format=".0f"),
        Column("A 200/s", "req/s", Better.NEITHER, width=9, format=".0f"),
        Column("A 429/s", "req/s", Better.NEITHER, width=9, format=".0f"),
    ]
    if kind == "PostgreSQL":
        columns.append(Column("claims/100 req", "statements", Better.LOWER, width=16))
    table = tables.table("B's exec of true under A's flood", Label("setup", 24), *columns)
    table.heading()
    for s in setups:
        q50, f50 = statistics.median(s.quiet) * 1e3, statistics.median(s.flooded) * 1e3
        total = sum(s.answers.values())
        figures = [
            q50,
            f50,
            f50 / q50,
            pct(s.quiet, 95) * 1e3,
            pct(s.flooded, 95) * 1e3,
            total / s.flood_s,
            s.answers[200] / s.flood_s,
            s.answers[429] / s.flood_s,
        ]
        if kind == "PostgreSQL":
            figures.append(100 * s.claims / s.counted if s.counted else 0)
        table.row(s.name, *figures)
    counts = ", ".join(f"{s.name} {len(s.quiet)} quiet, {len(s.flooded)} flooded" for s in setups)
    print(f"(latencies in ms; B's execs: {counts})")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--flood-reads-per-s", type=int, default=20)
    json_argument(parser)
    args = parser.parse_args()
    tables = Report("fairness", args)
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for name, env in SERVERS.items():
            server = await stack.enter_async_context(local_server(env))
            connector = aiohttp.TCPConnector(limit=2 * FLOOD_CLIENTS)
            http = await stack.enter_async_context(
                aiohttp.ClientSession(server.base, connector=connector)
            )
            sessions[name] = server, http
        limited = {"reads_per_s": args.flood_reads_per_s}
        setups = [
            Setup("on, A default quotas", *sessions["on"], {}),
            Setup(f"on, A {args.flood_reads_per_s} reads/s", *sessions["on"], limited),
            Setup("off", *sessions["off"], {}),
        ]
        for setup in setups:
            await prepare(setup)
        for _ in range(args.rounds):
            for setup in setups:
                await execs_for(setup, args.seconds, setup.quiet)
                await flooded(setup, args.seconds)
        report(setups, args, tables)
    tables.write()


if __name__ == "__main__":
    asyncio.run(main())
