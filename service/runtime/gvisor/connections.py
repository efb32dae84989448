"""The TCP connections a checkpoint cuts: those a sandbox holds with anything outside itself.

runsc saves a sandbox's network stack with its memory, but a connection to a peer outside the
sandbox cannot be carried through a checkpoint (the peer goes on without it), so runsc resets
every such connection. Before a pause the runtime reads them from the sandbox's own
`/proc/net/tcp` and `/proc/net/tcp6` (`TCP_TABLES`, run inside as any helper is) and says in
the pause's answer and its audit record which were cut. Connections within the sandbox
(loopback) are kept.
"""

from __future__ import annotations

import ipaddress

TCP_TABLES = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true"
ESTABLISHED = "01"
CLOSE_WAIT = "08"


def _address(hex_address: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """`0100007F:1F90` (the kernel's table: each 32-bit word in host order, little-endian
    here) as an address and port."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip, int(port, 16)


def _shown(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> str:
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def outside(tables: str) -> list[str]:
    """The connections in `tables` (the two files' lines) that a checkpoint cuts, as
    `local -> remote`, sorted: open ones (established, or closed by the peer and not yet by
    the sandbox) whose peer is not the sandbox itself."""
    found = set()
    for line in tables.splitlines():
        fields = line.split()
        if (
            len(fields) < 4
            or not fields[0].endswith(":")
            or fields[3]
            not in (
                ESTABLISHED,
                CLOSE_WAIT,
            )
        ):
            continue
        try:
            local, remote = _address(fields[1]), _address(fields[2])
        except ValueError:
            continue
        if remote[0].is_loopback or remote[0] == local[0]:
            continue
        found.add(f"{_shown(*local)} -> {_shown(*remote)}")
    return sorted(found)
