"""A SandboxSpec as BoxLite options: `box_options_kwargs` in plain values (unit-tested),
`box_options` as BoxLite's own objects.

The network policy is vetted by `egress.py`, the validator both runtimes share.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from .. import egress
from ..errors import InvalidSpec
from ..types import SandboxSpec

Security = Literal["standard", "maximum"]


def box_options_kwargs(
    spec: SandboxSpec,
    rootfs_path: Path | None = None,
    *,
    image: str | None = None,
    security: Security = "maximum",
    resolver: egress.Resolver = egress.system_resolver,
) -> dict[str, Any]:
    """Map a SandboxSpec onto BoxOptions keyword arguments, in plain values (unit-tested).

    Exactly one of `rootfs_path` (a local OCI layout) and `image` (a registry reference).
    BoxLite wants whole CPUs and GiB of disk, `env` as (name, value) tuples and `user` as
    "uid[:gid]"; `auto_stop`/`auto_delete` are seconds (0: never), so they are integers,
    never booleans. `network` is the outbound mode and `security` the SecurityOptions
    preset; `_box_options` turns both into BoxLite objects.
    """
    if (rootfs_path is None) == (image is None):
        raise ValueError("give exactly one of rootfs_path and image")
    if spec.network == "open":
        # BoxLite has no enforcement point of ours in front of an open box, so the host,
        # link-local (cloud metadata) and other boxes could not be kept out: refused.
        raise InvalidSpec("network 'open' is not supported by BoxLite; use an allowlist")
    if security not in ("standard", "maximum"):
        raise InvalidSpec(f"unknown BoxLite security preset {security!r}")
    source = {"rootfs_path": str(rootfs_path)} if rootfs_path is not None else {"image": image}
    outbound: dict[str, Any] = {"network": "disabled"}
    if spec.network == "allowlist":
        # BoxLite's own allowlist; an empty list would mean "any" there.
        if not spec.network_allow:
            raise InvalidSpec("BoxLite needs at least one allowlist entry")
        outbound = {"network": "enabled", "allow_net": allow_net(spec, resolver)}
    return {
        **source,
        "cpus": max(1, math.ceil(spec.vcpus)),
        "memory_mib": spec.memory_mib,
        "disk_size_gb": max(1, math.ceil(spec.disk_mib / 1024)),
        "env": [(k, v) for k, v in spec.env.items()],
        "user": spec.user if spec.user != "root" else "0:0",
        "working_dir": "/work",
        **outbound,
        "security": security,
        "auto_stop": 0,
        "auto_delete": 0,
    }


def allow_net(spec: SandboxSpec, resolver: egress.Resolver) -> list[str]:
    """BoxLite's `allow_net` from the policy as egress.py vets it: networks without their
    always-blocked parts (BoxLite only allows, it has no rule to carve them out), host names
    pinned to the addresses checked now (BoxLite would otherwise resolve them again itself,
    and could be answered with a private address)."""
    policy = egress.resolve("allowlist", spec.network_allow, spec.network_private, resolver)
    rules: list[str] = []
    for target in policy.destinations:
        for part in egress.without_blocked(target.net):
            text = str(part.network_address) if part.prefixlen == 32 else str(part)
            rule = f"{text}:{target.port}" if target.port else text
            if rule not in rules:
                rules.append(rule)
    return rules


def box_options(
    spec: SandboxSpec,
    rootfs_path: Path | None = None,
    *,
    image: str | None = None,
    security: Security = "maximum",
) -> Any:
    import boxlite

    kwargs = box_options_kwargs(spec, rootfs_path, image=image, security=security)
    mode = kwargs.pop("network")
    allow_net = kwargs.pop("allow_net", None)
    preset = getattr(boxlite.SecurityOptions, kwargs.pop("security"))()
    # The maximum preset caps the shim's file size at 1 GiB; the box's qcow2 disk is a file
    # of the shim and must be able to grow to the disk cap.
    disk_bytes = (kwargs["disk_size_gb"] << 30) + (64 << 20)
    if preset.max_file_size is not None and preset.max_file_size < disk_bytes:
        preset.max_file_size = disk_bytes
    return boxlite.BoxOptions(
        **kwargs,
        network=boxlite.NetworkSpec(
            outbound=boxlite.OutboundNetworkSpec(mode=mode, allow_net=allow_net)
            if allow_net
            else boxlite.OutboundNetworkSpec(mode=mode),
            inbound=boxlite.InboundNetworkSpec(mode="disabled"),
        ),
        advanced=boxlite.AdvancedBoxOptions(security=preset),
    )


_box_options = box_options  # the name the tests of the option mapping know
