"""How many idle sandboxes one host holds before creates are refused, and what each costs.

Starts a fresh all-in-one server (as loadtests/run.py does), then creates the smallest
sandboxes (1 vCPU, 128 MiB, 64 MiB of writable space) one at a time until the API refuses
one with a 503, checking after each that the server still answers. Prints, and writes to
`idle.json` in the results folder: how many were running at the refusal, the refusal itself,
the host memory (MemAvailable) and host processes each sandbox took on average, then deletes
them all and checks that the runtime processes are gone.

    .venv/bin/python loadtests/idle.py [--max 400] [--cpu-overcommit 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loadtests import host  # noqa: E402
from loadtests.run import QUOTAS, Target, say  # noqa: E402

SMALLEST = {"cpus": 1, "memory_mib": 128, "disk_mib": 64, "ttl_s": 3600}


def mem_available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def host_processes() -> int:
    return sum(1 for p in Path("/proc").iterdir() if p.name.isdigit())


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=400)
    parser.add_argument("--admin-url", default=os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.admin_url:
        raise SystemExit("set AIRLOCK_TEST_PG_ADMIN_URL or --admin-url (scripts/postgres.sh)")
    os.environ["AIRLOCK_TEST_PG_ADMIN_URL"] = args.admin_url
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    args.out = args.out or REPO / "loadtests" / "results" / f"idle-{stamp}"
    args.out.mkdir(parents=True, exist_ok=True)
    args.target, args.scenario = "all-in-one", "idle"
    result: dict[str, object] = {"command": " ".join(["loadtests/idle.py", *sys.argv[1:]])}
    with tempfile.TemporaryDirectory(prefix="airlock-idle-") as tmp:
        target = Target(args, Path(tmp))
        await target.start()
        try:
            result.update(await fill(target, args.max))
        finally:
            await target.stop()
    (args.out / "idle.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0 if result.get("server_answered_throughout") and result.get("left") == 0 else 1


async def fill(target: Target, most: int) -> dict[str, object]:
    op = {"Authorization": f"Bearer {target.operator}"}
    async with httpx.AsyncClient(base_url=target.url, timeout=120) as http:
        r = await http.post("/v1/tenants", json={"name": "idle", "quotas": QUOTAS}, headers=op)
        r.raise_for_status()
        auth = {"Authorization": f"Bearer {r.json()['api_key']}"}
        await asyncio.sleep(5)  # the server's start-up work settles
        mem0, procs0 = mem_available_mib(), host_processes()
        made: list[str] = []
        refusal: dict[str, object] | None = None
        answered = True
        t0 = time.monotonic()
        while len(made) < most:
            r = await http.post("/v1/sandboxes", json=SMALLEST, headers=auth)
            if r.status_code == 201:
                made.append(r.json()["id"])
                if len(made) % 10 == 0:
                    say(f"{len(made)} idle sandboxes")
            else:
                body = r.json()
                refusal = {
                    "status": r.status_code,
                    "code": body.get("code"),
                    "detail": body.get("detail"),
                    "retry_after": r.headers.get("retry-after"),
                }
                break
            answered = answered and (await http.get("/readyz")).status_code == 200
        took = time.monotonic() - t0
        await asyncio.sleep(5)  # what the last ones started settles
        mem1, procs1 = mem_available_mib(), host_processes()
        snapshot = host.of(target)
        n = max(1, len(made))
        for sandbox in made:
            await http.delete(f"/v1/sandboxes/{sandbox}", headers=auth)
        deadline = time.monotonic() + 120
        left = -1
        while time.monotonic() < deadline:
            left = host.of(target)["runtime_processes"]
            if left == 0:
                break
            await asyncio.sleep(2)
    return {
        "sandbox": SMALLEST,
        "running_at_refusal": len(made),
        "refusal": refusal,
        "seconds_to_fill": round(took, 1),
        "host_memory_mib_per_sandbox": round((mem0 - mem1) / n, 1),
        "host_processes_per_sandbox": round((procs1 - procs0) / n, 1),
        "runtime_processes_while_full": snapshot["runtime_processes"],
        "api_rss_mib_while_full": snapshot["api_rss_mib"],
        "server_answered_throughout": answered,
        "left": left,
    }


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
