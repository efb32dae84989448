"""Checks of a SandboxSpec that hold for every runtime (the API checks with them too).

Both runtimes call `validate` before they make anything; the network policy is checked by
`egress.py`, the one validator of policies.
"""

from __future__ import annotations

from . import egress
from .errors import InvalidSpec
from .types import SandboxSpec


def parse_user(user: str) -> tuple[int, int]:
    """`uid[:gid]` (digits) or `root`; gid defaults to uid."""
    if user == "root":
        return 0, 0
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        raise InvalidSpec(f"user must be 'uid[:gid]' in digits, got {user!r}")
    return int(uid), int(gid or uid)


def validate(spec: SandboxSpec) -> None:
    if not 0.01 <= spec.vcpus <= 64:
        raise InvalidSpec("vcpus must be between 0.01 and 64")
    if not 32 <= spec.memory_mib <= 256 * 1024:
        raise InvalidSpec("memory_mib must be between 32 and 262144")
    if not 8 <= spec.pids <= 4096:
        raise InvalidSpec("pids must be between 8 and 4096")
    if not 4 <= spec.disk_mib <= 256 * 1024:
        raise InvalidSpec("disk_mib must be between 4 and 262144")
    if spec.network == "none" and spec.network_allow:
        raise InvalidSpec("network_allow needs network 'allowlist'")
    if spec.network == "open" and spec.network_allow:
        raise InvalidSpec("network 'open' takes no allowlist")
    egress.check(spec.network_allow, spec.network_private)
    parse_user(spec.user)
    for key in spec.env:
        if not key or "=" in key or "\x00" in key:
            raise InvalidSpec(f"invalid environment variable name {key!r}")
