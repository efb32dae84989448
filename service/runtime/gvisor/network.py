"""Egress for gVisor sandboxes that have a network: a netns, a veth pair and host iptables.

A sandbox with `network="allowlist"` or `"open"` runs inside a network namespace of its own
(`ip netns add alk-<id>`), joined to the host by a veth pair with addresses from a private
/30 of the configured range. On netstack the sandbox kernel takes the namespace's end of the
pair, its address and default route into its own stack when it starts (netstack.py), and a
restore takes them from the veth again (`readdress`). All its traffic leaves through the host
side of the pair, where
one iptables chain per sandbox (`ALK-<hex>`, jumped to from INPUT and FORWARD for that
interface) decides: destinations that are always blocked first, then the policy's allows,
then REJECT (tcp-reset for TCP, icmp-port-unreachable otherwise, so a blocked connection
fails at once). The chain's rule counters are the sandbox's allowed/blocked counts.

What a policy may reach is decided by `egress.py`, the one validator; here it becomes rules,
in this order: the host's own addresses (addrtype LOCAL: loopback, the veth host side, every
interface), `egress.ALWAYS_BLOCKED` (link-local and the clouds' metadata addresses, 0/8,
127/8, multicast, reserved), broadcast and the sandbox range (other sandboxes) are rejected;
destinations inside a range the operator granted the tenant are accepted; every other
non-public block (`egress.NON_PUBLIC`: RFC 1918, CGNAT, ...) is rejected; public destinations
of the policy are accepted (`open`: all of them); the rest is rejected. So `open` and every
allowlist reach private space only where granted, whatever else they say.

Host names in an allowlist are resolved on the host when the policy is applied; the addresses
the sandbox may reach become rules and go with the names into the sandbox's /etc/hosts (the
sandbox is pinned to them). The sandbox's resolv.conf points at its own loopback, where
nothing answers, so any other name fails to resolve at once.

Every rule carries a comment naming the sandbox, and teardown removes the chains, the jumps,
the NAT rule and the namespace (which takes the veth pair with it).
"""

from __future__ import annotations

import fcntl
import ipaddress
import logging
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import egress
from ..config import DEFAULT_RANGE
from ..egress import Allow, Resolver, parse_allow, parse_entry, system_resolver
from ..errors import InvalidSpec, SandboxRuntimeError
from ..image_store import HOSTS_BASE
from . import netstack
from .record import SandboxRecord

__all__ = ["Allow", "Networks", "Slot", "parse_allow", "parse_entry", "system_resolver"]

log = logging.getLogger(__name__)

LOCK_FILE = Path("/run/lock/airlock-network.lock")
RESOLV_CONF = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"


@dataclass(frozen=True)
class Slot:
    """Names and addresses of one sandbox's network."""

    sandbox_id: str
    index: int
    host_ip: str
    sandbox_ip: str

    @property
    def tag(self) -> str:
        return self.sandbox_id.rsplit("-", 1)[-1]

    @property
    def netns(self) -> str:
        return self.sandbox_id

    @property
    def netns_path(self) -> str:
        return netns_path(self.netns)

    @property
    def veth_host(self) -> str:
        return "alh" + self.tag[-12:]

    @property
    def veth_sandbox(self) -> str:
        return "als" + self.tag[-12:]

    @property
    def egress_chain(self) -> str:
        return "ALK-" + self.tag

    @property
    def ingress_chain(self) -> str:
        return "ALI-" + self.tag

    @property
    def comment(self) -> str:
        return self.sandbox_id

    def to_meta(self) -> dict[str, Any]:
        return {"index": self.index, "host_ip": self.host_ip, "sandbox_ip": self.sandbox_ip}

    @classmethod
    def from_meta(cls, sandbox_id: str, meta: dict[str, Any]) -> Slot:
        return cls(sandbox_id, int(meta["index"]), meta["host_ip"], meta["sandbox_ip"])


def _run(*argv: str, check: bool = True, stdin: str | None = None) -> str:
    proc = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=30, check=False
    )
    if check and proc.returncode != 0:
        raise SandboxRuntimeError(f"{' '.join(argv[:4])} failed: {proc.stderr.strip()[-400:]}")
    return proc.stdout


