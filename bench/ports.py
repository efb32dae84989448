"""A sandbox's port through the API against an exec and small file transfers, measured side by
side in one run.

Starts a real `airlock serve` (gVisor runtime, its own state dir and database), a sandbox
without network running a small HTTP server, and prints the median and p95 of: a GET of a
small page through /v1/sandboxes/{id}/ports/{port}/, an exec of `true` (the other way in),
an upload and a download of a 4 KiB file (`/v1/sandboxes/{id}/files/...`), and the throughput
of a 64 MiB download and upload through the port route. Interleaved so all see the same machine
load.

    .venv/bin/python bench/ports.py [--runs 100] [--json PATH]

Uses PostgreSQL when AIRLOCK_TEST_PG_ADMIN_URL is set, otherwise the embedded SQLite database.
`--json PATH` also writes the figures to PATH for `bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import local_server, pct  # noqa: E402
from bench.tables import Better, Column, Label, Report, json_argument  # noqa: E402

SERVER = r"""
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.reply(b"x" * (64 << 20) if self.path == "/big" else b"hello")
    def do_POST(self):
        left = int(self.headers["Content-Length"])
        while left:
            left -= len(self.rfile.read(min(left, 1 << 20)))
        self.reply(b"ok")
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), H).serve_forever()
"""


async def run(base: str, operator: str, runs: int, report: Report) -> None:
    # the figures are printed in sentences; kept as tables
    latency = report.table(
        "latency",
        Label("request", 0),
        Column("median ms", "ms", Better.LOWER, format=".2f"),
        Column("p95 ms", "ms", Better.LOWER, format=".2f"),
    )
    ratio_table = report.table(
        "GET via port against exec",
        Label("", 0),
        Column("ratio at the median", "x", Better.LOWER, format=".2f"),
    )
    throughput = report.table(
        "64 MiB through the port",
        Label("direction", 0),
        Column("MiB/s", "MiB/s", Better.HIGHER, format=".0f"),
    )
    async with aiohttp.ClientSession(base_url=base) as http:
        made = await http.post(
            "/v1/tenants", json={"name": "bench"}, headers={"Authorization": f"Bearer {operator}"}
        )
        key = (await made.json())["api_key"]
        auth = {"Authorization": f"Bearer {key}"}
        sandbox = await (await http.post("/v1/sandboxes", json={"ttl_s": 900}, headers=auth)).json()
        sid = sandbox["id"]
        put = await http.put(f"/v1/sandboxes/{sid}/files/work/s.py", data=SERVER.encode(),
                             headers=auth)  # fmt: skip
        assert put.status in (200, 201), await put.text()
        start = {"cmd": ["python3", "/work/s.py"], "wait": False, "timeout_s": 600}
        started = await http.post(f"/v1/sandboxes/{sid}/execs", json=start, headers=auth)
        assert started.status in (201, 202), await started.text()
        page = f"/v1/sandboxes/{sid}/ports/8000/"
        for _ in range(100):
            if (await http.get(page, headers=auth)).status == 200:
                break
            await asyncio.sleep(0.1)
        times: dict[str, list[float]] = {
            "GET via port": [],
            "exec true": [],
            "file put 4 KiB": [],
            "file get 4 KiB": [],
        }
        small = os.urandom(4096)
        file_url = f"/v1/sandboxes/{sid}/files/work/small.bin"
        for _ in range(runs):
            t = time.perf_counter()
            async with http.get(page, headers=auth) as r:
                got = await r.read()
                assert r.status == 200 and got == b"hello", (r.status, got[:300])
            times["GET via port"].append(time.perf_counter() - t)
            t = time.perf_counter()
            async with http.post(
                f"/v1/sandboxes/{sid}/execs", json={"cmd": ["true"]}, headers=auth
            ) as r:
                assert r.status in (200, 201), await r.text()
            times["exec true"].append(time.perf_counter() - t)
            t = time.perf_counter()
            async with http.put(file_url, data=small, headers=auth) as r:
                assert r.status in (200, 201), await r.text()
            times["file put 4 KiB"].append(time.perf_counter() - t)
            t = time.perf_counter()
            async with http.get(file_url, headers=auth) as r:
                assert r.status == 200 and await r.read() == small
            times["file get 4 KiB"].append(time.perf_counter() - t)
        for name, values in times.items():
            latency.record(name, statistics.median(values) * 1000, pct(values, 95) * 1000)
            print(f"{name:15s} median {statistics.median(values) * 1000:7.2f} ms  "
                  f"p95 {pct(values, 95) * 1000:7.2f} ms")  # fmt: skip
        ratio = statistics.median(times["GET via port"]) / statistics.median(times["exec true"])
        ratio_table.record("GET / exec", ratio)
        print(f"GET / exec: {ratio:.2f}")
        t = time.perf_counter()
        got = 0
        async with http.get(f"/v1/sandboxes/{sid}/ports/8000/big", headers=auth) as r:
            async for chunk in r.content.iter_any():
                got += len(chunk)
        down = got / (time.perf_counter() - t) / (1 << 20)
        throughput.record("download", down)
        print(f"download 64 MiB: {down:.0f} MiB/s")
        body = os.urandom(1 << 20) * 64
        t = time.perf_counter()
        async with http.post(f"/v1/sandboxes/{sid}/ports/8000/up", data=body, headers=auth) as r:
            assert r.status == 200
        up = len(body) / (time.perf_counter() - t) / (1 << 20)
        throughput.record("upload", up)
        print(f"upload 64 MiB:   {up:.0f} MiB/s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    json_argument(parser)
    args = parser.parse_args()
    report = Report("ports", args)
    async with local_server(stop_timeout_s=30) as server:
        report.database = server.db_kind
        try:
            await run(server.base, server.operator, args.runs, report)
        except BaseException:
            print(server.log.read_text()[-3000:])
            raise
    report.write()


if __name__ == "__main__":
    asyncio.run(main())
