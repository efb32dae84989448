"""The container images (container/Containerfile), built once per session by
`scripts/build-images.sh` and run with podman from Debian's packages, as an operator runs them.

The build is cached by content (base images by their recipe, the service's images by their
build context), so a run on an unchanged tree spends its time on the wheel and the wheelhouse.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]

# What the node needs from podman to run gVisor sandboxes, and no more (container/README.md):
# runsc makes namespaces and mounts (SYS_ADMIN); a sandbox's network is a veth pair and
# iptables rules in the container's namespace (NET_ADMIN) with per-interface sysctls under
# /proc/sys (read-only unless unmasked); a sandbox's disk is a loop-mounted file (the loop
# control device, block major 7, and MKNOD for the entrypoint to make /dev/loopN); sandbox
# cgroups are made in the host's hierarchy.
NODE_PRIVILEGES = (
    "--cap-add=SYS_ADMIN,NET_ADMIN,MKNOD",
    "--device=/dev/loop-control",
    "--device-cgroup-rule=b 7:* rwm",
    "--volume=/sys/fs/cgroup:/sys/fs/cgroup:rw",
    "--security-opt=unmask=/proc/sys",
)
OPERATOR_KEY = "image-test-operator-" + "k" * 24


@dataclass(frozen=True)
class Podman:
    env: dict[str, str]

    def __call__(self, *args: str, check: bool = True, timeout: float = 600):
        done = subprocess.run(
            ["podman", *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check:
            assert done.returncode == 0, (
                f"podman {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
            )
        return done


@dataclass(frozen=True)
class Images:
    version: str
    api: str
    node: str
    proxy: str
    postgres: str


@dataclass(frozen=True)
class Served:
    name: str
    url: str

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)


@pytest.fixture(scope="session")
def podman() -> Podman:
    if shutil.which("podman") is None:
        pytest.fail("no podman: the test command installs it (scripts/build-images.sh)")
    conf = subprocess.run(
        ["bash", "-c", ". scripts/podman-env.sh && echo $CONTAINERS_CONF"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    runner = Podman({**os.environ, "CONTAINERS_CONF": conf})
    info = runner("info", check=False)
    if info.returncode != 0:
        pytest.skip(f"podman cannot run on this host: {info.stderr.strip()[-400:]}")
    return runner


@pytest.fixture(scope="session")
def images(podman: Podman) -> Images:
    done = subprocess.run(
        [str(REPO / "scripts/build-images.sh")],
        cwd=REPO,
        env=podman.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, f"scripts/build-images.sh failed:\n{done.stderr[-4000:]}"
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    return Images(
        version,
        *(f"localhost/airlock-{name}:{version}" for name in ("api", "node", "proxy", "postgres")),
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def volume(podman: Podman, name: str) -> Iterator[str]:
    podman("volume", "rm", "--force", name, check=False)
    podman("volume", "create", name)
    try:
        yield name
    finally:
        podman("volume", "rm", "--force", name, check=False)


@contextmanager
def serving(podman: Podman, name: str, url: str, *run_args: str) -> Iterator[Served]:
    """`podman run -d` with RUN_ARGS, until /readyz answers 200; removed on the way out, with
    its log in the failure when it never got ready."""
    podman("rm", "--force", name, check=False)
    podman("run", "--detach", "--name", name, *run_args)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            state = podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip()
            if state != "true" or time.monotonic() > deadline:
                logs = podman("logs", name, check=False)
                pytest.fail(f"{name} never got ready:\n{(logs.stdout + logs.stderr)[-4000:]}")
            time.sleep(0.2)
        yield Served(name, url)
    finally:
        podman("rm", "--force", "--time", "5", name, check=False)
