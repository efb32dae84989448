"""Pause and resume through the API, and what paused sandboxes hold of the host.

Starts a real `airlock serve` (gVisor runtime, its own state dir and database) and measures:

- pause and resume times (median, p95, through HTTP) of a sandbox whose process holds 64 MiB
  and 512 MiB of memory it has written (random bytes, so the checkpoint cannot compress them),
  with the checkpoint's size on disk; the sandbox has 1 GiB of memory, the sandbox kernel's
  included, so what the process holds, the interpreter and the kernel all fit;
- the host memory held by N idle sandboxes running, then by the same N paused: the summed PSS
  of their runtime processes (runsc's sandbox, gofer and their children, read from
  /proc/<pid>/smaps_rollup) and MemAvailable, beside the checkpoints' bytes on disk.

    .venv/bin/python bench/pause.py [--runs 10] [--idle 100] [--json PATH]

The idle sandboxes are small (1 vCPU, 128 MiB, 64 MiB writable); the server runs with a CPU
overcommit, memory overcommit and host memory budget that admit them all on this machine (2
cores, 24 GiB): they promise more than it has, and use far less. Uses PostgreSQL
when AIRLOCK_TEST_PG_ADMIN_URL is set, otherwise the embedded SQLite database. `--json PATH`
also writes the tables to PATH for `bench/compare.py` (bench/results/README.md).
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

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from api import HOLD, local_server, pct  # noqa: E402

from bench.tables import Better, Column, Label, Report, Table, json_argument  # noqa: E402

MIB = 1 << 20
# Room in a sandbox's memory cap, beyond what its process holds, for the interpreter, the
# shell, the sandbox kernel (its memory is inside the cap) and its agent.
ROOM_MIB = 512


def memory_for(held_mib: int) -> int:
    """The memory cap of the sandbox whose process holds `held_mib` (1 GiB for both sizes)."""
    return max(1024, held_mib + ROOM_MIB)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="pause/resume cycles per size")
    parser.add_argument("--idle", type=int, default=100, help="idle sandboxes to hold")
    json_argument(parser)
    args = parser.parse_args()
    report = Report("pause", args)
    # figures printed in sentences, kept as tables
    checkpoints = report.table(
        "checkpoint on disk",
        Label("held in a process", 0),
        Column("median MiB", "MiB", Better.LOWER),
    )

    env = {
        "AIRLOCK_CPU_OVERCOMMIT": "64",
        "AIRLOCK_MEMORY_OVERCOMMIT": "4",
        "AIRLOCK_HOST_MEMORY_MIB": str(max(20_000, args.idle * 400)),
    }
    async with (
        local_server(env, stop_timeout_s=120) as server,
        httpx.AsyncClient(base_url=server.base, timeout=300) as client,
    ):
        key = await tenant(client, server.operator, args.idle)
        client.headers["Authorization"] = f"Bearer {key}"
        report.database = server.db_kind
        print(f"database: {server.db_kind}; runs per size: {args.runs}")
        for size_mib in (64, 512):
            await pause_resume(client, size_mib, args.runs, report, checkpoints)
        await idle_memory(client, server.state, args.idle, report)
    report.write()


async def tenant(client: httpx.AsyncClient, operator: str, idle: int) -> str:
    quotas = {
        "max_sandboxes": idle + 10,
        "max_vcpus": idle + 10,
        "max_memory_mib": (idle + 10) * 1024,
        "max_disk_mib": (idle + 10) * 1024,
        "max_paused_sandboxes": idle + 10,
        "max_paused_mib": 1_000_000,
    }
    r = await client.post(
        "/v1/tenants",
        json={"name": f"bench-{secrets.token_hex(4)}", "quotas": quotas},
        headers={"Authorization": f"Bearer {operator}"},
    )
    r.raise_for_status()
    return str(r.json()["api_key"])


async def pause_resume(
    client: httpx.AsyncClient, size_mib: int, runs: int, report: Report, checkpoints: Table
) -> None:
    r = await client.post("/v1/sandboxes", json={"ttl_s": 3600, "memory_mib": memory_for(size_mib)})
    r.raise_for_status()
    sid = r.json()["id"]
    hold = HOLD.format(size=size_mib * MIB)
    await client.put(f"/v1/sandboxes/{sid}/files/work/hold.py", content=hold.encode())
    cmd = "python3 /work/hold.py </dev/null >/dev/null 2>&1 &"
    (
        await client.post(f"/v1/sandboxes/{sid}/execs", json={"cmd": ["sh", "-c", cmd]})
    ).raise_for_status()
    for _ in range(600):  # the process has written its memory
        if (await client.get(f"/v1/sandboxes/{sid}/files/work/ready")).status_code == 200:
            break
        await asyncio.sleep(0.2)
    else:
        raise SystemExit(f"the process holding {size_mib} MiB never said it was ready")
    pauses, resumes, woke, sizes = [], [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        r = await client.post(f"/v1/sandboxes/{sid}/pause")
        pauses.append((time.perf_counter() - started) * 1000)
        r.raise_for_status()
        sizes.append(r.json()["pause_bytes"])
        started = time.perf_counter()
        r = await client.post(f"/v1/sandboxes/{sid}/resume")
        resumes.append((time.perf_counter() - started) * 1000)
        r.raise_for_status()
        woke.append(float(r.headers["airlock-woke-ms"]))
    await client.delete(f"/v1/sandboxes/{sid}")
    print(f"\n{size_mib} MiB held in a process ({runs} cycles):")
    checkpoints.record(f"{size_mib} MiB", statistics.median(sizes) / MIB)
    print(f"  checkpoint on disk: median {statistics.median(sizes) / MIB:.1f} MiB")
    times = report.table(
        f"pause and resume, {size_mib} MiB held",
        Label("operation", 0),
        Column("median ms", "ms", Better.LOWER, format=".0f"),
        Column("p95 ms", "ms", Better.LOWER, format=".0f"),
    )
    for name, values in (("pause", pauses), ("resume", resumes), ("resume, runtime", woke)):
        median, p95 = statistics.median(values), pct(values, 95)
        times.record(name, median, p95)
        print(f"  {name:<16} median {median:7.0f} ms   p95 {p95:7.0f} ms")


async def idle_memory(client: httpx.AsyncClient, state: Path, n: int, report: Report) -> None:
    # figures printed in sentences and in a table of their own layout, kept as tables
    all_of_them = report.table(
        "idle sandboxes, made and paused",
        Label("", 0),
        Column("s", "s", Better.LOWER, format=".0f"),
        Column("ms each", "ms", Better.LOWER, format=".0f"),
    )
    held = report.table(
        "idle sandboxes, what they hold",
        Label("", 0),
        Column("runtime PSS", "MiB", Better.LOWER, format=".0f"),
        # the runtime processes of `--idle` sandboxes: follows from the arguments
        Column("processes", "processes", Better.NEITHER, format="d"),
        Column("MemAvailable drop", "MiB", Better.LOWER, format=".0f"),
        Column("on disk", "MiB", Better.LOWER, format=".0f"),
        Column("CPU over 10 s", "cores", Better.LOWER, format=".2f"),
    )
    before = meminfo_available()
    body = {"ttl_s": 3600, "cpus": 1, "memory_mib": 128, "disk_mib": 64}
    made: list[str] = []
    started = time.perf_counter()
    for group in range(0, n, 4):
        answers = await asyncio.gather(
            *[client.post("/v1/sandboxes", json=body) for _ in range(min(4, n - group))]
        )
        for r in answers:
            if r.status_code != 201:
                raise SystemExit(f"sandbox {len(made) + 1} of {n} not made: {r.text}")
            made.append(r.json()["id"])
    made_s = time.perf_counter() - started
    all_of_them.record("made", made_s, made_s / n * 1000)
    print(f"\n{n} idle sandboxes made in {made_s:.0f} s")
    await asyncio.sleep(5)
    running_pss, processes = runtime_pss(state)
    running_avail = meminfo_available()
    running_cpu = await runtime_cpu(state)
    started = time.perf_counter()
    paused_bytes = 0
    for sid in made:
        r = await client.post(f"/v1/sandboxes/{sid}/pause")
        r.raise_for_status()
        paused_bytes += r.json()["pause_bytes"]
    took = time.perf_counter() - started
    await asyncio.sleep(5)
    paused_pss, left = runtime_pss(state)
    paused_avail = meminfo_available()
    paused_cpu = await runtime_cpu(state)
    all_of_them.record("paused", took, took / n * 1000)
    held.record("running", running_pss / MIB, processes, (before - running_avail) / MIB, 0,
                running_cpu)  # fmt: skip
    held.record("paused", paused_pss / MIB, left, (before - paused_avail) / MIB,
                paused_bytes / MIB, paused_cpu)  # fmt: skip
    print(f"  paused all {n} in {took:.0f} s ({took / n * 1000:.0f} ms each)")
    heads = ("runtime PSS", "processes", "MemAvailable drop", "on disk")
    print(f"  {'':<10} {heads[0]:>12} {heads[1]:>10} {heads[2]:>18} {heads[3]:>10}")
    print(f"  {'running':<10} {running_pss / MIB:10.0f} MiB {processes:>10} "
          f"{(before - running_avail) / MIB:15.0f} MiB {0:>7} MiB")  # fmt: skip
    print(f"  {'paused':<10} {paused_pss / MIB:10.0f} MiB {left:>10} "
          f"{(before - paused_avail) / MIB:15.0f} MiB {paused_bytes / MIB:7.0f} MiB")  # fmt: skip
    print(f"  CPU of the runtime processes over 10 s: running {running_cpu:.2f} cores, "
          f"paused {paused_cpu:.2f} cores")  # fmt: skip
    if paused_pss:
        report.table(
            "running / paused",
            Label("", 0),
            Column("runtime PSS", "x", Better.HIGHER, format=".0f"),
        ).record("idle sandboxes", running_pss / paused_pss)
        print(f"  running / paused runtime PSS: {running_pss / paused_pss:.0f}x")
    for sid in made:
        await client.delete(f"/v1/sandboxes/{sid}")


def runtime_pids(state: Path) -> list[Path]:
    """/proc entries of this server's runsc processes (sandboxes, gofers)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if str(state).encode() in cmdline and b"runsc" in cmdline:
            found.append(entry)
    return found


async def runtime_cpu(state: Path, window_s: float = 10.0) -> float:
    """CPU the server's runsc processes use over `window_s` (1.0: one core, all the time)."""

    def ticks() -> int:
        total = 0
        for entry in runtime_pids(state):
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
            except (OSError, IndexError, ValueError):
                continue
        return total

    first = ticks()
    await asyncio.sleep(window_s)
    return (ticks() - first) / os.sysconf("SC_CLK_TCK") / window_s


def runtime_pss(state: Path) -> tuple[int, int]:
    """The summed PSS of the processes whose command line names this server's state dir (its
    runsc sandboxes and gofers), and how many there are."""
    total = count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if str(state).encode() not in cmdline or b"runsc" not in cmdline:
                continue
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    count += 1
        except OSError:
            continue
    return total, count


def meminfo_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


if __name__ == "__main__":
    asyncio.run(main())
