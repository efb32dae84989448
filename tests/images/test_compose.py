"""deploy/compose.yaml, the one-host deployment: valid for the Compose specification (so for
`docker compose` as for `podman-compose`), setting the settings the chart sets for the same
roles, and brought up by podman-compose from keys made as the README says,
it runs a command in a sandbox."""

from __future__ import annotations

import secrets
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from tests.images.conftest import REPO, Images, Podman, free_port
from tests.images.pods import one, render

COMPOSE = REPO / "deploy" / "compose.yaml"
PROJECT = "airlock-test-compose"
# What the chart sets and one host does not need, by why.
CHART_ONLY = {
    # The replicas reach each node at its pod's IP; the one-host process holds its node.
    "POD_IP": "node",
    "AIRLOCK_NODE_ADDRESS": "node",
    # A node's lease, renewed by heartbeats, tells replicas that a node is lost.
    "AIRLOCK_NODE_LEASE_S": "api and node",
    "AIRLOCK_NODE_HEARTBEAT_S": "api and node",
    # The nginx sidecar of each replica.
    "AIRLOCK_TRUSTED_PROXIES": "api",
    "AIRLOCK_OFFLOAD_KEY": "api",
}


def compose_env(service: str) -> set[str]:
    return set(yaml.safe_load(COMPOSE.read_text())["services"][service]["environment"])


def chart_env(docs: list[dict], kind: str, container: str) -> set[str]:
    (found,) = [
        c
        for c in one(docs, kind)["spec"]["template"]["spec"]["containers"]
        if c["name"] == container
    ]
    return {var["name"] for var in found["env"]}


def test_the_compose_file_is_valid_for_the_compose_specification() -> None:
    schema = ("--builtin-schema", "vendor.compose-spec")
    checked = subprocess.run(
        [str(REPO / ".venv/bin/check-jsonschema"), *schema, str(COMPOSE)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    images = [s["image"] for s in yaml.safe_load(COMPOSE.read_text())["services"].values()]
    assert all(image.endswith(f":${{AIRLOCK_VERSION:-{version}}}") for image in images), images


def test_the_compose_file_sets_what_the_chart_sets_for_each_role() -> None:
    docs = render("database.url=postgresql://airlock@postgres/airlock")
    api = chart_env(docs, "Deployment", "api")
    node = chart_env(docs, "DaemonSet", "node")
    # One process is both the API and the node (AIRLOCK_ROLE=all), and migrates first.
    assert compose_env("airlock") == (api | node) - set(CHART_ONLY)
    assert chart_env(docs, "Job", "migrate") <= compose_env("airlock")


def test_the_compose_file_runs_a_sandbox_under_podman_compose(
    podman: Podman, images: Images
) -> None:
    operator_key = "alo_" + secrets.token_urlsafe(32)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="airlock-compose-") as work:
        env = podman.env | {
            "AIRLOCK_VERSION": images.version,
            "AIRLOCK_KEYS": str(make_keys(Path(work))),
            "AIRLOCK_PUBLISH": f"127.0.0.1:{port}",
            "AIRLOCK_OPERATOR_KEY": operator_key,
            "AIRLOCK_DATABASE_PASSWORD": secrets.token_hex(24),
        }
        with up(env) as compose, httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            wait_ready(client, compose)
            tenant = client.post(
                "/v1/tenants",
                headers={"Authorization": f"Bearer {operator_key}"},
                json={"name": "one-host"},
            )
            assert tenant.status_code == 201, tenant.text
            key = {"Authorization": f"Bearer {tenant.json()['api_key']}"}
            created = client.post("/v1/sandboxes", headers=key, json={"ttl_s": 600}, timeout=120)
            assert created.status_code == 201, created.text
            done = client.post(
                f"/v1/sandboxes/{created.json()['id']}/execs",
                headers=key,
                json={"cmd": ["echo", "one host"], "timeout_s": 60},
                timeout=120,
            )
            assert done.status_code == 200, done.text
            assert (done.json()["exit_code"], done.json()["stdout"]) == (0, "one host\n")


def make_keys(work: Path) -> Path:
    """The keys directory as the README makes it: openssl's Ed25519 key, 32 random bytes each
    for the audit chain and the tenants' secrets."""
    keys = work / "keys"
    (keys / "jwt").mkdir(parents=True)
    subprocess.run(
        ["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(keys / "jwt/signing-key.pem")],
        check=True,
        capture_output=True,
    )
    for name in ("audit.key", "secrets.key"):
        (keys / name).write_bytes(secrets.token_bytes(32))
    return keys


@contextmanager
def up(env: dict[str, str]) -> Iterator[list[str]]:
    """`podman-compose up --detach`; `down --volumes` on the way out, with the services' logs
    printed first when the test failed."""
    compose = [str(REPO / ".venv/bin/podman-compose"), "--project-name", PROJECT]
    compose += ["--file", str(COMPOSE)]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*compose, *args], env=env, capture_output=True, text=True, timeout=600
        )

    try:
        started = run("up", "--detach")
        assert started.returncode == 0, started.stdout + started.stderr
        yield compose
    except BaseException:
        print(run("logs").stdout[-8000:])
        raise
    finally:
        run("down", "--volumes", "--timeout", "10")


def wait_ready(client: httpx.Client, compose: list[str]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if client.get("/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail("the one-host service never got ready (its log is printed below)")
