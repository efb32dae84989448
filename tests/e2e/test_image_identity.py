"""The default image carries its own identity, not the one of the host that built it."""

from __future__ import annotations

import socket

from tests.e2e.conftest import Airlock, Tenant, run_exec


async def test_the_image_does_not_name_its_build_host(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    script = "cat /etc/hostname; echo ---; cat /etc/hosts; echo ---; hostname"
    _, ex = await run_exec(tenant.client, sandbox.id, cmd=["sh", "-c", script])
    assert ex is not None and ex.exit_code == 0, ex
    etc_hostname, etc_hosts, uts = (part.strip() for part in str(ex.stdout).split("---"))
    build_host = socket.gethostname()
    assert etc_hostname == "sandbox"
    assert build_host not in etc_hosts.split()
    assert "localhost" in etc_hosts.split()
    assert uts != build_host
