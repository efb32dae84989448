"""Isolation: no host environment, unprivileged user, no network, no host files, no neighbours."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from service.runtime import ExecRequest, SandboxInfo, SandboxRuntime

from .conftest import SandboxFactory
from .helpers import sh

HOST_PASSWD = Path("/etc/passwd").read_bytes()


async def test_no_host_environment(
    runtime: SandboxRuntime, sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRLOCK_HOST_ONLY_MARKER", "leaked")
    result = await runtime.run(sandbox.id, ExecRequest(argv=["env"], env={"GIVEN": "1"}))
    names = {line.split("=", 1)[0] for line in result.stdout.decode().splitlines()}
    assert names <= {"PATH", "HOME", "GIVEN"}
    assert "GIVEN" in names
    assert b"leaked" not in result.stdout
    host_only = {name for name in os.environ if name not in ("PATH", "HOME")}
    assert not names & host_only


async def test_runs_unprivileged_by_default(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    result = await sh(runtime, sandbox.id, "id -u; id -g; grep CapEff /proc/self/status")
    uid, gid, caps = result.stdout.decode().splitlines()
    assert (uid, gid) == ("1000", "1000")
    assert caps.split()[1] == "0000000000000000"


async def test_only_loopback_network(runtime: SandboxRuntime, sandbox: SandboxInfo) -> None:
    result = await sh(runtime, sandbox.id, "tail -n +3 /proc/net/dev | cut -d: -f1")
    assert [line.strip() for line in result.stdout.decode().splitlines()] == ["lo"]
    probe = "import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)"
    connect = await runtime.run(sandbox.id, ExecRequest(argv=["python3", "-c", probe]))
    assert connect.exit_code != 0


async def test_host_files_are_not_visible(
    runtime: SandboxRuntime, sandbox: SandboxInfo, tmp_path: Path
) -> None:
    marker = tmp_path / "host-marker.txt"
    marker.write_text("host secret")
    result = await sh(runtime, sandbox.id, f"cat {marker}; ls {tmp_path}")
    assert result.exit_code != 0
    assert b"host secret" not in result.stdout
    passwd = await runtime.run(sandbox.id, ExecRequest(argv=["cat", "/etc/passwd"]))
    assert passwd.stdout != HOST_PASSWD
    assert b"sandbox:x:1000:1000" in passwd.stdout


async def test_root_filesystem_writes_stay_in_their_sandbox(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory, state_dir: Path
) -> None:
    """The image's files are not the sandbox user's to change; what root writes over them
    (apt, pip into the image's venv) is the sandbox's own: the image every sandbox starts
    from, and a neighbour made from it, never see it."""
    first, second = await make_sandbox(), await make_sandbox()
    as_user = await sh(runtime, first.id, "touch /usr/bin/planted")
    assert as_user.exit_code != 0 and b"Permission denied" in as_user.stderr
    await sh(runtime, first.id, "echo planted > /usr/bin/planted", user="0:0")
    await sh(runtime, first.id, "echo changed >> /etc/hostname", user="0:0")
    seen = await sh(runtime, second.id, "ls /usr/bin/planted; grep -c changed /etc/hostname")
    assert seen.exit_code != 0 and b"planted" not in seen.stdout
    assert seen.stdout.strip() == b"0"
    assert not await asyncio.to_thread(lambda: [p for p in state_dir.rglob("planted")])
    third = await make_sandbox()
    assert (await sh(runtime, third.id, "ls /usr/bin/planted")).exit_code != 0


async def test_sandboxes_cannot_see_each_other(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    first, second = await make_sandbox(), await make_sandbox()
    await sh(
        runtime, first.id, "echo first-work-data > /work/secret; echo first-tmp-data > /tmp/secret"
    )
    sleeper = await runtime.exec(first.id, ExecRequest(argv=["sleep", "4242"], timeout_s=30))
    seen = await sh(runtime, second.id, "cat /work/secret /tmp/secret; ps -e -o args=")
    assert b"first-work-data" not in seen.stdout and b"first-tmp-data" not in seen.stdout
    assert seen.stderr.count(b"No such file") == 2
    assert b"4242" not in seen.stdout
    await sleeper.kill()
    assert (await sleeper.wait()).outcome == "killed"


async def test_the_tenant_environment_never_reaches_root_helpers(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    # A PATH the sandbox controls, with look-alikes of the tools a kill uses: if a root helper
    # ran them, the marker would show who ran it.
    box = await make_sandbox(env={"PATH": "/work/bin:/usr/bin:/bin"})
    plant = (
        "mkdir -p /work/bin; for tool in readlink cat kill ps sh hostname; do "
        "printf '#!/bin/sh\\nid -u >> /tmp/ran-as\\nexec /bin/$(basename $0) \"$@\"\\n' "
        "> /work/bin/$tool; chmod +x /work/bin/$tool; done"
    )
    assert (await sh(runtime, box.id, plant)).exit_code == 0
    result = await runtime.run(box.id, ExecRequest(argv=["/bin/sleep", "30"], timeout_s=1))
    assert result.outcome == "timeout"
    ran = await runtime.run(box.id, ExecRequest(argv=["/bin/sh", "-c", "cat /tmp/ran-as || true"]))
    assert b"0" not in ran.stdout.split(), ran.stdout
