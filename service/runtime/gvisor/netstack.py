"""Whether networked sandboxes run on gVisor's own network stack (netstack) here, and how.

A sandbox with a network runs in a namespace of its own (network.py). On netstack
(`--network=sandbox`) runsc takes that namespace's veth into the sandbox kernel, so the
host kernel only moves frames, and the sandbox can be checkpointed; on hostinet
(`--network=host`) the sandbox kernel makes socket calls on the namespace's host stack, and
runsc refuses to checkpoint it ("checkpoint not supported when using hostinet").

runsc refuses netstack when it thinks it runs in the host's root network namespace, and its
test is whether `/proc/sys/net/core/rmem_default` can be opened; kernels that show that
sysctl in every namespace fail it everywhere (gVisor issue #10704). `/proc/sys/net` shows the
namespace of whoever reads it, so `run` and `restore` enter the sandbox's namespace first,
then a private mount namespace in which an empty read-only tmpfs covers `/proc/sys/net/core`.
Other runsc calls need the namespace only (the control socket is an abstract unix socket).

`probe` starts a tiny sandbox that way in a scratch namespace and checks that it sees the
namespace's interface; where it does not (an older runsc, a kernel that refuses the mount, no
`unshare`), networked sandboxes stay on hostinet.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

NETSTACK = "netstack"
HOSTINET = "hostinet"
PROBE_TIMEOUT_S = 20.0
# Run as `sh -c HIDE_NET_CORE runsc <args>`: cover the namespace's net.core sysctls, then exec.
HIDE_NET_CORE = (
    'mount -t tmpfs -o size=4k,ro airlock-hide-netcore /proc/sys/net/core && exec "$0" "$@"'
)
# runsc's flags for each stack. `--net-disconnect-ok`: a checkpoint aborts connected TCP
# endpoints instead of failing on them.
FLAGS = {NETSTACK: ("--network=sandbox", "--net-disconnect-ok"), HOSTINET: ("--network=host",)}


@dataclass(frozen=True)
class NetworkChoice:
    """The stack networked sandboxes run on, and why."""

    stack: str
    reason: str

    def __str__(self) -> str:
        return f"{self.stack} ({self.reason})"


def wrapper(netns_path: str, starts: bool) -> list[str]:
    """The prefix that runs runsc in a namespace; `starts` (`run`, `restore`) on netstack also
    hides the namespace's net.core sysctls from it."""
    prefix = ["nsenter", f"--net={netns_path}"]
    if starts:
        prefix += ["unshare", "--mount", "--propagation", "private", "sh", "-c", HIDE_NET_CORE]
    return prefix


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], capture_output=True, timeout=10, check=True)


def _probe_bundle(directory: Path, netns_path: str) -> None:
    """A bundle that prints the sandbox's interfaces, on the host's root read-only."""
    config = {
        "ociVersion": "1.0.2",
        "process": {
            "user": {"uid": 0, "gid": 0},
            "args": ["cat", "/proc/net/dev"],
            "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
            "cwd": "/",
        },
        "root": {"path": "/", "readonly": True},
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
        "linux": {
            "namespaces": [
                *({"type": t} for t in ("pid", "ipc", "uts", "mount")),
                {"type": "network", "path": netns_path},
            ]
        },
    }
    (directory / "config.json").write_text(json.dumps(config))


def probe(runsc: str, platform: str) -> NetworkChoice:
    """Start a sandbox on netstack in a scratch namespace (~0.5 s); netstack if it sees the
    namespace's interface, else hostinet with what went wrong."""
    if os.geteuid() != 0:
        return NetworkChoice(HOSTINET, "probing netstack needs root")
    tag = secrets.token_hex(3)
    netns, outer, inner = f"airlock-probe-{tag}", f"alq{tag}h", f"alq{tag}s"
    netns_path = f"/run/netns/{netns}"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="airlock-netprobe-") as scratch:
        root, out = Path(scratch) / "root", Path(scratch) / "out"
        argv = [runsc, f"--root={root}", f"--platform={platform}", *FLAGS[NETSTACK]]
        try:
            _ip("netns", "add", netns)
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", netns)
            _ip("link", "set", outer, "up")
            _ip("-n", netns, "addr", "add", "192.0.2.2/30", "dev", inner)
            _ip("-n", netns, "link", "set", inner, "up")
            _ip("-n", netns, "route", "add", "default", "via", "192.0.2.1")
            _probe_bundle(Path(scratch), netns_path)
            with out.open("wb") as sink:
                code = subprocess.run(
                    [*wrapper(netns_path, True), *argv, "run", f"--bundle={scratch}", netns],
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    timeout=PROBE_TIMEOUT_S,
                    check=False,
                ).returncode
            said = out.read_text(errors="replace")
        except subprocess.TimeoutExpired:
            code, said = -1, f"did not finish within {PROBE_TIMEOUT_S:.0f} s"
        except (OSError, subprocess.CalledProcessError) as exc:
            code, said = -1, f"could not make a scratch namespace: {exc}"
        finally:
            subprocess.run(
                [*wrapper(netns_path, False), *argv, "delete", "--force", netns],
                capture_output=True,
                timeout=30,
                check=False,
            )
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
            subprocess.run(["ip", "link", "del", outer], capture_output=True, check=False)
    if code == 0 and inner in said:
        took = f"{time.monotonic() - started:.2f} s"
        return NetworkChoice(NETSTACK, f"a probe sandbox saw its namespace's interface ({took})")
    tail = (said.strip().splitlines() or ["no output"])[-1][:200]
    return NetworkChoice(
        HOSTINET,
        f"a netstack probe sandbox failed (exit {code}: {tail}); snapshots of networked "
        "sandboxes are refused",
    )
