"""Test hosts for network tests: a network namespace joined to this machine by a veth pair,
serving files over HTTP from a directory, and a record of the sandbox networks made meanwhile
so a test can check that none of them is left behind."""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from service.runtime.gvisor import network
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


# Addresses a sandbox must never reach, whatever its policy: a private address, the cloud
# metadata services of Alibaba (in CGNAT space), Azure (in public space) and everyone else.
INTERNAL = ("10.0.0.1", "100.100.100.200", "168.63.129.16", "169.254.169.254")


@contextmanager
def internal_host(octet: int, port: int, addresses: tuple[str, ...] = INTERNAL) -> Iterator[Peer]:
    """A test host that answers TCP on `port` at `addresses`: a namespace behind a veth
    (10.249.<octet>.1/30 on this machine, .2 inside) holding them, with /32 routes from this
    machine to it. A packet a sandbox's rules let through to one of them connects ("open");
    one they refuse is reset at once. The routes go with the namespace's veth."""
    tag = secrets.token_hex(3)
    netns, outer, inner = f"alt-{tag}", f"alt{tag}h", f"alt{tag}p"
    host_side, address = f"10.249.{octet}.1", f"10.249.{octet}.2"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    peer = Peer(netns, host_side, address, [])
    ip("netns", "add", netns)
    try:
        ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", netns)
        ip("addr", "add", f"{host_side}/30", "dev", outer)
        ip("link", "set", outer, "up")
        ip("-n", netns, "addr", "add", f"{address}/30", "dev", inner)
        for extra in addresses:
            ip("-n", netns, "addr", "add", f"{extra}/32", "dev", "lo")
        ip("-n", netns, "link", "set", inner, "up")
        ip("-n", netns, "link", "set", "lo", "up")
        ip("-n", netns, "route", "add", "default", "via", host_side)
        for extra in addresses:
            ip("route", "add", f"{extra}/32", "via", address, "dev", outer)
        server = "import socket, sys\n" + LISTENER
        peer.servers.append(
            subprocess.Popen(
                ["ip", "netns", "exec", netns, sys.executable, "-c", server, str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        for extra in addresses:
            _wait_listening(extra, port)  # reachable from this machine: the route works
        yield peer
    finally:
        _remove_host(peer)


# Accepts connections on every address of its namespace and closes them.
LISTENER = """
s = socket.create_server(("0.0.0.0", int(sys.argv[1])))
while True:
    s.accept()[0].close()
"""