class Networks:
    """Creates, re-applies, counts and removes sandbox networks. Runs as root."""

    def __init__(self, range_cidr: str = DEFAULT_RANGE, resolver: Resolver | None = None) -> None:
        self.range = ipaddress.IPv4Network(range_cidr)
        if self.range.prefixlen > 28:
            raise InvalidSpec("the sandbox network range must be a /28 or larger")
        self.resolver: Resolver = resolver or system_resolver

    # -- addresses ----------------------------------------------------------------------

    def _used_indexes(self) -> set[int]:
        used = set()
        out = _run("ip", "-o", "-4", "addr", "show", check=False)
        for match in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
            address = ipaddress.IPv4Address(match.group(1))
            if address in self.range:
                used.add((int(address) - int(self.range.network_address)) // 4)
        return used

    def _allocate(self, sandbox_id: str) -> Slot:
        used = self._used_indexes()
        for index in range(self.range.num_addresses // 4):
            if index not in used:
                base = int(self.range.network_address) + 4 * index
                return Slot(
                    sandbox_id,
                    index,
                    str(ipaddress.IPv4Address(base + 1)),
                    str(ipaddress.IPv4Address(base + 2)),
                )
        raise SandboxRuntimeError(f"no free /30 left in the sandbox network range {self.range}")

    # -- policy -------------------------------------------------------------------------

    def resolve(
        self, mode: str, allow: Sequence[str], private: Sequence[str] = ()
    ) -> egress.Egress:
        """The policy's destinations and names, resolved now (see egress.py)."""
        return egress.resolve(mode, allow, private, self.resolver)

    def _rules(self, slot: Slot, policy: egress.Egress) -> str:
        """An iptables-restore document that (re)fills the sandbox's chains in one go."""
        c = f'-m comment --comment "{slot.comment}"'
        egress_chain, ingress = slot.egress_chain, slot.ingress_chain

        def reject(chain: str, match: str = "") -> list[str]:
            head = f"-A {chain} {match}".rstrip()
            return [
                f"{head} -p tcp {c} -j REJECT --reject-with tcp-reset",
                f"{head} {c} -j REJECT --reject-with icmp-port-unreachable",
            ]

        def accept(target: egress.Destination) -> list[str]:
            head = f"-A {egress_chain} -d {target.net}"
            if target.port is None:
                return [f"{head} {c} -j ACCEPT"]
            return [
                f"{head} -p {proto} --dport {target.port} {c} -j ACCEPT" for proto in ("tcp", "udp")
            ]

        lines = ["*filter", f":{egress_chain} - [0:0]", f":{ingress} - [0:0]"]
        lines += reject(egress_chain, "-m addrtype --dst-type LOCAL")  # the host itself
        for net in (*egress.ALWAYS_BLOCKED, "255.255.255.255/32", str(self.range)):
            lines += reject(egress_chain, f"-d {net}")
        for target in policy.destinations:
            if target.granted:
                lines += accept(target)
        for net in egress.NON_PUBLIC:
            lines += reject(egress_chain, f"-d {net}")
        for target in policy.destinations:
            if not target.granted:
                lines += accept(target)
        lines += reject(egress_chain)
        # Nothing may open a connection to the sandbox; replies to its own connections pass.
        lines.append(f"-A {ingress} -m conntrack --ctstate ESTABLISHED,RELATED {c} -j ACCEPT")
        lines += reject(ingress)
        return "\n".join([*lines, "COMMIT", ""])

    def _hosts(self, names: dict[str, list[str]]) -> str:
        return HOSTS_BASE + "".join(
            f"{a}\t{n}\n" for n, addrs in sorted(names.items()) for a in addrs
        )

    # -- lifecycle ------------------------------------------------------------------------

    def setup(
        self,
        sandbox_id: str,
        directory: Path,
        mode: str,
        allow: Sequence[str],
        private: Sequence[str] = (),
    ) -> Slot:
        """Resolve the policy, then create the namespace, veth pair, NAT and chains."""
        policy = self.resolve(mode, allow, private)
        LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
        with LOCK_FILE.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            slot = self._allocate(sandbox_id)
            try:
                self._create_link(slot)
            except Exception:
                self.teardown(slot)
                raise
        try:
            self._write_files(directory, policy.names)
            _run("iptables-restore", "-w", "--noflush", stdin=self._rules(slot, policy))
            self._jumps("-I", slot)
        except Exception:
            self.teardown(slot)
            raise
        return slot

    def _create_link(self, slot: Slot) -> None:
        _run("ip", "netns", "add", slot.netns)
        _run("ip", "link", "add", slot.veth_host, "type", "veth", "peer", "name",
             slot.veth_sandbox, "netns", slot.netns)  # fmt: skip
        # IPv4 only: without this the pair's IPv6 link-local addresses would reach the host's
        # services on `::` past the IPv4 rules. rp_filter drops spoofed sources.
        _sysctl(f"net/ipv6/conf/{slot.veth_host}/disable_ipv6", "1")
        _sysctl(f"net/ipv4/conf/{slot.veth_host}/rp_filter", "1")
        no_ipv6 = ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        _run("nsenter", f"--net={slot.netns_path}", "sysctl", "-q", "-w", *no_ipv6)
        _run("ip", "addr", "add", f"{slot.host_ip}/30", "dev", slot.veth_host)
        _run("ip", "link", "set", slot.veth_host, "up")
        inside = ("ip", "-n", slot.netns)
        _run(*inside, "addr", "add", f"{slot.sandbox_ip}/30", "dev", slot.veth_sandbox)
        _run(*inside, "link", "set", slot.veth_sandbox, "up")
        _run(*inside, "link", "set", "lo", "up")
        _run(*inside, "route", "add", "default", "via", slot.host_ip)
        _sysctl("net/ipv4/ip_forward", "1")

    def _jumps(self, op: str, slot: Slot) -> None:
        c = ["-m", "comment", "--comment", slot.comment]
        veth = slot.veth_host
        rules = [
            ("filter", "INPUT", ["-i", veth, *c, "-j", slot.egress_chain]),
            ("filter", "FORWARD", ["-i", veth, *c, "-j", slot.egress_chain]),
            ("filter", "FORWARD", ["-o", veth, *c, "-j", slot.ingress_chain]),
            ("nat", "POSTROUTING", ["-s", f"{slot.sandbox_ip}/32", *c, "-j", "MASQUERADE"]),
        ]
        for table, chain, rule in rules:
            _run("iptables", "-w", "-t", table, "-I", chain, "1", *rule)

    @staticmethod
    def _delete_rules_of(sandbox_id: str) -> None:
        """Delete every rule of the built-in chains whose comment names the sandbox (found in
        iptables-save), so nothing depends on remembering the exact rules."""
        for table in ("filter", "nat"):
            for line in _run("iptables-save", "-t", table, check=False).splitlines():
                if line.startswith("-A ") and f"--comment {sandbox_id}" in line:
                    chain, *rule = line[3:].split()
                    if not chain.startswith(("ALK-", "ALI-")):
                        _run_ok("iptables", "-w", "-t", table, "-D", chain, *rule)

    def _write_files(self, directory: Path, names: dict[str, list[str]]) -> None:
        net_dir = directory / "net"
        net_dir.mkdir(exist_ok=True)
        (net_dir / "resolv.conf").write_text(RESOLV_CONF)
        # Rewritten in place: the sandbox's bind mount follows this inode, not a renamed file.
        (net_dir / "hosts").write_text(self._hosts(names))

    def apply(
        self,
        slot: Slot,
        directory: Path,
        mode: str,
        allow: Sequence[str],
        private: Sequence[str] = (),
    ) -> None:
        """Replace a running sandbox's policy: one atomic iptables-restore, then /etc/hosts."""
        policy = self.resolve(mode, allow, private)
        _run("iptables-restore", "-w", "--noflush", stdin=self._rules(slot, policy))
        self._write_files(directory, policy.names)

    def readdress(self, slot: Slot) -> None:
        """Give the namespace's end of the pair its address and default route again before a
        restore in place: a sandbox on netstack took them off the veth when it started, and
        a restore without them comes back with `lo` alone."""
        inside = ("ip", "-n", slot.netns)
        _run(*inside, "addr", "replace", f"{slot.sandbox_ip}/30", "dev", slot.veth_sandbox)
        _run(*inside, "route", "replace", "default", "via", slot.host_ip)

    def counters(self, slot: Slot) -> dict[str, int]:
        """Packets the sandbox sent that its chain accepted and rejected so far."""
        out = _run("iptables", "-w", "-L", slot.egress_chain, "-v", "-x", "-n", check=False)
        allowed = blocked = 0
        for line in out.splitlines()[2:]:
            fields = line.split()
            if len(fields) >= 3 and fields[0].isdigit():
                if fields[2] == "ACCEPT":
                    allowed += int(fields[0])
                elif fields[2] == "REJECT":
                    blocked += int(fields[0])
        return {"allowed_packets": allowed, "blocked_packets": blocked}

    def teardown(self, slot: Slot) -> None:
        """Remove everything `setup` made; safe to call on a partial or missing setup."""
        self.remove(slot.sandbox_id)

    def remove(self, sandbox_id: str) -> None:
        """Remove the network of `sandbox_id`, knowing only its id (names derive from it)."""
        slot = Slot(sandbox_id, -1, "", "")
        self._delete_rules_of(sandbox_id)
        for chain in (slot.egress_chain, slot.ingress_chain):
            _run_ok("iptables", "-w", "-F", chain)
            _run_ok("iptables", "-w", "-X", chain)
        _run_ok("ip", "netns", "del", slot.netns)
        _run_ok("ip", "link", "del", slot.veth_host)


def _sysctl(name: str, value: str) -> None:
    """Set a kernel setting of this host's network namespace (`net/...` under /proc/sys)."""
    path = Path("/proc/sys") / name
    try:
        path.write_text(f"{value}\n")
    except OSError as exc:  # a container without a writable /proc/sys, for one
        raise SandboxRuntimeError(
            f"cannot set {path} for a sandbox network: {exc.strerror}; the node needs a "
            "writable /proc/sys (container/README.md)"
        ) from exc


def _run_ok(*argv: str) -> bool:
    try:
        _run(*argv, check=True)
    except SandboxRuntimeError:
        return False
    return True


def netns_path(sandbox_id: str) -> str:
    return f"/run/netns/{sandbox_id}"


def stack_of(record: SandboxRecord) -> str | None:
    """The stack a sandbox's network runs on (netstack.py), None without a network. Records
    from before netstack name none: those sandboxes run on hostinet."""
    if not record.net:
        return None
    return record.net_stack or netstack.HOSTINET
