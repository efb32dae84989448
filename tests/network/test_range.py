"""The address range of sandbox networks is a setting the served app hands to its runtime:
`airlock serve` with AIRLOCK_SANDBOX_NETWORK_RANGE gives networked sandboxes addresses from it
(the runtime configuration is built once from the settings and passed whole, config.py)."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from airlock_client import AuthenticatedClient

from service.db import migrate
from service.runtime import images
from service.runtime.config import RuntimeConfig
from service.runtime.gvisor import destroy_left
from service.settings import Settings
from tests.conftest import create_pg_database
from tests.e2e.conftest import (
    SHARED_STATE,
    Airlock,
    Database,
    Server,
    free_port,
    run_exec,
)

RANGE = "10.77.0.0/16"
# Which address the sandbox's packets leave from (a UDP connect sends nothing).
SOURCE = (
    "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
    "s.connect(('8.8.8.8', 53)); print(s.getsockname()[0])"
)


@pytest.fixture(scope="module")
async def ranged(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Airlock]:
    """`airlock serve` on gVisor with AIRLOCK_SANDBOX_NETWORK_RANGE set."""
    images.build_default_image(SHARED_STATE)
    state = tmp_path_factory.mktemp("ranged-state")
    (state / "images").symlink_to(SHARED_STATE / "images")
    url, drop = await create_pg_database("airlock_range")
    await asyncio.to_thread(migrate.upgrade, url)
    operator_key = secrets.token_urlsafe(30)[:40]
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "AIRLOCK_STATE_DIR": str(state),
        "AIRLOCK_DATABASE_URL": url,
        "AIRLOCK_RUNTIME": "gvisor",
        "AIRLOCK_OPERATOR_KEY": operator_key,
        "AIRLOCK_SANDBOX_NETWORK_RANGE": RANGE,
    }
    server = Server(state, env, free_port(), state / "server.log")
    server.start()
    try:
        await server.wait_ready()
        yield Airlock(
            server=server,
            db=Database(url.replace("postgresql+asyncpg://", "postgresql://", 1)),
            operator_key=operator_key,
            operator=AuthenticatedClient(base_url=server.url, token=operator_key),
        )
    finally:
        server.stop()
        await destroy_left(state)
        await drop()


async def test_a_served_sandbox_gets_its_address_from_the_configured_range(
    ranged: Airlock,
) -> None:
    tenant = await ranged.tenant()
    sandbox = await ranged.sandbox(tenant, network={"mode": "allowlist", "allow": ["8.8.8.8:53"]})
    _, ex = await run_exec(tenant.client, sandbox.id, cmd=["python3", "-c", SOURCE])
    assert ex is not None and ex.exit_code == 0, ex
    address = ipaddress.IPv4Address(ex.stdout.strip())
    assert address in ipaddress.IPv4Network(RANGE), address


def test_every_runtime_setting_reaches_the_runtime_configuration(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "AIRLOCK_STATE_DIR": str(tmp_path),
            "AIRLOCK_RUNTIME": "gvisor",
            "AIRLOCK_RUNSC_PLATFORM": "ptrace",
            "AIRLOCK_SANDBOX_NETWORK_RANGE": "10.232.16.0/24",
            "AIRLOCK_HOST_MEMORY_MIB": "4096",
        }
    )
    config = RuntimeConfig.from_settings(settings)
    assert config == RuntimeConfig(
        state_dir=tmp_path,
        runtime="gvisor",
        runsc_platform="ptrace",
        network_range="10.232.16.0/24",
        host_memory_mib=4096,
    )
