"""What a host tool says when it fails (runsc here, with the host's paths) goes to the server's
log, never to the tenant: the problem response names the failure and the request id only."""

from __future__ import annotations

import asyncio
import secrets
import shutil
from collections.abc import AsyncIterator

import httpx
import pytest

from service.db import migrate
from tests.conftest import create_pg_database
from tests.e2e.conftest import Airlock, Server, free_port

HOST_PATH = "/srv/airlock-host-only/bundle/config.json"

# A runsc whose `run` fails the way a broken host does, naming a host path; all else is real.
FAILING_RUNSC = """#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = run ]; then
    echo "creating container: open {path}: permission denied" >&2
    exit 1
  fi
done
exec {real} "$@"
"""


@pytest.fixture(scope="module")
async def broken_host(airlock: Airlock) -> AsyncIterator[Server]:
    state = airlock.server.state_dir.parent / f"broken-host-{secrets.token_hex(4)}"
    (state / "bin").mkdir(parents=True)
    (state / "images").symlink_to(airlock.server.state_dir / "images")
    real = shutil.which("runsc")
    assert real is not None
    wrapper = state / "bin" / "runsc"
    wrapper.write_text(FAILING_RUNSC.format(path=HOST_PATH, real=real))
    wrapper.chmod(0o755)
    url, drop = await create_pg_database("airlock_e2e_broken")
    await asyncio.to_thread(migrate.upgrade, url)
    env = {
        **airlock.server.env,
        "PATH": f"{state / 'bin'}:{airlock.server.env['PATH']}",
        "AIRLOCK_STATE_DIR": str(state),
        "AIRLOCK_DATABASE_URL": url,
    }
    server = Server(state, env, free_port(), state / "server.log")
    server.start()
    try:
        await server.wait_ready()
        yield server
    finally:
        server.stop()
        await drop()


async def test_a_failing_runsc_does_not_tell_the_tenant_about_the_host(
    broken_host: Server,
) -> None:
    operator = {"Authorization": f"Bearer {broken_host.env['AIRLOCK_OPERATOR_KEY']}"}
    async with httpx.AsyncClient(base_url=broken_host.url, timeout=120) as http:
        r = await http.post(
            "/v1/tenants", headers=operator, json={"name": f"e2e-{secrets.token_hex(6)}"}
        )
        assert r.status_code == 201, r.text
        tenant = {"Authorization": f"Bearer {r.json()['api_key']}"}
        r = await http.post("/v1/sandboxes", headers=tenant, json={"ttl_s": 300})
        assert r.status_code >= 500, r.text
        problem = r.json()
        assert problem["code"] == "runtime_error"
        assert HOST_PATH not in r.text
        assert str(broken_host.state_dir) not in r.text
        assert "runsc" not in problem["detail"]
        # The operator finds the whole story in the log, under the same request id.
        log = broken_host.log()
        assert HOST_PATH in log
        assert problem["request_id"] in log
        # The sandbox is recorded as failed, and says only why in the tenant's words.
        r = await http.get("/v1/sandboxes", headers=tenant)
        assert r.status_code == 200, r.text
        assert HOST_PATH not in r.text
