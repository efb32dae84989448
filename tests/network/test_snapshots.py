"""Snapshots and sandboxes with a network on gVisor. runsc cannot checkpoint a sandbox on the
host network stack of its namespace, and a checkpoint taken without a network cannot be
restored onto one, so a snapshot of a networked sandbox is refused with a clear error, and
what such a sandbox wrote moves to another sandbox through `copy_files` (tar in both)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.runtime import ExecRequest, SandboxSpec, images
from service.runtime.errors import InvalidSpec, SandboxRuntimeError
from service.runtime.gvisor import GVisorRuntime
from tests.network.hosts import Peer, left_behind, plain_host
from tests.runtime.conftest import gvisor, state_dir
from tests.runtime.test_network import PROBE

__all__ = ["gvisor", "state_dir"]  # fixtures, used by name

SPEC = SandboxSpec(memory_mib=256, disk_mib=128, pids=64)


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    import secrets

    with plain_host(4 + secrets.randbelow(120) * 2, (8080,)) as host:
        yield host


async def sh(runtime: GVisorRuntime, sandbox_id: str, script: str) -> tuple[int | None, str]:
    result = await runtime.run(sandbox_id, ExecRequest(argv=["sh", "-c", script], timeout_s=60))
    return result.exit_code, (result.stdout + result.stderr).decode()


async def test_a_networked_sandbox_cannot_be_snapshotted_and_keeps_running(
    gvisor: GVisorRuntime, peer: Peer
) -> None:
    spec = SandboxSpec(
        memory_mib=256,
        disk_mib=128,
        network="allowlist",
        network_allow=[peer.address],
        network_private=["10.250.0.0/16"],
    )
    info = await gvisor.create(images.DEFAULT_IMAGE, spec)
    try:
        with pytest.raises(InvalidSpec, match="cannot be snapshotted"):
            await gvisor.snapshot(info.id)
        code, out = await sh(gvisor, info.id, f"python3 -c '{PROBE}' '[\"{peer.address}:8080\"]'")
        assert (code, out.strip()) == (0, '["open"]')
    finally:
        await gvisor.destroy(info.id)
    assert left_behind([info.id]) == []


async def test_files_move_from_a_networked_sandbox_to_one_without(
    gvisor: GVisorRuntime, peer: Peer
) -> None:
    spec = SandboxSpec(
        memory_mib=256,
        disk_mib=128,
        network="allowlist",
        network_allow=[peer.address],
        network_private=["10.250.0.0/16"],
    )
    source = await gvisor.create(images.DEFAULT_IMAGE, spec)
    target = await gvisor.create(images.DEFAULT_IMAGE, SPEC)
    try:
        code, out = await sh(
            gvisor,
            source.id,
            "set -e; cd /work; mkdir -p a/b; echo one > a/b/f; chmod 700 a; ln -s a/b/f link;"
            " printf '#!/bin/sh\\necho ran\\n' > run.sh; chmod 755 run.sh;"
            " echo two > /tmp/t; echo three > ~/.h",
        )
        assert code == 0, out
        moved = await gvisor.copy_files(source.id, target.id)
        assert moved > 0
        code, out = await sh(
            gvisor,
            target.id,
            "cd /work && cat link /tmp/t ~/.h && ./run.sh && find a -maxdepth 0 -printf '%m\\n'"
            " && find /tmp -maxdepth 0 -printf '%m %u\\n' && cat /proc/net/dev | tail -n +3",
        )
        assert code == 0, out
        lines = out.splitlines()
        assert lines[:6] == ["one", "two", "three", "ran", "700", "1777 root"]
        assert [line.split(":")[0].strip() for line in lines[6:]] == ["lo"]
    finally:
        await gvisor.destroy(source.id)
        await gvisor.destroy(target.id)
    assert left_behind([source.id, target.id]) == []


async def test_a_failed_copy_says_why(gvisor: GVisorRuntime) -> None:
    source = await gvisor.create(images.DEFAULT_IMAGE, SPEC)
    target = await gvisor.create(images.DEFAULT_IMAGE, SPEC)
    try:
        code, out = await sh(gvisor, source.id, "echo secret > /work/f && chmod 000 /work/f")
        assert code == 0, out
        with pytest.raises(SandboxRuntimeError, match="Permission denied"):
            await gvisor.copy_files(source.id, target.id)
    finally:
        await gvisor.destroy(source.id)
        await gvisor.destroy(target.id)
