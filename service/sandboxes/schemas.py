from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from service.hostnames import ALLOW_ENTRY

EnvName = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
EnvValue = Annotated[str, Meta(max_length=32_768)]
LabelKey = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$")]
LabelValue = Annotated[str, Meta(max_length=256)]
# A label filter of the listing: `key=value`, the key as above.
LABEL_FILTER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}=.{0,256}$"
SizeName = Literal["small", "medium", "large"]
# The longest TTL any tenant may be given (the `max_sandbox_ttl_s` quota's own bound).
MAX_TTL_S = 2_592_000

# vCPUs, memory MiB, disk MiB
SIZES: dict[str, tuple[int, int, int]] = {
    "small": (1, 512, 1024),
    "medium": (2, 2048, 4096),
    "large": (4, 8192, 8192),
}


# A host name, an IPv4 address or a CIDR, with an optional port (`git.example.com:443`,
# `10.20.0.0/24`); whether the tenant may reach it is checked by the service.
AllowEntry = Annotated[str, Meta(min_length=1, max_length=260, pattern=ALLOW_ENTRY)]


_GIVEN = {"type": "string"}  # a field given, not null


class SandboxNetwork(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Egress of a sandbox: `none` (the default), `allowlist` (only `allow`) or `open` (where
    the operator allowed it for the tenant). The host, link-local addresses (cloud metadata)
    and other sandboxes are never reachable."""

    mode: Literal["none", "allowlist", "open"] = "none"
    allow: Annotated[list[AllowEntry], Meta(max_length=64)] = msgspec.field(default_factory=list)

    # Rules across fields, added to the schema (service.openapi): `allow` is for "allowlist".
    schema_rules: ClassVar[dict[str, Any]] = {
        "if": {"properties": {"mode": {"const": "allowlist"}}, "required": ["mode"]},
        "else": {"properties": {"allow": {"maxItems": 0}}},
    }


class NetworkPolicy(SandboxNetwork, kw_only=True, forbid_unknown_fields=True):
    """A template's network, the same policy as a sandbox's: its setup steps run under it.
    Sandboxes started from the template choose their own (`none` unless asked)."""


class Preset(msgspec.Struct, kw_only=True, frozen=True):
    """A named bundle of caps, user and network for a kind of work; explicit fields of the
    create request win over the preset's."""

    cpus: int
    memory_mib: int
    disk_mib: int
    pids: int
    user: str
    network: SandboxNetwork


PresetName = Literal["untrusted-tool", "ci"]
PRESETS: dict[str, Preset] = {
    # A third-party tool fed a hostile sample: nothing out, an unprivileged user, tight caps.
    "untrusted-tool": Preset(
        cpus=1,
        memory_mib=512,
        disk_mib=256,
        pids=64,
        user="1000:1000",
        network=SandboxNetwork(mode="none"),
    ),
    # A build or test run: the Python package index and a git host, nothing else.
    "ci": Preset(
        cpus=2,
        memory_mib=2048,
        disk_mib=4096,
        pids=512,
        user="1000:1000",
        network=SandboxNetwork(
            mode="allowlist",
            allow=[
                "pypi.org:443",
                "files.pythonhosted.org:443",
                "github.com:443",
                "codeload.github.com:443",
            ],
        ),
    ),
}


class SandboxCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`image` or `template` (neither: the default image); a size, a preset and/or explicit
    caps. Without `network` (and without a preset that gives one) there is no network."""

    image: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    template: Annotated[str, Meta(min_length=1, max_length=100)] | None = None
    size: SizeName | None = None
    cpus: Annotated[int, Meta(ge=1, le=64)] | None = None
    memory_mib: Annotated[int, Meta(ge=128, le=262_144)] | None = None
    disk_mib: Annotated[int, Meta(ge=64, le=1_048_576)] | None = None
    ttl_s: Annotated[int, Meta(ge=10, le=MAX_TTL_S)] = 600
    preset: PresetName | None = None
    network: SandboxNetwork | None = None
    env: Annotated[dict[EnvName, EnvValue], Meta(max_length=128)] = msgspec.field(
        default_factory=dict
    )
    labels: Annotated[dict[LabelKey, LabelValue], Meta(max_length=64)] = msgspec.field(
        default_factory=dict
    )
    # Pause after this many seconds without activity (none: the tenant's default); any call
    # that needs it running wakes it.
    idle_timeout_s: Annotated[int, Meta(ge=10, le=604_800)] | None = None

    # A template fixes the image and the caps: it takes neither `image` nor `preset`.
    schema_rules: ClassVar[dict[str, Any]] = {
        "not": {
            "anyOf": [
                {"required": ["template", other], "properties": {"template": _GIVEN, other: _GIVEN}}
                for other in ("image", "preset")
            ]
        }
    }


class SandboxFork(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A child of a running sandbox: its TTL (else the parent's), labels (else the parent's)
    and idle timeout (else the tenant's default); the rest is the parent's."""

    ttl_s: Annotated[int, Meta(ge=10, le=MAX_TTL_S)] | None = None
    labels: Annotated[dict[LabelKey, LabelValue], Meta(max_length=64)] | None = None
    idle_timeout_s: Annotated[int, Meta(ge=10, le=604_800)] | None = None


class NetworkChange(SandboxNetwork, kw_only=True, forbid_unknown_fields=True):
    """A running sandbox's new egress: "allowlist" or "open" (a sandbox created without a
    network keeps none: changing it is a 409)."""

    mode: Literal["allowlist", "open"]


class SandboxUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    # The sandbox then expires this many seconds from now.
    ttl_s: Annotated[int, Meta(ge=10, le=MAX_TTL_S)] | None = None
    network: NetworkChange | None = None
    # Pause after this many seconds without activity; 0: never sleep.
    idle_timeout_s: Annotated[int, Meta(ge=0, le=604_800)] | None = None


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
    network: SandboxNetwork
    env: dict[str, str]
    labels: dict[str, str]
    ttl_s: int
    created_at: datetime
    expires_at: datetime
    stopped_at: datetime | None
    failure_reason: str | None
    # The node that runs it (GET /v1/nodes); none for sandboxes made before nodes were kept.
    node_id: str | None = None
    # Idle sleep: paused after `idle_timeout_s` without an exec or file call (none: never);
    # the last such call (or exec end, or resume).
    idle_timeout_s: int | None = None
    last_activity_at: datetime | None = None
    # Paused: since when, its checkpoint's size, and when it ends unless resumed first.
    paused_at: datetime | None = None
    pause_bytes: int | None = None
    pause_expires_at: datetime | None = None
    # The TCP connections with peers outside the sandbox that its last checkpoint reset
    # (`local -> remote`; a checkpoint cannot carry them): a pause's, or a fork's (of it, or
    # the one it was forked from); shown until the next; none: no such checkpoint recorded.
    connections_cut: list[str] | None = None


class SandboxPage(msgspec.Struct, kw_only=True):
    items: list[Sandbox]
    next_cursor: str | None


class Transition(msgspec.Struct, kw_only=True):
    from_state: str | None
    to_state: str
    reason: str | None
    at: datetime


class SandboxMetrics(msgspec.Struct, kw_only=True):
    """What a running sandbox uses now. A figure its runtime cannot measure is null."""

    sandbox_id: str
    at: datetime
    # CPU time spent since the sandbox started (on gVisor its sandbox kernel's too).
    cpu_seconds: float | None
    # Host memory the sandbox holds, and its cap (on gVisor both include its tmpfs files and
    # its sandbox kernel).
    memory_bytes: int
    memory_limit_bytes: int
    # Processes in the sandbox besides its init, and the cap on them.
    processes: int | None
    processes_limit: int
    # Writable space used (/work, /tmp, /var/tmp, /dev/shm, the home directory) and its size.
    writable_bytes: int | None
    writable_limit_bytes: int | None
