"""`pip install` as a user types it, in a sandbox of the default image, through HTTP on gVisor:
the default user adds a package to the image's environment and upgrades one the image came
with. The wheels are real ones from PyPI (pinned, cached on the host, uploaded through the
files API: sandboxes here have no route to an index)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.e2e.conftest import Airlock, Tenant

CACHE = Path(os.environ.get("AIRLOCK_TEST_CACHE", "/var/tmp/airlock-test-cache")) / "wheels"
# six is not in the image; iniconfig is (pytest needs it), at another version.
WHEELS = {
    "six==1.17.0": "six-1.17.0-py2.py3-none-any.whl",
    "iniconfig==2.1.0": "iniconfig-2.1.0-py3-none-any.whl",
}


def wheel(spec: str) -> Path:
    path = CACHE / WHEELS[spec]
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
             ":all:", "--disable-pip-version-check", "-d", str(CACHE), spec],
            check=True, timeout=300,
        )  # fmt: skip
    return path


async def run(http: httpx.AsyncClient, sandbox_id: str, *cmd: str) -> str:
    r = await http.post(f"/v1/sandboxes/{sandbox_id}/execs", json={"cmd": list(cmd)})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return str(r.json()["stdout"])


async def test_the_default_user_installs_and_upgrades_packages_with_pip(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        for spec in WHEELS:
            path = wheel(spec)
            r = await http.put(
                f"/v1/sandboxes/{sandbox.id}/files/work/{path.name}", content=path.read_bytes()
            )
            assert r.status_code == 201, r.text
        names = " ".join(WHEELS.values())
        said = await run(
            http,
            sandbox.id,
            "/bin/sh",
            "-c",
            f"cd /work && id -u && pip install --no-index {names} 2>&1",
        )
        assert said.startswith("1000\n"), said
        check = "import iniconfig, six; print(six.__version__, iniconfig.__file__)"
        version, location = (await run(http, sandbox.id, "python", "-c", check)).split()
        assert version == "1.17.0" and location.startswith("/opt/venv/"), (version, location)
        assert "Version: 2.1.0" in await run(http, sandbox.id, "pip", "show", "iniconfig")
