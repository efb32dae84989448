"""May we connect to this address: decided by the host a connection to it actually reaches.

An IPv6 address can carry an IPv4 one, and packets sent to it end up at that IPv4 host:
IPv4-mapped (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`) addresses, the NAT64
well-known prefix (`64:ff9b::/96`), 6to4 (`2002::/16`, the address in bits 16-47) and Teredo
(`2001::/32`, the client's address inverted in the last 32 bits). Judged by its own properties
the outer address looks public (`[::127.0.0.1]`, `[64:ff9b::a9fe:a9fe]`), so every check here
unwraps first and then judges what is reached with `ipaddress`'s properties and the special
blocks below: loopback, private, shared (CGNAT), link-local, unique local, site-local,
multicast, unspecified, reserved, documentation, cloud metadata services. The local-use NAT64
prefix (`64:ff9b:1::/48`) is refused whole: where its IPv4 address sits is the local
translator's choice. An address with a zone id (`fe80::1%eth0`) names an interface of this
host and is never connected to.

What an operator opened beyond public space is a `Grants`: private IPv4 ranges given to a
tenant's sandboxes (`network_private_cidrs`, never the `ALWAYS_BLOCKED` blocks), or every local
address for the server's own review fetches (`AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS`).

Every decision to connect somewhere a tenant named goes through `refusal`: review
repositories (service/reviews/source.py) and sandbox egress (service/runtime/egress.py, which
also takes the IPv4 tables below for whole networks).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

IPAddress = IPv4Address | IPv6Address


def _v4(*cidrs: str) -> tuple[IPv4Network, ...]:
    return tuple(IPv4Network(c) for c in cidrs)


def _v6(*cidrs: str) -> tuple[IPv6Network, ...]:
    return tuple(IPv6Network(c) for c in cidrs)


# IANA's special-purpose IPv4 blocks that are not globally reachable (for whole networks, where
# an address's properties do not apply).
NON_PUBLIC = _v4(
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",  # CGNAT; clouds put services here (100.100.100.200)
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",  # with 255.255.255.255
)
# What an operator may grant a tenant: RFC 1918, CGNAT and the benchmark range.
GRANTABLE = _v4("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "198.18.0.0/15")
# Never reachable by a sandbox, whatever its grants say.
ALWAYS_BLOCKED = _v4(
    "0.0.0.0/8",
    "127.0.0.0/8",
    "169.254.0.0/16",  # link-local: AWS, GCP, Azure, OCI, DigitalOcean metadata, ECS, Tencent
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "168.63.129.16/32",  # Azure wire server (metadata, DNS, health), a public address
    "192.0.0.192/32",  # Oracle Cloud metadata alias
    "224.0.0.0/4",
    "240.0.0.0/4",
)
ALWAYS_BLOCKED_V6 = _v6("::/127", "fe80::/10", "fd00:ec2::/32", "ff00::/8")
METADATA = (*_v4("100.100.100.200/32", "168.63.129.16/32", "192.0.0.192/32"),
            *_v6("fd00:ec2::/32"))  # fmt: skip
DOCUMENTATION = (*_v4("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"),
                 *_v6("2001:db8::/32", "3fff::/20"))  # fmt: skip
SHARED = IPv4Network("100.64.0.0/10")
UNIQUE_LOCAL = IPv6Network("fc00::/7")
IPV4_COMPATIBLE = IPv6Network("::/96")
NAT64 = IPv6Network("64:ff9b::/96")
NAT64_LOCAL = IPv6Network("64:ff9b:1::/48")


@dataclass(frozen=True)
class Grants:
    """What the operator opened beyond public space: private IPv4 ranges (a tenant's
    `network_private_cidrs`), or every local address (`local`, the server's own fetches where
    local repositories are enabled)."""

    networks: tuple[IPv4Network, ...] = ()
    local: bool = False


NO_GRANTS = Grants()


@dataclass(frozen=True)
class Reach:
    """An address, what a connection to it reaches, and the form that carries it there."""

    address: IPAddress
    target: IPAddress
    via: str | None = None  # None: the address is reached as it is


@dataclass(frozen=True)
class Refusal:
    """Why a connection to an address (`given`, as written) is refused: what it reaches, and
    what kind of address that is."""

    given: str
    reach: Reach
    kind: str

    def __str__(self) -> str:
        if self.reach.via is None:
            return f"{self.given} is {self.kind}"
        return f"{self.given} reaches {self.reach.target} ({self.reach.via}), which is {self.kind}"


def reach(address: IPAddress) -> Reach:
    """Where a connection to `address` ends up: the IPv4 address an IPv6 form carries, or the
    address itself."""
    if isinstance(address, IPv4Address):
        return Reach(address, address)
    if address.ipv4_mapped is not None:
        return Reach(address, address.ipv4_mapped, "IPv4-mapped")
    if address in IPV4_COMPATIBLE and int(address) > 1:  # `::` and `::1` are IPv6's own
        return Reach(address, IPv4Address(int(address)), "IPv4-compatible")
    if address in NAT64:
        return Reach(address, IPv4Address(int(address) & 0xFFFFFFFF), "NAT64")
    if address.sixtofour is not None:
        return Reach(address, address.sixtofour, "6to4")
    if address.teredo is not None:
        return Reach(address, address.teredo[1], "Teredo client")
    return Reach(address, address)


def kind(address: IPAddress) -> str | None:
    """What makes an address unfit to connect to from here (None: it is public)."""
    checks = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (_within(address, METADATA), "a cloud metadata service"),
        (isinstance(address, IPv6Address) and address.is_site_local, "site-local"),
        (address in NAT64_LOCAL, "a local-use NAT64 prefix"),
        (_within(address, DOCUMENTATION), "documentation space"),
        (address in UNIQUE_LOCAL, "unique local"),
        (address in SHARED, "shared address space (CGNAT)"),
        (address.is_reserved, "reserved"),
        (address.is_private, "private"),
        (not address.is_global or _within(address, NON_PUBLIC), "special-purpose"),
    )
    return next((name for hit, name in checks if hit), None)


def refusal(text: str, grants: Grants = NO_GRANTS) -> Refusal | None:
    """None when a connection to the address `text` may be made under `grants`, else why not.
    ValueError when `text` is not an IP address (a name is checked once resolved)."""
    address = ip_address(text)
    if isinstance(address, IPv6Address) and address.scope_id is not None:
        scoped = f"scoped to the interface {address.scope_id!r} of this host"
        return Refusal(text, Reach(address, address), scoped)
    where = reach(address)
    found = kind(where.target)
    if found is None or _granted(where.target, grants):
        return None
    return Refusal(text, where, found)


def _granted(target: IPAddress, grants: Grants) -> bool:
    if grants.local:
        return True
    if not isinstance(target, IPv4Address) or _within(target, ALWAYS_BLOCKED):
        return False
    return _within(target, grants.networks)


def _within(address: IPAddress, networks: tuple[IPv4Network | IPv6Network, ...]) -> bool:
    return any(address in net for net in networks)  # an address is never in the other family
