"""Pure logic of egress policies: allowlist entries, resolution and the rules they become.
(Enforcement itself is tested against real sandboxes in tests/runtime/test_network.py.)"""

from __future__ import annotations

import ipaddress

import msgspec
import pytest

from service.runtime import SandboxSpec, egress, specs
from service.runtime.egress import PolicyRefused
from service.runtime.errors import InvalidSpec
from service.runtime.gvisor.network import Networks, Slot, parse_allow, parse_entry


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
    specs.validate(SandboxSpec(network="allowlist", network_allow=["a.example:443"]))
    specs.validate(SandboxSpec(network="open"))
    for bad in (
        SandboxSpec(network_allow=["a.example"]),  # an allowlist without mode "allowlist"
        SandboxSpec(network="open", network_allow=["a.example"]),
        SandboxSpec(network="allowlist", network_allow=["a.example:99999"]),
    ):
        with pytest.raises(InvalidSpec):
            specs.validate(bad)


def test_names_resolve_to_rules_and_hosts_entries() -> None:
    names = {"pkgs.test": ["10.9.0.5", "10.9.0.6"], "mixed.test": ["10.1.0.1", "8.8.4.4"]}
    networks = Networks(resolver=lambda name: names[name])
    policy = networks.resolve("allowlist", ["pkgs.test:443", "10.20.0.0/24"], ["10.0.0.0/8"])
    assert [(str(d.net), d.port, d.granted) for d in policy.destinations] == [
        ("10.9.0.5/32", 443, True),
        ("10.9.0.6/32", 443, True),
        ("10.20.0.0/24", None, True),
    ]
    assert policy.names == {"pkgs.test": ["10.9.0.5", "10.9.0.6"]}
    # Without the grant a private answer is dropped; a name left with nothing is refused.
    assert networks.resolve("allowlist", ["mixed.test"]).names == {"mixed.test": ["8.8.4.4"]}
    with pytest.raises(PolicyRefused, match=r"pkgs\.test"):
        networks.resolve("allowlist", ["pkgs.test"])

    # A name with no address now (or whose lookup fails) reaches nothing, and is not refused.
    def fails(name: str) -> list[str]:
        raise OSError("no such name")

    for resolver in (lambda name: [], fails):
        policy = Networks(resolver=resolver).resolve("allowlist", ["nothing.test"])
        assert policy.destinations == () and policy.names == {"nothing.test": []}


def _accepts_before_first(rules: list[str], needle: str) -> list[str]:
    first = next(i for i, line in enumerate(rules) if needle in line)
    return [line for line in rules[:first] if line.endswith("-j ACCEPT")]


def test_rules_block_forbidden_destinations_before_any_allow() -> None:
    networks = Networks()
    slot = Slot("alk-" + "ab" * 12, 3, "10.231.0.13", "10.231.0.14")
    rules = networks._rules(slot, networks.resolve("open", [])).splitlines()
    first_accept = next(i for i, line in enumerate(rules) if line.endswith("-j ACCEPT"))
    before = "\n".join(rules[:first_accept])
    for blocked in (
        "--dst-type LOCAL",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "100.100.100.200/32",
        "168.63.129.16/32",
        "10.231.0.0/16",
        # "open" is the public space only: every non-public block is refused before it.
        "10.0.0.0/8",
        "100.64.0.0/10",
        "172.16.0.0/12",
        "192.168.0.0/16",
    ):
        assert f"-d {blocked}" in before or blocked in before, blocked
    assert rules[-3:] == [
        f'-A ALI-{"ab" * 12} -p tcp -m comment --comment "{slot.sandbox_id}" '
        "-j REJECT --reject-with tcp-reset",
        f'-A ALI-{"ab" * 12} -m comment --comment "{slot.sandbox_id}" '
        "-j REJECT --reject-with icmp-port-unreachable",
        "COMMIT",
    ]
    assert all(slot.sandbox_id in line for line in rules if line.startswith("-A"))
    assert len(slot.veth_host) <= 15 and len(slot.egress_chain) <= 28


