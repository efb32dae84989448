"""Pure logic of egress policies: allowlist entries, resolution and the rules they become.
(Enforcement itself is tested against real sandboxes in tests/runtime/test_network.py.)"""

from __future__ import annotations

import ipaddress

import pytest

from service.runtime import SandboxSpec, gvisor_spec
from service.runtime.errors import InvalidSpec
from service.runtime.network import Networks, Slot, parse_allow, parse_entry


@pytest.mark.parametrize(
    ("entry", "host", "net", "port"),
    [
        ("packages.example.com", "packages.example.com", None, None),
        ("git.example.com:443", "git.example.com", None, 443),
        ("10.20.0.0/24", None, "10.20.0.0/24", None),
        ("10.20.0.7", None, "10.20.0.7/32", None),
        ("10.20.0.0/24:8080", None, "10.20.0.0/24", 8080),
        ("Pkgs.Example.COM", "pkgs.example.com", None, None),
    ],
)
def test_entries_parse(entry: str, host: str | None, net: str | None, port: int | None) -> None:
    parsed = parse_entry(entry)
    assert parsed.host == host
    assert parsed.net == (ipaddress.IPv4Network(net) if net else None)
    assert parsed.port == port


@pytest.mark.parametrize(
    "entry", ["", "a b", "host:0", "host:70000", "host:", "-bad.com", "10.0.0.300", "::1", "x/24"]
)
def test_bad_entries_are_refused(entry: str) -> None:
    with pytest.raises(InvalidSpec):
        parse_entry(entry)


def test_spec_validation() -> None:
    gvisor_spec.validate(SandboxSpec(network="allowlist", network_allow=["a.example:443"]))
    gvisor_spec.validate(SandboxSpec(network="open"))
    for bad in (
        SandboxSpec(network_allow=["a.example"]),  # an allowlist without mode "allowlist"
        SandboxSpec(network="open", network_allow=["a.example"]),
        SandboxSpec(network="allowlist", network_allow=["a.example:99999"]),
    ):
        with pytest.raises(InvalidSpec):
            gvisor_spec.validate(bad)


def test_names_resolve_to_rules_and_hosts_entries() -> None:
    networks = Networks(resolver=lambda name: {"pkgs.test": ["10.9.0.5", "10.9.0.6"]}[name])
    targets, names = networks.resolve("allowlist", ["pkgs.test:443", "10.20.0.0/24"])
    assert targets == [("10.9.0.5/32", 443), ("10.9.0.6/32", 443), ("10.20.0.0/24", None)]
    assert names == {"pkgs.test": ["10.9.0.5", "10.9.0.6"]}
    with pytest.raises(InvalidSpec):
        Networks(resolver=lambda name: []).resolve("allowlist", ["nothing.test"])


def test_rules_block_forbidden_destinations_before_any_allow() -> None:
    networks = Networks()
    slot = Slot("alk-" + "ab" * 12, 3, "10.231.0.13", "10.231.0.14")
    rules = networks._rules(slot, [("0.0.0.0/0", None)]).splitlines()
    first_accept = next(i for i, line in enumerate(rules) if line.endswith("-j ACCEPT"))
    before = "\n".join(rules[:first_accept])
    for blocked in ("--dst-type LOCAL", "127.0.0.0/8", "169.254.0.0/16", "10.231.0.0/16"):
        assert blocked in before
    assert rules[-3:] == [
        f'-A ALI-{"ab" * 12} -p tcp -m comment --comment "{slot.sandbox_id}" '
        "-j REJECT --reject-with tcp-reset",
        f'-A ALI-{"ab" * 12} -m comment --comment "{slot.sandbox_id}" '
        "-j REJECT --reject-with icmp-port-unreachable",
        "COMMIT",
    ]
    assert all(slot.sandbox_id in line for line in rules if line.startswith("-A"))
    assert len(slot.veth_host) <= 15 and len(slot.egress_chain) <= 28


def test_presets_bundle_a_valid_policy() -> None:
    from service.sandboxes.schemas import PRESETS

    tool, ci = PRESETS["untrusted-tool"], PRESETS["ci"]
    assert tool.network.mode == "none" and tool.user == "1000:1000"
    assert ci.network.mode == "allowlist"
    entries = parse_allow(ci.network.allow)
    assert {e.host for e in entries} >= {"pypi.org", "github.com"}
    assert all(e.port == 443 for e in entries)


def test_boxlite_maps_an_allowlist_onto_its_allow_net() -> None:
    from pathlib import Path

    from service.runtime.boxlite import _box_options, box_options_kwargs

    spec = SandboxSpec(network="allowlist", network_allow=["pkgs.example.com", "10.20.0.0/24"])
    options = _box_options(spec, Path("/images/x"))
    assert options.network.outbound.mode == "enabled"
    assert list(options.network.outbound.allow_net) == ["pkgs.example.com", "10.20.0.0/24"]
    assert options.network.inbound.mode == "disabled"
    assert _box_options(SandboxSpec(), Path("/x")).network.outbound.mode == "disabled"
    for refused in (SandboxSpec(network="open"), SandboxSpec(network="allowlist")):
        with pytest.raises(InvalidSpec):  # open: no enforcement point keeps the host out
            box_options_kwargs(refused, Path("/x"))
