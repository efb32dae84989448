"""Cold start of the container images: `podman run` to /healthz, to /readyz, and (node) to the
result of a first sandbox exec.

Runs the images that `scripts/build-images.sh` built (build them first), each start on a fresh
volume, the node with the privileges container/README.md states, as the all-in-one service on
SQLite (migrated before the clock starts); the API replica with a read-only root against
PostgreSQL when AIRLOCK_TEST_PG_ADMIN_URL is set (skipped otherwise). Prints the median and
the range of each figure and the images' sizes.

    .venv/bin/python bench/images.py [--runs 5] [--json PATH]

`--json PATH` also writes the figures to PATH for `bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import asyncpg
import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# The node runs with the privileges its test states (container/README.md), no others.
from bench.tables import Better, Column, Label, Report, json_argument  # noqa: E402
from tests.images.conftest import NODE_PRIVILEGES  # noqa: E402

OPERATOR_KEY = "bench-images-operator-" + secrets.token_hex(16)


def podman_env() -> dict[str, str]:
    conf = subprocess.run(
        ["bash", "-c", ". scripts/podman-env.sh && echo $CONTAINERS_CONF"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {**os.environ, "CONTAINERS_CONF": conf}


ENV = podman_env()


def podman(*args: str, check: bool = True) -> str:
    done = subprocess.run(["podman", *args], env=ENV, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, started: float) -> float:
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        if time.monotonic() - started > 120:
            raise RuntimeError(f"{url} did not answer within 120 s")
        time.sleep(0.02)


def first_exec(base: str, started: float) -> float:
    with httpx.Client(base_url=base, timeout=60) as client:
        tenant = client.post(
            "/v1/tenants",
            headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
            json={"name": "bench"},
        )
        headers = {"Authorization": f"Bearer {tenant.json()['api_key']}"}
        sandbox = client.post("/v1/sandboxes", headers=headers, json={"ttl_s": 300}).json()
        done = client.post(
            f"/v1/sandboxes/{sandbox['id']}/execs", headers=headers, json={"cmd": ["echo", "hi"]}
        ).json()
        if done.get("stdout") != "hi\n":
            raise RuntimeError(f"first exec: {done}")
    return time.monotonic() - started


def start_node(image: str) -> dict[str, float]:
    name, port = "airlock-bench-node", free_port()
    podman("volume", "create", name)
    try:
        volume = f"--volume={name}:/var/lib/airlock"
        podman("run", "--rm", "--network=none", volume, "--env=AIRLOCK_ROLE=all", image, "migrate")
        started = time.monotonic()
        podman(
            "run", "--detach", "--name", name, *NODE_PRIVILEGES, volume,
            f"--publish=127.0.0.1:{port}:8080", "--env=AIRLOCK_ROLE=all",
            f"--env=AIRLOCK_OPERATOR_KEY={OPERATOR_KEY}", image,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        return {
            "healthz": wait_for(f"{base}/healthz", started),
            "readyz": wait_for(f"{base}/readyz", started),
            "first exec": first_exec(base, started),
        }
    finally:
        remove(name)


def remove(name: str) -> None:
    """The container `name` and its volume of the same name, gone."""
    podman("rm", "--force", "--time", "5", name, check=False)
    podman("volume", "rm", "--force", name, check=False)


def start_api(image: str, database: str) -> dict[str, float]:
    name, port = "airlock-bench-api", free_port()
    podman("volume", "create", name)
    try:
        started = time.monotonic()
        podman(
            "run", "--detach", "--name", name, "--network=host", "--read-only",
            "--tmpfs=/tmp", f"--volume={name}:/var/lib/airlock",
            f"--env=AIRLOCK_DATABASE_URL={database}", f"--env=AIRLOCK_PORT={port}",
            f"--env=AIRLOCK_OPERATOR_KEY={OPERATOR_KEY}", image,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        return {
            "healthz": wait_for(f"{base}/healthz", started),
            "readyz": wait_for(f"{base}/readyz", started),
        }
    finally:
        remove(name)


async def pg_database() -> tuple[str, Callable[[], None]]:
    admin = os.environ["AIRLOCK_TEST_PG_ADMIN_URL"]
    name = f"airlock_bench_images_{secrets.token_hex(4)}"
    conn = await asyncpg.connect(admin)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = admin.replace("postgresql://", "postgresql+asyncpg://", 1).rsplit("/", 1)[0]

    def drop() -> None:
        async def run() -> None:
            conn = await asyncpg.connect(admin)
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await conn.close()

        asyncio.run(run())

    return f"{url}/{name}", drop


def report(what: str, runs: list[dict[str, float]], tables: Report) -> None:
    # printed in sentences; kept as a table
    table = tables.table(
        f"{what} cold start",
        Label("podman run to", 0),
        Column("median s", "s", Better.LOWER, format=".2f"),
        Column("min s", "s", Better.LOWER, format=".2f"),
        Column("max s", "s", Better.LOWER, format=".2f"),
    )
    for figure in runs[0]:
        values = [run[figure] for run in runs]
        table.record(figure, statistics.median(values), min(values), max(values))
        print(
            f"{what:5} podman run -> {figure:10}  median {statistics.median(values):6.2f} s"
            f"   (min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    json_argument(parser)
    args = parser.parse_args()
    tables = Report("images", args)
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    api, node = f"localhost/airlock-api:{version}", f"localhost/airlock-node:{version}"
    # rows by role, not by tag: the version in the tag changes between the runs compared
    sizes = tables.table(
        "image size", Label("image", 0), Column("MB", "MB", Better.LOWER, format=".0f")
    )
    for role, image in (("api", api), ("node", node)):
        size = podman("image", "inspect", "--format", "{{.Size}}", image).strip()
        sizes.record(role, int(size) / 1e6)
        print(f"{image}: {int(size) / 1e6:.0f} MB")
    report("node", [start_node(node) for _ in range(args.runs)], tables)
    if os.environ.get("AIRLOCK_TEST_PG_ADMIN_URL"):
        database, drop = asyncio.run(pg_database())
        try:
            podman("run", "--rm", "--network=host", f"--env=AIRLOCK_DATABASE_URL={database}",
                   api, "migrate")  # fmt: skip
            tables.database = "PostgreSQL"  # the replica's; the node runs on its own SQLite
            report("api", [start_api(api, database) for _ in range(args.runs)], tables)
        finally:
            drop()
    else:
        print("api: skipped (set AIRLOCK_TEST_PG_ADMIN_URL to a PostgreSQL admin URL)")
    tables.write()


if __name__ == "__main__":
    main()
