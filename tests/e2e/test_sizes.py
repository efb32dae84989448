"""Each size's memory, disk and process caps as its processes meet them, through HTTP on
gVisor: the sandbox's own `/proc/meminfo` and `nproc` say its size, its metrics report the
limits the tenant asked for, 0.8x of each cap fits and 1.2x does not (memory: the exec ends
`oom`; disk: ENOSPC; processes: fork fails with EAGAIN), and writing the disk full never
counts against the memory cap (a sandbox writes more than its memory to disk and lives on).
CPU has its own test (test_caps.py)."""

from __future__ import annotations

import os

import pytest

from service.sandboxes.schemas import SIZES
from tests.e2e.conftest import Airlock, Tenant, run_exec

MIB = 1 << 20
# Forks up to argv[1] children that wait, says how many it got and why it stopped, ends them.
FORKS = (
    "import os, sys, time\n"
    "kids, why = [], 'all'\n"
    "try:\n"
    "    for _ in range(int(sys.argv[1])):\n"
    "        pid = os.fork()\n"
    "        if pid == 0:\n"
    "            time.sleep(60)\n"
    "            os._exit(0)\n"
    "        kids.append(pid)\n"
    "except OSError as exc:\n"
    "    why = os.strerror(exc.errno)\n"
    "print(len(kids), why)\n"
    "for pid in kids:\n"
    "    os.kill(pid, 9)\n"
    "    os.waitpid(pid, 0)\n"
)
# Touches every byte it allocates (`b"x" * n` writes them; a bytearray of zeros would not).
ALLOCATE = "import sys; x = b'x' * (int(sys.argv[1]) << 20); print(len(x) >> 20)"


async def _sh(airlock: Airlock, tenant: Tenant, sandbox_id: str, script: str) -> dict:
    """Runs `script` with a 240 s deadline, waiting on the answer longer than that: filling
    8 GiB of memory or disk on a busy host takes minutes, and the exec's own deadline, not the
    client's, is what may end it."""
    async with airlock.http(tenant.key) as http:
        r = await http.post(
            f"/v1/sandboxes/{sandbox_id}/execs",
            json={"cmd": ["sh", "-c", script], "timeout_s": 240},
            timeout=300,
        )
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize(
    "size", [pytest.param("small", marks=pytest.mark.sqlite), "medium", "large"]
)
async def test_a_sizes_caps_are_what_its_processes_meet(
    airlock: Airlock, tenant: Tenant, size: str
) -> None:
    cpus, memory_mib, disk_mib = SIZES[size]
    sandbox = await airlock.sandbox(tenant, size=size)
    assert (sandbox.cpus, sandbox.memory_mib, sandbox.disk_mib) == (cpus, memory_mib, disk_mib)

    seen = await _sh(airlock, tenant, sandbox.id, "grep MemTotal /proc/meminfo; nproc")
    mem_total, nproc = seen["stdout"].split("\n")[:2]
    assert int(mem_total.split()[1]) == memory_mib * 1024, seen
    assert int(nproc) == min(cpus, os.cpu_count() or 1), seen  # a host shows what it has

    async with airlock.http(tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox.id}/metrics")
    assert r.status_code == 200, r.text
    metrics = r.json()
    assert metrics["memory_limit_bytes"] == memory_mib * MIB, metrics
    assert metrics["writable_limit_bytes"] == disk_mib * MIB, metrics
    pids = metrics["processes_limit"]

    # Processes: 0.8x of the cap start; past it, fork fails inside and the sandbox goes on.
    for share, fits in ((8, True), (12, False)):
        _, done = await run_exec(
            tenant.client, sandbox.id, cmd=["python3", "-c", FORKS, str(pids * share // 10)],
            timeout_s=120,
        )  # fmt: skip
        assert done is not None and done.exit_code == 0, done
        got, why = str(done.stdout).split(" ", 1)
        if fits:
            assert (int(got), why.strip()) == (pids * 8 // 10, "all"), done
        else:
            assert int(got) < pids and "Resource temporarily unavailable" in why, done

    # Disk: 0.8x fits, anywhere the sandbox writes; 1.2x ends in ENOSPC past the cap (the file
    # system's own tables leave a little over it), and the space comes back on delete.
    fits = await _sh(
        airlock,
        tenant,
        sandbox.id,
        f"dd if=/dev/zero of=/work/a bs=1M count={disk_mib * 8 // 10} 2>&1 >/dev/null | tail -1"
        " && rm /work/a",
    )
    assert fits["exit_code"] == 0, fits
    full = await _sh(
        airlock,
        tenant,
        sandbox.id,
        f"dd if=/dev/zero of=/tmp/b bs=1M count={disk_mib * 12 // 10}; wc -c < /tmp/b; rm /tmp/b",
    )
    assert "No space left on device" in full["stderr"], full
    written = int(full["stdout"].split()[-1])
    assert disk_mib * MIB <= written <= disk_mib * MIB * 1.03, (written, full)
    assert full["exit_code"] == 0  # the rm after it
    assert written > memory_mib * MIB  # more than its memory, on disk: not the memory cap

    # Memory: 0.8x fits with the sandbox kernel inside the cap; 1.2x is an OOM.
    allocate = f'python3 -c "{ALLOCATE}"'
    small = await _sh(airlock, tenant, sandbox.id, f"{allocate} {memory_mib * 8 // 10}")
    assert (small["outcome"], small["exit_code"]) == ("exited", 0), small
    big = await _sh(airlock, tenant, sandbox.id, f"{allocate} {memory_mib * 12 // 10}")
    assert big["outcome"] == "oom", big
