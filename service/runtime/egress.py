"""Which destinations a sandbox may reach: the one network-policy validator.

Every path that takes a policy uses it: the API (sandboxes, PATCH, templates, reviews; the
pool serves only creates without a network), the gVisor rules (`network.py`) and BoxLite's
option mapping. The rules:

- Global unicast only, by default. An allowlist CIDR must not touch a non-public block
  (`NON_PUBLIC`: RFC 1918, CGNAT, loopback, link-local, documentation and benchmark ranges,
  multicast, reserved) unless it lies inside a private range the operator granted the tenant
  (the `network_private_cidrs` quota, carried to the runtime as `SandboxSpec.network_private`).
- `ALWAYS_BLOCKED` (link-local 169.254/16 with every cloud's metadata service, Alibaba's
  100.100.100.200, Azure's 168.63.129.16, loopback, 0/8, multicast, reserved) is never
  reachable, granted or not: an entry inside it is refused, and where an entry overlaps it
  the blocked part stays blocked (first in the gVisor chain, cut out for BoxLite).
- `open` is the public address space only.
- Host names are resolved on the host; addresses the sandbox may not reach (decided by
  `service.addresses`, the one address check, on the same tables) are dropped and a name left
  with none is refused. The runtime pins the sandbox to the addresses kept.

Refusals are `PolicyRefused` (an `InvalidSpec`, a 422 at the API) naming the entry.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from service.addresses import (
    ALWAYS_BLOCKED,
    ALWAYS_BLOCKED_V6,
    GRANTABLE,
    NON_PUBLIC,
    Grants,
    refusal,
)

from .errors import InvalidSpec

IPv4Network = ipaddress.IPv4Network
Resolver = Callable[[str], list[str]]


ANY = IPv4Network("0.0.0.0/0")
MAX_ENTRIES = 64
MAX_GRANTS = 32
GRANT = "granted private range"

HOST_NAME = re.compile(
    r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*"
)


class PolicyRefused(InvalidSpec):
    """A policy entry (or a granted range) that is refused; `entry` names it."""

    def __init__(self, entry: str, reason: str, what: str = "network allow entry") -> None:
        self.entry = entry
        super().__init__(f"{what} {entry!r} {reason}")


@dataclass(frozen=True)
class Allow:
    """One allowlist entry: a host name or a network, with an optional TCP/UDP port."""

    host: str | None
    net: IPv4Network | None
    port: int | None


@dataclass(frozen=True)
class Destination:
    """A network the sandbox may reach (`port` None: any), and whether it lies in a grant."""

    net: IPv4Network
    port: int | None
    granted: bool


@dataclass(frozen=True)
class Egress:
    """A policy resolved now: its destinations, and the names with the addresses kept."""

    destinations: tuple[Destination, ...]
    names: dict[str, list[str]]


def _ipv6(text: str) -> ipaddress.IPv6Network | None:
    bare = text[1:].partition("]")[0] if text.startswith("[") else text
    try:
        net = ipaddress.ip_network(bare, strict=False)
    except ValueError:
        return None
    return net if isinstance(net, ipaddress.IPv6Network) else None


def parse_entry(entry: str) -> Allow:
    """`host`, `host:port`, `a.b.c.d`, `a.b.c.d/nn` or `a.b.c.d[/nn]:port`; IPv4 only."""
    text = entry.strip().lower()
    if (v6 := _ipv6(text)) is not None:
        if any(v6.overlaps(b) for b in ALWAYS_BLOCKED_V6):
            raise PolicyRefused(entry, "is a link-local or metadata address, never reachable")
        raise PolicyRefused(entry, "is IPv6; sandbox networks are IPv4 only")
    port: int | None = None
    base, sep, tail = text.rpartition(":")
    if sep:
        if not tail.isdigit() or not 1 <= int(tail) <= 65535:
            raise PolicyRefused(entry, "has a port outside 1-65535")
        text, port = base, int(tail)
    try:
        return Allow(None, IPv4Network(text, strict=False), port)
    except ValueError:
        pass
    if not HOST_NAME.fullmatch(text) or text.replace(".", "").isdigit():
        raise PolicyRefused(entry, "is not a host name, IPv4 address or CIDR")
    return Allow(text, None, port)


def parse_allow(entries: Sequence[str]) -> list[Allow]:
    if len(entries) > MAX_ENTRIES:
        raise InvalidSpec(f"a network allowlist holds at most {MAX_ENTRIES} entries")
    return [parse_entry(e) for e in entries]


def parse_grants(cidrs: Sequence[str]) -> tuple[IPv4Network, ...]:
    """The private ranges an operator granted: each an IPv4 network (host bits are ignored:
    `10.1.2.3/16` is 10.1.0.0/16) inside one grantable block and not wholly always blocked
    (service.hostnames.GRANT states the same form)."""
    if len(cidrs) > MAX_GRANTS:
        raise InvalidSpec(f"at most {MAX_GRANTS} private ranges can be granted")
    grants = []
    for cidr in cidrs:
        try:
            net = IPv4Network(cidr, strict=False)
        except ValueError as exc:
            raise PolicyRefused(cidr, f"is not an IPv4 network: {exc}", GRANT) from exc
        if not any(net.subnet_of(block) for block in GRANTABLE):
            raise PolicyRefused(
                cidr,
                "is not inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 or "
                "198.18.0.0/15 (public space needs no grant)",
                GRANT,
            )
        if _wholly_blocked(net):
            raise PolicyRefused(cidr, "is link-local, loopback or reserved: never reachable", GRANT)
        grants.append(net)
    return tuple(grants)


def _wholly_blocked(net: IPv4Network) -> bool:
    return any(net.subnet_of(b) for b in ALWAYS_BLOCKED)


# What the operator's own work (its templates' builds) may reach: every grantable block; the
# operator is who grants, so it holds every grant.
OPERATOR_GRANTS = tuple(str(b) for b in GRANTABLE)


def is_public(net: IPv4Network) -> bool:
    return not any(net.overlaps(block) for block in NON_PUBLIC)


def _granted(net: IPv4Network, grants: Sequence[IPv4Network]) -> bool:
    return any(net.subnet_of(g) for g in grants)


def destination(
    entry: str, net: IPv4Network, port: int | None, grants: Sequence[IPv4Network]
) -> Destination:
    """The destination an allowlist network stands for, or PolicyRefused."""
    if _wholly_blocked(net):
        raise PolicyRefused(entry, "is a link-local, metadata or reserved address, never reachable")
    if is_public(net):
        return Destination(net, port, granted=False)
    if _granted(net, grants):
        return Destination(net, port, granted=True)
    raise PolicyRefused(
        entry,
        "reaches private or reserved addresses the operator has not granted to this tenant "
        "(network_private_cidrs)",
    )


def address_allowed(address: str, grants: Sequence[IPv4Network]) -> bool:
    """A resolved address the sandbox may reach: IPv4 (sandbox networks are IPv4 only), and
    public or inside a grant by what it reaches (service.addresses)."""
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return refusal(address, Grants(networks=tuple(grants))) is None


def check(allow: Sequence[str], private: Sequence[str] = ()) -> list[Allow]:
    """Static checks of an allowlist (no name is resolved): the entries, parsed."""
    grants = parse_grants(private)
    entries = parse_allow(allow)
    for raw, entry in zip(allow, entries, strict=True):
        if entry.net is not None:
            destination(raw, entry.net, entry.port, grants)
    return entries


def keep_addresses(
    entry: str, addresses: Sequence[str], grants: Sequence[IPv4Network]
) -> list[str]:
    """The addresses of a resolved name the sandbox may reach (none for a name without an
    IPv4 address now); PolicyRefused when it has addresses and none may be reached."""
    kept = [a for a in addresses if address_allowed(a, grants)]
    if addresses and not kept:
        shown = ", ".join(addresses[:4])
        raise PolicyRefused(entry, f"resolves only to addresses it may not reach ({shown})")
    return kept


def system_resolver(name: str) -> list[str]:
    infos = socket.getaddrinfo(name, None, family=socket.AF_INET, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def _lookup(host: str, resolver: Resolver) -> list[str]:
    """A name's IPv4 addresses now; none while it does not resolve (it then reaches nothing)."""
    try:
        return resolver(host)
    except OSError:
        return []


