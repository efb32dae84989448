"""The service's wheel, installed with no extras into an empty virtualenv, is all it takes to
migrate, serve and run a command in a gVisor sandbox: nothing is read from the clone."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.runtime import images
from service.runtime.gvisor import destroy_left

from .conftest import Venv, Wheels, new_venv

REPO = Path(__file__).resolve().parents[2]
# The images built for the other suites: the server's state dir links to them.
SHARED_STATE = Path(os.environ.get("AIRLOCK_STATE_DIR") or REPO / ".airlock").resolve()
READY_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_wheel_carries_the_migrations_and_the_image_sources(wheels: Wheels) -> None:
    names = wheels.names(wheels.service)
    assert "service/migrations/env.py" in names
    assert "service/migrations/script.py.mako" in names
    assert any(n.startswith("service/migrations/versions/0001_") for n in names)
    assert "service/runtime/image_sources/airlock-init.c" in names
    assert "service/runtime/image_sources/statx-shim.c" in names
    # The exec agent, a directory run inside sandboxes (no __init__.py).
    assert "service/runtime/gvisor/agent/__main__.py" in names


@pytest.fixture(scope="module")
def installed(wheels: Wheels, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    venv = new_venv(tmp_path_factory.mktemp("service-venv") / "venv")
    venv.pip("install", "-q", str(wheels.service))
    return venv


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    images.build_default_image(SHARED_STATE)  # instant when built
    state = tmp_path_factory.mktemp("wheel-state")
    (state / "images").symlink_to(SHARED_STATE / "images")
    return state


def test_it_installs_consistent_and_from_its_own_files(installed: Venv) -> None:
    installed.pip("check")
    where = installed.run(installed.bin("python"), "-c", "import service; print(service.__file__)")
    assert where.strip().startswith(str(installed.path)), where
    # The extras are not there: /mcp is off, the rest is whole.
    assert "airlock-client" not in installed.pip("list")


def test_image_build_reads_the_sources_from_the_package(installed: Venv, state: Path) -> None:
    # The build is keyed by its inputs, the C sources among them: up to date means they were
    # found in site-packages and are the ones the shared image was built from.
    out = installed.run(installed.bin("airlock"), "image", "build", AIRLOCK_STATE_DIR=str(state))
    assert "is up to date" in out, out


@pytest.fixture(scope="module")
def served(installed: Venv, state: Path) -> Iterator[tuple[str, str]]:
    operator_key = secrets.token_urlsafe(30)[:40]
    env = {"AIRLOCK_STATE_DIR": str(state), "AIRLOCK_RUNTIME": "gvisor", "PYTHONUNBUFFERED": "1"}
    # The embedded SQLite database in the state dir, made by the installed migrations.
    out = installed.run(installed.bin("airlock"), "migrate", cwd=state, **env)
    assert (state / "airlock.db").is_file(), out
    port = free_port()
    log = state / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [installed.bin("airlock"), "serve", "--port", str(port)],
            cwd=state,
            env=installed.env(**env, AIRLOCK_OPERATOR_KEY=operator_key),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, log)
        yield url, operator_key
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        asyncio.run(destroy_left(state))  # sandboxes outlive their server; a failed test's


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"airlock serve exited with {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"airlock serve not ready after {READY_TIMEOUT_S} s:\n{log.read_text()}")


def test_migrate_serve_and_exec_from_the_wheel(served: tuple[str, str]) -> None:
    url, operator_key = served
    with httpx.Client(base_url=url, timeout=120) as http:
        r = http.post(
            "/v1/tenants",
            headers={"Authorization": f"Bearer {operator_key}"},
            json={"name": "from-the-wheel"},
        )
        assert r.status_code == 201, r.text
        tenant = {"Authorization": f"Bearer {r.json()['api_key']}"}
        r = http.post("/v1/sandboxes", headers=tenant, json={"size": "small", "ttl_s": 300})
        assert r.status_code == 201, r.text
        sandbox = r.json()["id"]
        try:
            r = http.post(
                f"/v1/sandboxes/{sandbox}/execs",
                headers=tenant,
                json={"cmd": ["python3", "-c", "print(6 * 7)"], "timeout_s": 60},
            )
            assert r.status_code == 200, r.text
            assert (r.json()["exit_code"], r.json()["stdout"]) == (0, "42\n")
        finally:
            assert http.delete(f"/v1/sandboxes/{sandbox}", headers=tenant).status_code == 204
