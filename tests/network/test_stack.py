"""The network stack of gVisor sandboxes with a network: netstack where a probe sandbox shows it
works here (the runtime's choice says so, and why), else the host stack of the sandbox's
namespace (hostinet), where policies hold as well and snapshots are refused with a clear
error."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from service.runtime import ExecRequest, SandboxSpec, images
from service.runtime.errors import InvalidSpec
from service.runtime.gvisor import GVisorRuntime, choose_platform, netstack
from tests.network.hosts import Peer, left_behind, plain_host
from tests.runtime.conftest import gvisor, state_dir
from tests.runtime.test_network import BLOCKED, PROBE

__all__ = ["gvisor", "state_dir"]  # fixtures, used by name

PEERS = ["10.250.0.0/16"]


@pytest.fixture(scope="module")
def peers() -> Iterator[tuple[Peer, Peer]]:
    base = 4 + secrets.randbelow(120) * 2
    with plain_host(base, (8080,)) as a, plain_host(base + 1, (8080,)) as b:
        yield a, b


@pytest.fixture
async def hostinet(state_dir: Path) -> AsyncIterator[GVisorRuntime]:
    """The runtime as it is where the netstack probe fails."""
    runtime = await GVisorRuntime.open(state_dir)
    fallback = netstack.NetworkChoice(netstack.HOSTINET, "the probe failed (as the test says)")
    runtime.platform_choice = dataclasses.replace(runtime.platform_choice, network=fallback)
    yield runtime
    await runtime.close()


def spec_for(peer: Peer) -> SandboxSpec:
    return SandboxSpec(
        memory_mib=256,
        disk_mib=64,
        pids=64,
        network="allowlist",
        network_allow=[f"{peer.address}:8080"],
        network_private=PEERS,
    )


async def probe(runtime: GVisorRuntime, sandbox_id: str, *targets: str) -> list[str]:
    script = f"python3 -c '{PROBE}' '{json.dumps(targets)}'"
    result = await runtime.run(sandbox_id, ExecRequest(argv=["sh", "-c", script], timeout_s=60))
    assert result.exit_code == 0, result.stderr.decode()
    return json.loads(result.stdout)


def test_this_machine_runs_networked_sandboxes_on_netstack() -> None:
    runsc = shutil.which("runsc")
    assert runsc is not None
    choice = choose_platform(runsc)
    assert choice.network is not None and choice.net_stack == netstack.NETSTACK, choice
    assert "probe sandbox saw its namespace's interface" in choice.network.reason
    assert "networked sandboxes on netstack" in str(choice)  # the log line and the doctor


async def test_a_networked_sandbox_runs_on_netstack_in_its_namespace(
    gvisor: GVisorRuntime, peers: tuple[Peer, Peer]
) -> None:
    a, b = peers
    info = await gvisor.create(images.DEFAULT_IMAGE, spec_for(a))
    try:
        meta = gvisor.store.load(info.id).meta
        assert meta["net_stack"] == netstack.NETSTACK
        assert "--network=sandbox" in gvisor.cli.command("state", info.id, meta=meta)
        # The sandbox kernel took the veth's address: the namespace keeps the bare link...
        inside = await asyncio.to_thread(addresses_in, info.id)
        assert meta["net"]["sandbox_ip"] not in inside, inside
        # ...which the sandbox sees as its own interface, behind the host's rules.
        result = await gvisor.run(
            info.id, ExecRequest(argv=["sh", "-c", "tail -n +3 /proc/net/dev"], timeout_s=30)
        )
        names = sorted(line.split(":")[0].strip() for line in result.stdout.decode().splitlines())
        assert names == sorted(["lo", "als" + info.id[-12:]])
        outcomes = await probe(gvisor, info.id, f"{a.address}:8080", f"{b.address}:8080")
        assert outcomes[0] == "open" and outcomes[1] in BLOCKED, outcomes
    finally:
        await gvisor.destroy(info.id)
    assert left_behind([info.id]) == []


def addresses_in(netns: str) -> str:
    argv = ["ip", "-n", netns, "-4", "-o", "addr"]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def test_a_runsc_that_refuses_netstack_leaves_networked_sandboxes_on_hostinet(
    tmp_path: Path,
) -> None:
    refusing = tmp_path / "runsc"
    refusing.write_text(
        "#!/bin/sh\n"
        'for a; do [ "$a" = run ] && { echo "cannot run with network enabled in root '
        'network namespace" >&2; exit 128; }; done\nexit 0\n'
    )
    refusing.chmod(0o755)
    choice = netstack.probe(str(refusing), "ptrace")
    assert choice.stack == netstack.HOSTINET
    assert "cannot run with network enabled in root network namespace" in choice.reason
    assert "snapshots of networked sandboxes are refused" in choice.reason


async def test_on_hostinet_policies_hold_and_snapshots_are_refused(
    hostinet: GVisorRuntime, gvisor: GVisorRuntime, peers: tuple[Peer, Peer]
) -> None:
    a, b = peers
    info = await hostinet.create(images.DEFAULT_IMAGE, spec_for(a))
    made = [info.id]
    snapshot = None
    try:
        meta = hostinet.store.load(info.id).meta
        assert meta["net_stack"] == netstack.HOSTINET
        assert "--network=host" in hostinet.cli.command("state", info.id, meta=meta)
        outcomes = await probe(hostinet, info.id, f"{a.address}:8080", f"{b.address}:8080")
        assert outcomes[0] == "open" and outcomes[1] in BLOCKED, outcomes
        with pytest.raises(InvalidSpec, match="cannot be snapshotted"):
            await hostinet.snapshot(info.id)
        assert await probe(hostinet, info.id, f"{a.address}:8080") == ["open"]
        # A snapshot taken on netstack cannot be restored where networks are on hostinet.
        source = await gvisor.create(images.DEFAULT_IMAGE, spec_for(a))
        made.append(source.id)
        snapshot = await gvisor.snapshot(source.id)
        with pytest.raises(InvalidSpec, match="cannot be restored"):
            await hostinet.create_from_snapshot(snapshot.id)
    finally:
        await hostinet.destroy(info.id)
        for sandbox_id in made[1:]:
            await gvisor.destroy(sandbox_id)
        if snapshot is not None:
            await gvisor.delete_snapshot(snapshot.id)
    assert left_behind(made) == []