def resolve(mode: str, allow: Sequence[str], private: Sequence[str], resolver: Resolver) -> Egress:
    """The policy as destinations, with its host names resolved now and filtered."""
    if mode == "open":
        return Egress((Destination(ANY, None, granted=False),), {})
    grants = parse_grants(private)
    destinations: list[Destination] = []
    names: dict[str, list[str]] = {}
    for raw, entry in zip(allow, parse_allow(allow), strict=True):
        if entry.net is not None:
            destinations.append(destination(raw, entry.net, entry.port, grants))
            continue
        assert entry.host is not None
        if entry.host not in names:
            found = _lookup(entry.host, resolver)
            names[entry.host] = keep_addresses(raw, found, grants)
        destinations += [
            Destination(IPv4Network(a), entry.port, granted=not is_public(IPv4Network(a)))
            for a in names[entry.host]
        ]
    return Egress(tuple(destinations), names)


def check_names(allow: Sequence[str], private: Sequence[str], resolver: Resolver) -> None:
    """Resolve the allowlist's host names now and refuse one that leads only where the tenant
    may not go."""
    resolve("allowlist", allow, private, resolver)


def has_names(allow: Sequence[str]) -> bool:
    return any(entry.host is not None for entry in parse_allow(allow))


def without_blocked(net: IPv4Network) -> list[IPv4Network]:
    """`net` minus every always-blocked block, as CIDRs (for a runtime that only allows)."""
    parts = [net]
    for blocked in ALWAYS_BLOCKED:
        next_parts: list[IPv4Network] = []
        for part in parts:
            if part.subnet_of(blocked):
                continue
            if blocked.subnet_of(part):
                next_parts += part.address_exclude(blocked)
            else:
                next_parts.append(part)
        parts = next_parts
    return sorted(parts)
