"""Native code a sandbox writes itself, through HTTP on gVisor: a compiled wheel installed with
pip (numpy: its extension modules and the libraries bundled in `numpy.libs`) imports and runs,
and a program copied into /work runs. Everything a sandbox writes lives in the upper layer of
its root overlay, whose pages runsc maps executable from a file on the sandbox's own disk
(disk.py); where that mapping is refused, every such program or library dies with SIGSEGV."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.e2e.conftest import Airlock, Tenant

CACHE = Path(os.environ.get("AIRLOCK_TEST_CACHE", "/var/tmp/airlock-test-cache")) / "wheels"
# The image's Python is CPython 3.11 on x86_64, whatever the host's is.
SPEC = "numpy==1.26.4"
WHEEL = "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"


def wheel() -> Path:
    path = CACHE / WHEEL
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
             ":all:", "--disable-pip-version-check", "--python-version", "3.11",
             "--implementation", "cp", "--abi", "cp311", "--platform",
             "manylinux2014_x86_64", "-d", str(CACHE), SPEC],
            check=True, timeout=300,
        )  # fmt: skip
    return path


async def run(http: httpx.AsyncClient, sandbox_id: str, cmd: str) -> str:
    r = await http.post(
        f"/v1/sandboxes/{sandbox_id}/execs",
        json={"cmd": ["/bin/sh", "-c", cmd], "timeout_s": 300},
    )
    assert r.status_code == 200, r.text
    assert r.json()["exit_code"] == 0, r.json()
    return str(r.json()["stdout"])


async def test_a_compiled_wheel_installed_with_pip_imports_and_runs(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    path = wheel()
    async with airlock.http(tenant.key) as http:
        r = await http.put(
            f"/v1/sandboxes/{sandbox.id}/files/work/{path.name}", content=path.read_bytes()
        )
        assert r.status_code == 201, r.text
        assert await run(http, sandbox.id, "cp /bin/true /work/true && /work/true && echo ran") == (
            "ran\n"
        )
        await run(http, sandbox.id, f"cd /work && pip install --no-index --quiet {path.name} 2>&1")
        said = await run(
            http, sandbox.id, "python3 -c 'import numpy; print(numpy.arange(10).sum())'"
        )
        assert said == "45\n", said