def test_granted_ranges_are_accepted_before_private_space_and_after_metadata() -> None:
    networks = Networks()
    slot = Slot("alk-" + "cd" * 12, 3, "10.231.0.13", "10.231.0.14")
    policy = networks.resolve("allowlist", ["100.64.0.0/10", "8.8.8.8:53"], ["100.64.0.0/10"])
    rules = networks._rules(slot, policy).splitlines()
    metadata = next(i for i, line in enumerate(rules) if "-d 100.100.100.200/32" in line)
    granted = next(i for i, line in enumerate(rules) if "-d 100.64.0.0/10" in line)
    private = next(
        i for i, line in enumerate(rules) if "-d 100.64.0.0/10" in line and "REJECT" in line
    )
    public = next(i for i, line in enumerate(rules) if "-d 8.8.8.8/32" in line)
    assert metadata < granted < private < public


@pytest.mark.parametrize(
    "allow",
    [
        ["0.0.0.0/0"],
        ["10.0.0.0/8"],
        ["100.64.0.0/10"],
        ["0.0.0.0/1", "128.0.0.0/1"],
        ["169.254.169.254"],
        ["100.100.100.200:80"],
        ["168.63.129.16"],
        ["192.168.1.1:5432"],
        ["172.16.0.0/12"],
        ["fd00:ec2::254"],
        ["[fd00:ec2::254]:80"],
    ],
)
def test_non_public_entries_are_refused_by_default_naming_the_entry(allow: list[str]) -> None:
    with pytest.raises(PolicyRefused) as refused:
        egress.check(allow)
    assert refused.value.entry == allow[0]
    assert allow[0] in str(refused.value)


def test_grants_open_private_ranges_but_never_metadata() -> None:
    grants = ["10.20.0.0/16", "100.64.0.0/10"]
    egress.check(["10.20.3.0/24:5432", "100.64.0.0/10", "8.8.8.0/24"], grants)
    for refused in (["10.21.0.0/24"], ["100.100.100.200"], ["169.254.169.254"], ["10.0.0.0/8"]):
        with pytest.raises(PolicyRefused):
            egress.check(refused, grants)
    for bad in (["8.8.8.0/24"], ["169.254.0.0/16"], ["127.0.0.0/8"], ["192.0.2.0/24"], ["x"]):
        with pytest.raises(InvalidSpec):
            egress.parse_grants(bad)


def test_spec_grants_are_checked_by_the_runtime_too() -> None:
    private = SandboxSpec(network="allowlist", network_allow=["10.20.0.0/24"])
    with pytest.raises(PolicyRefused):
        specs.validate(private)
    specs.validate(msgspec.structs.replace(private, network_private=["10.20.0.0/16"]))


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

    spec = SandboxSpec(
        network="allowlist",
        network_allow=["pkgs.example.com:443", "10.20.0.0/24", "100.100.100.0/24"],
        network_private=["10.20.0.0/16", "100.64.0.0/10"],
    )
    answers = {"pkgs.example.com": ["8.8.4.4", "10.99.0.1", "169.254.169.254"]}
    kwargs = box_options_kwargs(spec, Path("/images/x"), resolver=answers.__getitem__)
    # Names pinned to the public addresses checked; metadata cut out of a granted range.
    assert kwargs["allow_net"][:2] == ["8.8.4.4:443", "10.20.0.0/24"]
    assert "100.100.100.200" not in " ".join(kwargs["allow_net"])
    assert "100.100.100.201" in kwargs["allow_net"]
    options = _box_options(
        SandboxSpec(network="allowlist", network_allow=["8.8.8.0/24"]), Path("/images/x")
    )
    assert options.network.outbound.mode == "enabled"
    assert list(options.network.outbound.allow_net) == ["8.8.8.0/24"]
    assert options.network.inbound.mode == "disabled"
    assert _box_options(SandboxSpec(), Path("/x")).network.outbound.mode == "disabled"
    for refused in (
        SandboxSpec(network="open"),  # open: no enforcement point keeps the host out
        SandboxSpec(network="allowlist"),
        SandboxSpec(network="allowlist", network_allow=["0.0.0.0/0"]),
        SandboxSpec(network="allowlist", network_allow=["169.254.169.254"]),
    ):
        with pytest.raises(InvalidSpec):
            box_options_kwargs(refused, Path("/x"))
    with pytest.raises(PolicyRefused, match=r"internal\.test"):
        box_options_kwargs(
            SandboxSpec(network="allowlist", network_allow=["internal.test"]),
            Path("/x"),
            resolver=lambda name: ["10.1.2.3"],
        )
