"""Run one load scenario against a fresh Airlock and write its results.

Starts the server (the all-in-one `airlock serve`, or the local cluster of scripts/cluster.py)
on its own PostgreSQL database and state, prepares what the users need through the API
(tenants, an operator template and its warm pool, a git bundle to review), counts what the
host holds, runs locust headless (loadtests/locustfile.py, in .venv-load), removes what the
users left through the API, waits for it to go, counts again, and writes into the results
folder: locust's CSV files, `summary.md` and the plots (loadtests/report.py).

    .venv/bin/python loadtests/run.py --scenario agent --users 4 --duration 2m
    .venv/bin/python loadtests/run.py --scenario mixed --users 12 --duration 30m --target cluster

Needs PostgreSQL (AIRLOCK_TEST_PG_ADMIN_URL or --admin-url; scripts/postgres.sh prints one) and
the load environment (loadtests/setup.sh). Exits 1 when any request failed or something was
left behind, so a run can gate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import (  # noqa: E402
    database_url,
    drop_database,
    free_port,
    state_dir,
    wait_ready,
)
from loadtests import host  # noqa: E402
from loadtests.fixtures import make_bundle  # noqa: E402
from service.runtime.gvisor import destroy_left  # noqa: E402

LOAD_VENV = REPO / ".venv-load"
SCENARIOS = {
    "agent": ["AgentSession"],
    "churn": ["SaasChurn"],
    "stream": ["ExecStream"],
    "burst": ["PoolBurst"],
    "review": ["Reviewer"],
    "mixed": ["AgentSession", "SaasChurn", "ExecStream", "PoolBurst", "Reviewer"],
    # The sustained rates (loadtests/capacity.py steps the users up).
    "exec-rate": ["ExecRate"],
    "create-rate": ["CreateRate"],
    # What the test command runs: a few users of the two cheapest kinds, briefly.
    "smoke": ["AgentSession", "ExecStream"],
}
QUOTAS = {
    "max_sandboxes": 200,
    "max_vcpus": 400,
    "max_memory_mib": 1_000_000,
    "max_disk_mib": 4_000_000,
    "execs_per_minute": 100_000,
    "max_running_execs": 200,
    "max_queued_reviews": 50,
    "max_bundles": 1000,
}
TENANTS = {"agents": 4, "saas": 20, "streams": 2, "bursts": 1, "reviews": 2}
POOL_TEMPLATE = "load-pool"
AGENT_TEMPLATE = "load-agent"
SETTLE_S = 120.0
LOAD_NETWORK_RANGE = "10.240.0.0/16"


def say(message: str) -> None:
    print(f"loadtest: {message}", file=sys.stderr, flush=True)


class Target:
    """The server under load: where it answers, its operator key, its state and processes."""

    def __init__(self, args: argparse.Namespace, root: Path) -> None:
        self.args = args
        self.root = root
        self.url = ""
        self.operator = ""
        self.database = ""
        self.state_dirs: list[Path] = []
        self.api_pids: list[int] = []
        self._proc: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        if self.args.target == "cluster":
            await self._start_cluster()
        else:
            await self._start_all_in_one()
        say(f"{self.args.target} serving at {self.url}")

    async def _start_all_in_one(self) -> None:
        self.database, _ = await database_url(self.root)
        subprocess.run(  # noqa: ASYNC221 (before anything else runs)
            [str(REPO / ".venv/bin/airlock"), "migrate"],
            env={**os.environ, "AIRLOCK_DATABASE_URL": self.database},
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        state = state_dir(self.root, "all-in-one")
        self.state_dirs = [state]
        self.operator = "alo_load_" + secrets.token_urlsafe(32)
        port = free_port()
        env = {
            **os.environ,
            "AIRLOCK_STATE_DIR": str(state),
            "AIRLOCK_DATABASE_URL": self.database,
            "AIRLOCK_RUNTIME": "gvisor",
            "AIRLOCK_OPERATOR_KEY": self.operator,
            "AIRLOCK_LOG_LEVEL": "WARNING",
            "AIRLOCK_TTL_REAPER_INTERVAL_S": "2",
            # Apart from the default range another server on this host may be using.
            "AIRLOCK_SANDBOX_NETWORK_RANGE": os.environ.get(
                "AIRLOCK_SANDBOX_NETWORK_RANGE", LOAD_NETWORK_RANGE
            ),
        }
        log = (self.args.out / "server.log").open("wb")
        self._proc = subprocess.Popen(  # noqa: ASYNC220
            [str(REPO / ".venv/bin/airlock"), "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.api_pids = [self._proc.pid]
        self.url = f"http://127.0.0.1:{port}"
        # A loaded machine (the test command runs this too) can take a while to start it.
        await wait_ready(self.url, self._proc, timeout_s=120)

    async def _start_cluster(self) -> None:
        cluster = self.root / "cluster"
        name = f"airlock_load_{secrets.token_hex(4)}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
        env["AIRLOCK_RUNTIME"] = "gvisor"
        env["AIRLOCK_LOG_LEVEL"] = "WARNING"
        subprocess.run(  # noqa: ASYNC221
            [sys.executable, str(REPO / "scripts/cluster.py"), "start", "--dir", str(cluster),
             "--nodes", str(self.args.nodes), "--apis", str(self.args.apis),
             "--port", str(free_port() % 20000 + 30000), "--database", name,
             "--admin-url", self.args.admin_url, "--images", str(REPO / ".airlock" / "images")],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        info = json.loads((cluster / "cluster.json").read_text())
        self.database = info["database_url"]
        self.operator = info["env"]["AIRLOCK_OPERATOR_KEY"]
        apis = [p for p in info["processes"] if p["role"] == "api"]
        # locust takes one host: the first replica (the others are reached through routing
        # tests; a load balancer in front of them is the operator's).
        self.url = apis[0]["url"]
        self.api_pids = [p["pid"] for p in info["processes"]]
        self.state_dirs = [Path(p["state_dir"]) for p in info["processes"] if p["role"] == "node"]

    async def stop(self) -> None:
        if self.args.target == "cluster":
            subprocess.run(  # noqa: ASYNC221
                [sys.executable, str(REPO / "scripts/cluster.py"), "stop", "--clean",
                 "--dir", str(self.root / "cluster")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        elif self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=60)
            for state in self.state_dirs:
                await destroy_left(state)
        await drop_database(self.database)


async def prepare(target: Target, scenario: str) -> dict[str, Any]:
    """Tenants per user pool, the templates (built, the pool one kept warm) and a bundle."""
    op = {"Authorization": f"Bearer {target.operator}"}
    setup: dict[str, Any] = {"tenants": {}, "template": AGENT_TEMPLATE}
    setup["pool_template"] = POOL_TEMPLATE
    async with httpx.AsyncClient(base_url=target.url, headers=op, timeout=120) as http:
        for pool, n in TENANTS.items():
            keys = []
            for i in range(n):
                body = {"name": f"load-{pool}-{i}-{secrets.token_hex(2)}", "quotas": QUOTAS}
                r = _ok(await http.post("/v1/tenants", json=body))
                keys.append(r.json()["api_key"])
            setup["tenants"][pool] = keys
        needs = set(SCENARIOS[scenario])
        templates = []
        if needs & {"AgentSession"}:
            templates.append(AGENT_TEMPLATE)
        if needs & {"PoolBurst"}:
            templates.append(POOL_TEMPLATE)
        for name in templates:
            setup_steps = [["sh", "-c", "mkdir -p /work/app && echo ready > /work/app/state"]]
            _ok(await http.post("/v1/templates", json={"name": name, "setup": setup_steps}))
        for name in templates:
            await _built(http, name)
        if POOL_TEMPLATE in templates:
            _ok(await http.put(f"/v1/pool/{POOL_TEMPLATE}", json={"target": target.args.pool}))
            await _warm(http, target.args.pool)
    # The tenants' keys stay in the run's temporary folder, never with the results.
    if "Reviewer" in needs:
        setup["bundle"] = str(make_bundle(target.root / "review.bundle"))
    path = target.root / "setup.json"
    path.write_text(json.dumps(setup))
    path.chmod(0o600)
    return setup


def _ok(r: httpx.Response) -> httpx.Response:
    if r.is_error:
        raise SystemExit(f"{r.request.method} {r.request.url.path}: {r.status_code} {r.text}")
    return r


async def _built(http: httpx.AsyncClient, name: str) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        got = (await http.get(f"/v1/templates/{name}")).json()
        if got["state"] == "ready":
            say(f"template {name} built")
            return
        if got["state"] == "failed":
            raise SystemExit(f"template {name} failed to build: {got}")
        await asyncio.sleep(1)
    raise SystemExit(f"template {name} not built in 10 minutes")


async def _warm(http: httpx.AsyncClient, target: int) -> None:
    deadline = time.monotonic() + 600
    ready = 0
    while time.monotonic() < deadline:
        pools = (await http.get("/v1/pool")).json()["pools"]
        ready = sum(p["ready"] for p in pools if p["template"] == POOL_TEMPLATE)
        if ready >= target:
            say(f"warm pool at {ready}")
            return
        await asyncio.sleep(1)
    say(f"warm pool reached only {ready} of {target} (no more room on the host)")


async def clean_up(target: Target, setup: dict[str, Any]) -> int:
    """Delete what the users left (as a client would), then wait for TTLs and deletions to
    finish; the number of sandboxes still not gone. The warm pool stays at its target, as
    it was before the run."""
    keys = [k for pool in setup["tenants"].values() for k in pool]
    async with httpx.AsyncClient(base_url=target.url, timeout=120) as http:
        for key in keys:
            for sandbox in await _alive(http, key):
                if sandbox["state"] in ("running", "creating"):
                    await http.delete(f"/v1/sandboxes/{sandbox['id']}", headers=_auth(key))
        deadline = time.monotonic() + SETTLE_S
        left = -1
        while time.monotonic() < deadline:
            left = sum([len(await _alive(http, key)) for key in keys])
            if left == 0:
                break
            await asyncio.sleep(2)
    return left


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _alive(http: httpx.AsyncClient, key: str) -> list[dict[str, Any]]:
    """A tenant's sandboxes not yet stopped or failed, every page of them."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 200, "state": ["creating", "running", "stopping"]}
    while True:
        page = (await http.get("/v1/sandboxes", params=params, headers=_auth(key))).json()
        found += page["items"]
        if not page.get("next_cursor"):
            return found
        params["cursor"] = page["next_cursor"]


