from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

EnvName = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
EnvValue = Annotated[str, Meta(max_length=32_768)]
LabelKey = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$")]
LabelValue = Annotated[str, Meta(max_length=256)]
SizeName = Literal["small", "medium", "large"]

# vCPUs, memory MiB, disk MiB
SIZES: dict[str, tuple[int, int, int]] = {
    "small": (1, 512, 1024),
    "medium": (2, 2048, 4096),
    "large": (4, 8192, 8192),
}


class NetworkPolicy(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    mode: Literal["none"] = "none"


class SandboxCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`image` or `template` (neither: the default image); a size preset and/or explicit caps."""

    image: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    template: Annotated[str, Meta(min_length=1, max_length=100)] | None = None
    size: SizeName | None = None
    cpus: Annotated[int, Meta(ge=1, le=64)] | None = None
    memory_mib: Annotated[int, Meta(ge=128, le=262_144)] | None = None
    disk_mib: Annotated[int, Meta(ge=64, le=1_048_576)] | None = None
    ttl_s: Annotated[int, Meta(ge=10)] = 600
    network: NetworkPolicy = msgspec.field(default_factory=NetworkPolicy)
    env: Annotated[dict[EnvName, EnvValue], Meta(max_length=128)] = msgspec.field(
        default_factory=dict
    )
    labels: Annotated[dict[LabelKey, LabelValue], Meta(max_length=64)] = msgspec.field(
        default_factory=dict
    )


class SandboxUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    # The sandbox then expires this many seconds from now.
    ttl_s: Annotated[int, Meta(ge=10)] | None = None


class Sandbox(msgspec.Struct, kw_only=True):
    id: str
    state: str
    runtime: str | None
    image: str
    template: str | None
    # The template build it started from, and how: "image", "snapshot" or "pool" (a warm
    # pool member).
    template_version: int | None
    started_from: str | None
    size: str
    cpus: int
    memory_mib: int
    disk_mib: int
    network: NetworkPolicy
    env: dict[str, str]
    labels: dict[str, str]
    ttl_s: int
    created_at: datetime
    expires_at: datetime
    stopped_at: datetime | None
    failure_reason: str | None


class SandboxPage(msgspec.Struct, kw_only=True):
    items: list[Sandbox]
    next_cursor: str | None


class Transition(msgspec.Struct, kw_only=True):
    from_state: str | None
    to_state: str
    reason: str | None
    at: datetime
