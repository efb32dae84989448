"""Test hosts for network tests: a network namespace joined to this machine by a veth pair,
serving files over HTTP from a directory, and a record of the sandbox networks made meanwhile
so a test can check that none of them is left behind."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from service.runtime import network
from tests.runtime.test_network import SERVER, Peer, _make_host, _remove_host, _wait_listening


@contextmanager
def file_host(octet: int, port: int, directory: Path) -> Iterator[Peer]:
    """A test host at 10.250.<octet>.2 serving `directory` on `port`."""
    peer = _make_host(octet, ())
    try:
        peer.servers.append(
            subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    peer.netns,
                    sys.executable,
                    "-c",
                    SERVER,
                    peer.address,
                    str(port),
                ],
                cwd=directory,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        _wait_listening(peer.address, port)
        yield peer
    finally:
        _remove_host(peer)


@contextmanager
def plain_host(octet: int, ports: tuple[int, ...]) -> Iterator[Peer]:
    peer = _make_host(octet, ports)
    try:
        yield peer
    finally:
        _remove_host(peer)


def host_state() -> str:
    """Everything on this machine that could mention a sandbox's network."""
    return "\n".join(
        subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        for cmd in (
            ["ip", "netns", "list"],
            ["ip", "-o", "link"],
            ["ip", "-o", "addr"],
            ["iptables-save"],
        )
    )


def left_behind(sandbox_ids: list[str]) -> list[str]:
    """Lines of the host's network state that still name one of these sandboxes."""
    tags = [sid.rsplit("-", 1)[-1] for sid in sandbox_ids]
    return [line for line in host_state().splitlines() if any(t[-12:] in line for t in tags)]


@pytest.fixture
def made_networks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Ids of the gVisor sandboxes that got a network while the test ran (the real setup
    runs; this only notes the ids)."""
    made: list[str] = []
    real = network.Networks.setup

    def noting(self: network.Networks, sandbox_id: str, *args: object) -> network.Slot:
        made.append(sandbox_id)
        return real(self, sandbox_id, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(network.Networks, "setup", noting)
    return made
