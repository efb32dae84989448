"""A run of code in a warm execution context against an exec of `python3 -c`, on one sandbox.

Starts a real `airlock serve` (gVisor runtime, its own state dir and database), makes one
sandbox and a context in it (`x` set once), and times, round after round so all see the same
machine load, through aiohttp with each answer checked:

- `POST …/execs` of `python3 -c 'print(1)'` (a new interpreter each time),
- `POST …/contexts/{ctx}/run` of `x + 1` right after that exec,
- the same run again, right after the first (runs in a row, as an agent's cells come).

Prints median and p95 and the ratios at the median (target: a run in a warm context >= 10x
faster than the exec). A run right after another process in the sandbox pays for gVisor
waking the interpreter's threads: both are shown.

    .venv/bin/python bench/interpreter.py [--runs 100] [--json PATH]

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

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from api import local_server, pct  # noqa: E402

from bench.tables import MEDIAN_P95, Better, Column, Label, Report, json_argument  # noqa: E402

QUOTAS = {"execs_per_minute": 1_000_000}
WARMUP = 5


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    json_argument(parser)
    args = parser.parse_args()
    report = Report("interpreter", args)
    async with local_server() as server, aiohttp.ClientSession(server.base) as http:
        report.database = server.db_kind
        op = {"Authorization": f"Bearer {server.operator}"}
        body = {"name": f"bench-{secrets.token_hex(4)}", "quotas": QUOTAS}
        async with http.post("/v1/tenants", json=body, headers=op) as r:
            assert r.status == 201, await r.text()
            auth = {"Authorization": f"Bearer {(await r.json())['api_key']}"}
        await run(http, auth, args.runs, report)
    report.write()


async def timed_post(
    http: aiohttp.ClientSession, auth: dict[str, str], path: str, body: dict[str, object]
) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    async with http.post(path, json=body, headers=auth) as r:
        answer = await r.json()
    elapsed = time.perf_counter() - started
    assert r.status in (200, 201), answer
    return elapsed, answer


async def run(http: aiohttp.ClientSession, auth: dict[str, str], runs: int, report: Report) -> None:
    _, sandbox = await timed_post(http, auth, "/v1/sandboxes", {"ttl_s": 3600})
    base = f"/v1/sandboxes/{sandbox['id']}"
    _, context = await timed_post(http, auth, f"{base}/contexts", {})
    run_path = f"{base}/contexts/{context['id']}/run"
    await timed_post(http, auth, run_path, {"code": "x = 41"})
    times: dict[str, list[float]] = {"exec": [], "after": [], "row": []}
    exec_body = {"cmd": ["python3", "-c", "print(1)"]}
    for i in range(runs + WARMUP):
        took: dict[str, float] = {}
        took["exec"], done = await timed_post(http, auth, f"{base}/execs", exec_body)
        assert done["exit_code"] == 0 and done["stdout"] == "1\n", done
        for kind in ("after", "row"):
            took[kind], ran = await timed_post(http, auth, run_path, {"code": "x + 1"})
            assert ran["results"] == [{"data": {"text/plain": "42"}}], ran
        if i >= WARMUP:
            for kind, value in took.items():
                times[kind].append(value)
    async with http.delete(base, headers=auth):
        pass

    print(f"{runs} rounds, after {WARMUP} untimed ({report.database}, gVisor)")
    latency = report.table(
        "code in a warm context against an exec",
        Label("path", 40),
        *MEDIAN_P95,
    )
    latency.heading()
    labels = {
        "exec": "exec `python3 -c 'print(1)'`",
        "after": "run `x + 1`, right after the exec",
        "row": "run `x + 1`, right after another run",
    }
    for kind, values in times.items():
        latency.row(labels[kind], statistics.median(values) * 1e3, pct(values, 95) * 1e3)
    med = {kind: statistics.median(values) for kind, values in times.items()}
    ratios = report.table(
        "ratios at the median",
        Label("", 0),
        Column("exec / run in a row", "x", Better.HIGHER, format=".1f"),  # target >= 10x
        Column("exec / run after an exec", "x", Better.HIGHER, format=".1f"),
    )
    in_a_row, after_exec = med["exec"] / med["row"], med["exec"] / med["after"]
    ratios.record("median", in_a_row, after_exec)
    print(
        f"exec / run in a row at the median: {in_a_row:.1f}x (target >= 10x)\n"
        f"exec / run right after an exec at the median: {after_exec:.1f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
