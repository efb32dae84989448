"""The highest sustained rate of execs (or creates) with p95 under 1 s and no error.

Runs loadtests/run.py at growing numbers of users (each a fresh server), one level after
another, and reads each level's rate and p95 of the request that matters. Prints a table and
the best level that held, and writes `capacity.json` beside the runs' folders.

    .venv/bin/python loadtests/capacity.py --scenario exec-rate --levels 1,2,4,8,16 --duration 2m
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REQUEST = {
    "exec-rate": "/v1/sandboxes/[id]/execs",
    "create-rate": "/v1/sandboxes",
}
P95_LIMIT_MS = 1000.0


def level(args: argparse.Namespace, users: int, out: Path) -> dict[str, object]:
    subprocess.run(
        [sys.executable, str(REPO / "loadtests" / "run.py"), "--scenario", args.scenario,
         "--users", str(users), "--spawn-rate", str(users), "--duration", args.duration,
         "--target", args.target, "--out", str(out)],
        env=os.environ, check=False,
    )  # fmt: skip
    if not (out / "verdict.json").exists():  # the run itself broke: see its folder
        return {"users": users, "held": False, "per_second": 0.0, "results": str(out)}
    with (out / "locust_stats.csv").open() as fh:
        rows = {r["Name"]: r for r in csv.DictReader(fh)}
    row = rows.get(REQUEST[args.scenario], {})
    verdict = json.loads((out / "verdict.json").read_text())
    p95 = float(row.get("95%") or 0)
    failed = int(float(rows.get("Aggregated", {}).get("Failure Count") or 0))
    return {
        "users": users,
        "per_second": round(float(row.get("Requests/s") or 0), 2),
        "p50_ms": float(row.get("50%") or 0),
        "p95_ms": p95,
        "failed": failed,
        "exceptions": verdict.get("exceptions"),
        "held": p95 < P95_LIMIT_MS and failed == 0 and verdict.get("exceptions") == 0,
        "results": str(out.relative_to(REPO)) if out.is_relative_to(REPO) else str(out),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=sorted(REQUEST), default="exec-rate")
    parser.add_argument("--levels", default="1,2,4,8")
    parser.add_argument("--duration", default="2m")
    parser.add_argument("--target", choices=["all-in-one", "cluster"], default="all-in-one")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    base = args.out or REPO / "loadtests" / "results" / f"{args.scenario}-{args.target}-{stamp}"
    base.mkdir(parents=True, exist_ok=True)
    levels = []
    for users in (int(u) for u in args.levels.split(",")):
        result = level(args, users, base / f"{users}u")
        levels.append(result)
        print(json.dumps(result), flush=True)
    held = [lv for lv in levels if lv["held"]]
    best = max(held, key=lambda lv: lv["per_second"]) if held else None
    report = {
        "scenario": args.scenario,
        "target": args.target,
        "duration": args.duration,
        "command": " ".join(["loadtests/capacity.py", *sys.argv[1:]]),
        "p95_limit_ms": P95_LIMIT_MS,
        "levels": levels,
        "best": best,
    }
    (base / "capacity.json").write_text(json.dumps(report, indent=2))
    print(f"\n{'users':>6} {'per s':>8} {'p50 ms':>8} {'p95 ms':>8} {'failed':>7} held")
    for lv in levels:
        print(f"{lv['users']:>6} {lv['per_second']:>8} {lv.get('p50_ms', 0):>8.0f} "
              f"{lv.get('p95_ms', 0):>8.0f} {lv.get('failed', '-'):>7} {lv['held']}")  # fmt: skip
    print(f"best: {best}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