async def settled(
    target: Target, before: dict[str, Any]
) -> tuple[dict[str, Any], float | None, dict[str, Any]]:
    """The host's counts once they are back to `before` (runsc processes take a moment to go
    after a destroy returns), or as they are after SETTLE_S; the seconds that took, and what
    still held the host then."""
    started = time.monotonic()
    counted = ("runtime_processes", "network_namespaces", "iptables_chains")
    while True:
        now = host.of(target)
        if all(now[k] <= before[k] for k in counted):
            return now, round(time.monotonic() - started, 1), {}
        if time.monotonic() - started > SETTLE_S:
            return now, None, host.left_behind(target)
        await asyncio.sleep(2)


def run_locust(args: argparse.Namespace, target: Target, setup_file: Path) -> int:
    locust = LOAD_VENV / "bin" / "locust"
    if not locust.exists():
        raise SystemExit("no load environment: run loadtests/setup.sh first")
    command = [
        str(locust), "-f", str(REPO / "loadtests" / "locustfile.py"), "--headless",
        "--host", target.url, "--users", str(args.users),
        "--spawn-rate", str(args.spawn_rate), "--run-time", args.duration,
        "--csv", str(args.out / "locust"), "--csv-full-history", "--only-summary",
        "--stop-timeout", "60", "--exit-code-on-error", "0", *SCENARIOS[args.scenario],
    ]  # fmt: skip
    env = {**os.environ, "AIRLOCK_LOAD_SETUP": str(setup_file)}
    say(" ".join(command[1:]))
    with (args.out / "locust.log").open("wb") as log:
        return subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT).returncode


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="agent")
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--spawn-rate", type=float, default=1.0)
    parser.add_argument("--duration", default="1m", help="locust's --run-time: 90s, 5m, 1h")
    parser.add_argument("--target", choices=["all-in-one", "cluster"], default="all-in-one")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--apis", type=int, default=1)
    parser.add_argument("--pool", type=int, default=4, help="warm pool target (burst)")
    parser.add_argument("--admin-url", default=os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL"))
    parser.add_argument("--out", type=Path, help="results folder (default loadtests/results/…)")
    parser.add_argument("--sample-s", type=float, default=30.0, help="host counts every … s")
    args = parser.parse_args()
    if not args.admin_url:
        raise SystemExit("set AIRLOCK_TEST_PG_ADMIN_URL or --admin-url (scripts/postgres.sh)")
    os.environ["AIRLOCK_TEST_PG_ADMIN_URL"] = args.admin_url
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    args.out = args.out or REPO / "loadtests" / "results" / (
        f"{args.scenario}-{args.target}-{args.users}u-{stamp}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="airlock-load-") as tmp:
        target = Target(args, Path(tmp))
        try:
            await target.start()
            setup = await prepare(target, args.scenario)
            before = host.of(target)
            started = datetime.now(UTC)
            watch = host.Timeline(args.out / "host.csv", target, args.sample_s)
            watch.start()
            try:
                code = await asyncio.to_thread(run_locust, args, target, target.root / "setup.json")
            finally:
                watch.stop()
            ended = datetime.now(UTC)
            left = await clean_up(target, setup)
            after, settle_s, behind = await settled(target, before)
        finally:
            await target.stop()
    run = {
        "scenario": args.scenario,
        "classes": SCENARIOS[args.scenario],
        "target": args.target,
        "nodes": args.nodes if args.target == "cluster" else 1,
        "users": args.users,
        "spawn_rate": args.spawn_rate,
        "duration": args.duration,
        "started": started.isoformat(),
        "ended": ended.isoformat(),
        "command": " ".join(["loadtests/run.py", *sys.argv[1:]]),
        "cpus": os.cpu_count(),
        "locust_exit": code,
        "sandboxes_left": left,
        "before": before,
        "after": after,
        # How long after the clean-up the host's counts came back to where they were (None:
        # they had not within SETTLE_S), and what still held it then.
        "settle_s": settle_s,
        "left_behind": behind,
    }
    (args.out / "run.json").write_text(json.dumps(run, indent=2))
    report = subprocess.run(  # noqa: ASYNC221
        [str(LOAD_VENV / "bin" / "python"), str(REPO / "loadtests" / "report.py"), str(args.out)],
        check=False,
    )
    say(f"results in {args.out}")
    verdict = json.loads((args.out / "verdict.json").read_text()) if report.returncode == 0 else {}
    return 0 if verdict.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
