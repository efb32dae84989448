"""The one address check (service.addresses): each form an address can take, what it reaches,
and whether a connection there is allowed, and why not."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.addresses import ALWAYS_BLOCKED, NON_PUBLIC, Grants, refusal
from service.runtime import egress

PRIVATE_GRANTS = Grants(networks=(IPv4Network("10.0.0.0/8"), IPv4Network("100.64.0.0/10")))
LOCAL = Grants(local=True)
ALLOWED = None
ZONE = "scoped to the interface 'eth0' of this host"

# (address, grants, None where allowed, else (what it reaches, through which form, what kind)).
FORMS = [
    # Public addresses, as they are and as IPv6 forms that carry them.
    ("8.8.8.8", Grants(), ALLOWED),
    ("2606:4700:4700::1111", Grants(), ALLOWED),
    ("::ffff:8.8.8.8", Grants(), ALLOWED),
    ("64:ff9b::8.8.8.8", Grants(), ALLOWED),  # what a DNS64 resolver answers
    ("2002:808:808::1", Grants(), ALLOWED),
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", Grants(), ALLOWED),  # Teredo client 8.8.8.8
    # The four forms that got through the reviews check, and their kin.
    ("::127.0.0.1", Grants(), ("127.0.0.1", "IPv4-compatible", "loopback")),
    ("::a9fe:a9fe", Grants(), ("169.254.169.254", "IPv4-compatible", "link-local")),
    ("64:ff9b::a9fe:a9fe", Grants(), ("169.254.169.254", "NAT64", "link-local")),
    ("2002:a9fe:a9fe::1", Grants(), ("169.254.169.254", "6to4", "link-local")),
    ("::ffff:127.0.0.1", Grants(), ("127.0.0.1", "IPv4-mapped", "loopback")),
    ("::ffff:10.0.0.1", Grants(), ("10.0.0.1", "IPv4-mapped", "private")),
    ("64:ff9b::10.1.2.3", Grants(), ("10.1.2.3", "NAT64", "private")),
    ("2002:c0a8:101::1", Grants(), ("192.168.1.1", "6to4", "private")),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", Grants(), ("127.0.0.1", "Teredo client", "loopback")),
    ("64:ff9b:1::a9fe:a9fe", Grants(), ("64:ff9b:1::a9fe:a9fe", None, "a local-use NAT64 prefix")),
    # IPv4 blocks.
    ("127.0.0.1", Grants(), ("127.0.0.1", None, "loopback")),
    ("10.1.2.3", Grants(), ("10.1.2.3", None, "private")),
    ("172.16.0.1", Grants(), ("172.16.0.1", None, "private")),
    ("192.168.1.1", Grants(), ("192.168.1.1", None, "private")),
    ("169.254.169.254", Grants(), ("169.254.169.254", None, "link-local")),
    ("100.64.0.1", Grants(), ("100.64.0.1", None, "shared address space (CGNAT)")),
    ("100.100.100.200", Grants(), ("100.100.100.200", None, "a cloud metadata service")),
    ("168.63.129.16", Grants(), ("168.63.129.16", None, "a cloud metadata service")),
    ("0.0.0.0", Grants(), ("0.0.0.0", None, "unspecified")),  # noqa: S104
    ("224.0.0.1", Grants(), ("224.0.0.1", None, "multicast")),
    ("240.0.0.1", Grants(), ("240.0.0.1", None, "reserved")),
    ("255.255.255.255", Grants(), ("255.255.255.255", None, "reserved")),
    ("192.0.2.1", Grants(), ("192.0.2.1", None, "documentation space")),
    ("192.88.99.1", Grants(), ("192.88.99.1", None, "special-purpose")),
    # IPv6 blocks.
    ("::1", Grants(), ("::1", None, "loopback")),
    ("::", Grants(), ("::", None, "unspecified")),
    ("fe80::1", Grants(), ("fe80::1", None, "link-local")),
    ("fc00::1", Grants(), ("fc00::1", None, "unique local")),
    ("fd12:3456::1", Grants(), ("fd12:3456::1", None, "unique local")),
    ("fd00:ec2::254", Grants(), ("fd00:ec2::254", None, "a cloud metadata service")),
    ("fec0::1", Grants(), ("fec0::1", None, "site-local")),
    ("ff02::1", Grants(), ("ff02::1", None, "multicast")),
    ("2001:db8::1", Grants(), ("2001:db8::1", None, "documentation space")),
    ("3fff::1", Grants(), ("3fff::1", None, "documentation space")),
    ("100::1", Grants(), ("100::1", None, "reserved")),
    # Zone ids name an interface of this host: refused whatever is granted.
    ("fe80::1%eth0", Grants(), ("fe80::1%eth0", None, ZONE)),
    ("fe80::1%eth0", LOCAL, ("fe80::1%eth0", None, ZONE)),
    # A tenant's granted ranges open private IPv4 space, wrapped or not, never metadata.
    ("10.1.2.3", PRIVATE_GRANTS, ALLOWED),
    ("::ffff:10.1.2.3", PRIVATE_GRANTS, ALLOWED),
    ("100.64.0.1", PRIVATE_GRANTS, ALLOWED),
    ("100.100.100.200", PRIVATE_GRANTS, ("100.100.100.200", None, "a cloud metadata service")),
    ("192.168.1.1", PRIVATE_GRANTS, ("192.168.1.1", None, "private")),
    ("fc00::1", PRIVATE_GRANTS, ("fc00::1", None, "unique local")),
    # Local repositories enabled: the server may fetch from its own networks.
    ("::127.0.0.1", LOCAL, ALLOWED),
    ("169.254.169.254", LOCAL, ALLOWED),
    ("fc00::1", LOCAL, ALLOWED),
]


@pytest.mark.sqlite
@pytest.mark.parametrize(("address", "grants", "expected"), FORMS)
def test_address_forms(
    address: str, grants: Grants, expected: tuple[str, str | None, str] | None
) -> None:
    refused = refusal(address, grants)
    if expected is None:
        assert refused is None, str(refused)
        return
    assert refused is not None, f"{address} was allowed"
    target, via, kind = expected
    assert (str(refused.reach.target), refused.reach.via, refused.kind) == (target, via, kind)
    assert str(refused).startswith(address), str(refused)


@pytest.mark.sqlite
def test_names_are_not_addresses() -> None:
    for name in ("git.example.com", "localhost", "2130706433", "127.1"):
        with pytest.raises(ValueError):
            refusal(name)


@pytest.mark.sqlite
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_verdicts_follow_the_special_purpose_table(value: int) -> None:
    """Single addresses and allowlist networks are judged on the same tables: an IPv4 address
    is refused exactly where a special-purpose or an always-blocked block holds it, and a grant
    opens all but the always-blocked."""
    address = IPv4Address(value)
    blocked = any(address in net for net in ALWAYS_BLOCKED)
    non_public = blocked or any(address in net for net in NON_PUBLIC)
    assert (refusal(str(address)) is not None) == non_public
    assert egress.address_allowed(str(address), ()) == (not non_public)
    everything = Grants(networks=(IPv4Network("0.0.0.0/0"),))
    assert (refusal(str(address), everything) is not None) == blocked


@pytest.mark.sqlite
@given(st.integers(min_value=2, max_value=2**32 - 1))
def test_ipv6_forms_are_judged_by_the_ipv4_address_they_carry(value: int) -> None:
    address = IPv4Address(value)
    verdict = refusal(str(address))
    forms = [
        IPv6Address(f"::ffff:{address}"),  # IPv4-mapped
        IPv6Address(value),  # IPv4-compatible
        IPv6Address(f"64:ff9b::{address}"),  # NAT64
        IPv6Address((0x2002 << 112) | (value << 80) | 1),  # 6to4
        IPv6Address((0x20010000 << 96) | (value ^ 0xFFFFFFFF)),  # Teredo, client inverted
    ]
    for form in forms:
        refused = refusal(str(form))
        assert (refused is None) == (verdict is None), (str(form), str(refused))
        if refused is not None and verdict is not None:
            assert refused.reach.target == address and refused.kind == verdict.kind
