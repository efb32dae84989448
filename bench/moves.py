"""A paused sandbox resumed on its own node, and resumed on another node because its own was
full, measured side by side in one run.

Starts a local cluster (scripts/cluster.py: two gVisor nodes, one API replica, its own
PostgreSQL database). Each node may promise 3 GiB of host memory, and a sandbox is promised
its memory (the sandbox kernel's included; its writable space is on the node's disk), so one
sandbox of 1600 MiB leaves no room for a second (as tests/cluster/test_moves.py fills a node).
One such sandbox holds a process with `--hold` MiB of random bytes (they cannot be
compressed). Each run pauses it twice:

- resumed where it is (`Airlock-Woke-Ms`, and the whole call);
- paused again, its node filled by a second sandbox of the same size (the other node drained
  meanwhile, then made ready), and woken by an exec: its node has no room, gives it to the
  other, and the replica follows; the other node fetches the checkpoint (verified by its
  digest) and starts the sandbox from it. The filler is deleted and the next run starts from
  the node it moved to.

Prints the median and p90 of each, and the checkpoint's size.

    .venv/bin/python bench/moves.py [--runs 5] [--hold 64] [--json PATH]

Needs PostgreSQL: AIRLOCK_TEST_PG_ADMIN_URL (scripts/postgres.sh prints one). `--json PATH`
also writes the tables to PATH for `bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import HOLD, local_cluster, pct  # noqa: E402
from bench.tables import Better, Column, Label, Report, json_argument  # noqa: E402

# Two do not fit a node's 3072 MiB (AIRLOCK_HOST_MEMORY_MIB below): the second one fills it.
BIG = {"memory_mib": 1600, "disk_mib": 256, "ttl_s": 3600}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hold", type=int, default=64, help="MiB the process holds")
    json_argument(parser)
    args = parser.parse_args()
    report = Report("moves", args)
    report.database = "PostgreSQL"
    env = {
        "AIRLOCK_HOST_MEMORY_MIB": "3072",
        "AIRLOCK_PAUSE_COPIES": "0",  # every move fetches its checkpoint while timed
    }
    async with local_cluster("moves", env) as info:
        await run(args, info, report)
    report.write()


async def run(args: argparse.Namespace, info: dict, report: Report) -> None:
    replica = next(p["url"] for p in info["processes"] if p["role"] == "api")
    operator = {"Authorization": f"Bearer {info['env']['AIRLOCK_OPERATOR_KEY']}"}
    async with httpx.AsyncClient(base_url=replica, timeout=300) as http:
        quotas = {"max_memory_mib": 65536, "max_disk_mib": 65536, "max_vcpus": 64}
        r = await http.post(
            "/v1/tenants", json={"name": "bench-moves", "quotas": quotas}, headers=operator
        )
        assert r.status_code == 201, r.text
        http.headers["Authorization"] = f"Bearer {r.json()['api_key']}"

        async def node_state(node: str, state: str) -> None:
            verb = "drain" if state == "draining" else "ready"
            r = await http.post(f"/v1/nodes/{node}/{verb}", headers=operator)
            assert r.status_code == 200, r.text

        async def create() -> dict:
            r = await http.post("/v1/sandboxes", json=BIG)
            assert r.status_code == 201, r.text
            return r.json()

        async def pause(sid: str) -> int:
            r = await http.post(f"/v1/sandboxes/{sid}/pause")
            assert r.status_code == 200 and r.json()["state"] == "paused", r.text
            return int(r.json()["pause_bytes"])

        async def exec_true(sid: str) -> tuple[float, int]:
            start = time.perf_counter()
            r = await http.post(f"/v1/sandboxes/{sid}/execs", json={"cmd": ["true"]})
            took = time.perf_counter() - start
            assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
            return took * 1000, int(r.headers["airlock-woke-ms"])

        box = await create()
        sid = box["id"]
        code = HOLD.format(size=args.hold << 20).encode()
        r = await http.put(f"/v1/sandboxes/{sid}/files/work/hold.py", content=code)
        assert r.status_code == 201, r.text
        cmd = "python3 /work/hold.py </dev/null >/dev/null 2>&1 &"
        r = await http.post(f"/v1/sandboxes/{sid}/execs", json={"cmd": ["sh", "-c", cmd]})
        assert r.status_code == 200, r.text
        for _ in range(300):
            if (await http.get(f"/v1/sandboxes/{sid}/files/work/ready")).status_code == 200:
                break
            await asyncio.sleep(0.2)
        else:
            raise SystemExit(f"the process holding {args.hold} MiB never said it was ready")

        here: dict[str, list[float]] = {"woke": [], "call": []}
        moved: dict[str, list[float]] = {"woke": [], "call": []}
        size = 0
        node = box["node_id"]
        for _ in range(args.runs):
            size = await pause(sid)
            call, woke = await exec_true(sid)
            here["call"].append(call)
            here["woke"].append(woke)

            other = "node-2" if node == "node-1" else "node-1"
            await pause(sid)
            await node_state(other, "draining")
            filler = await create()
            assert filler["node_id"] == node, filler
            await node_state(other, "ready")
            call, woke = await exec_true(sid)
            moved["call"].append(call)
            moved["woke"].append(woke)
            r = await http.get(f"/v1/sandboxes/{sid}")
            assert r.json()["node_id"] == other, r.json()
            r = await http.delete(f"/v1/sandboxes/{filler['id']}")
            assert r.status_code == 204, r.text
            node = other

    print(
        f"gVisor, two nodes and one API replica on this machine ({os.cpu_count()} CPUs); a "
        f"process holding {args.hold} MiB of random bytes; checkpoint {size / (1 << 20):.1f} "
        f"MiB; {args.runs} runs each"
    )
    report.table(
        "checkpoint on disk", Label("held in a process", 0), Column("MiB", "MiB", Better.LOWER)
    ).record(f"{args.hold} MiB", size / (1 << 20))
    resumes = report.table(
        "resume in place and on the other node",
        Label("", 32, indent=2),
        Column("woke median", "ms", Better.LOWER, width=12, format=".0f"),
        Column("p90", "ms", Better.LOWER, width=8, format=".0f", key="woke p90"),
        Column("call median", "ms", Better.LOWER, width=13, format=".0f"),
        Column("p90", "ms", Better.LOWER, width=8, format=".0f", key="call p90"),
    )
    resumes.heading("   (ms)")
    for name, t in (("resumed on its own node", here), ("moved, resumed on the other", moved)):
        resumes.row(
            name,
            statistics.median(t["woke"]),
            pct(t["woke"], 90),
            statistics.median(t["call"]),
            pct(t["call"], 90),
        )
    ratio = statistics.median(moved["woke"]) / statistics.median(here["woke"])
    report.table(
        "a move against a resume in place",
        Label("", 0),
        Column("woke, medians", "x", Better.LOWER, format=".2f"),
    ).record("move / resume in place", ratio)
    print(f"  a move costs {ratio:.2f}x a resume in place (woke, medians)")


if __name__ == "__main__":
    asyncio.run(main())
