from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.hostnames import GRANT

TenantName = Annotated[
    str, Meta(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")
]
TenantStatus = Literal["active", "suspended"]

# Hard limits on what an operator may grant; defaults are what a new tenant gets.
TOKEN_TTL_HARD_CAP_S = 86_400
MAX_LIFETIME_S = 31_536_000

# An IPv4 CIDR inside private space such as 10.20.0.0/16 (service.hostnames.GRANT).
PrivateCidr = Annotated[str, Meta(max_length=18, pattern=GRANT)]
PrivateCidrs = Annotated[list[PrivateCidr], Meta(max_length=32)]
RequestRate = Annotated[int, Meta(ge=1, le=1_000_000)]


class Quotas(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    max_sandboxes: Annotated[int, Meta(ge=0, le=10_000)] = 10
    max_vcpus: Annotated[int, Meta(ge=0, le=1024)] = 8
    max_memory_mib: Annotated[int, Meta(ge=0, le=4_194_304)] = 16_384
    # Writable space (disk_mib) of the tenant's active sandboxes together; on gVisor it is held
    # in host memory.
    max_disk_mib: Annotated[int, Meta(ge=0, le=4_194_304)] = 16_384
    max_sandbox_ttl_s: Annotated[int, Meta(ge=60, le=2_592_000)] = 3600
    # How long a sandbox may live from its creation, however often its TTL is extended.
    max_lifetime_s: Annotated[int, Meta(ge=60, le=MAX_LIFETIME_S)] = 604_800
    max_exec_timeout_s: Annotated[int, Meta(ge=1, le=86_400)] = 600
    execs_per_minute: Annotated[int, Meta(ge=0, le=1_000_000)] = 120
    # Execs running at once (each holds its output buffers in the server until it ends).
    max_running_execs: Annotated[int, Meta(ge=0, le=10_000)] = 16
    # Reviews and template builds waiting to run; the runners take tenants in turn.
    max_queued_reviews: Annotated[int, Meta(ge=0, le=10_000)] = 10
    max_queued_builds: Annotated[int, Meta(ge=0, le=10_000)] = 3
    # Exec output (the exec's record stays as long as the audit log) and uploaded review
    # bundles are kept this many days; a tenant holds at most `max_bundles` bundles.
    output_retention_days: Annotated[int, Meta(ge=1, le=3650)] = 7
    # Exec output a tenant stores; past it, the oldest finished execs' output is deleted.
    max_stored_output_mib: Annotated[int, Meta(ge=1, le=1_048_576)] = 1024
    max_bundles: Annotated[int, Meta(ge=0, le=1000)] = 10
    bundle_retention_days: Annotated[int, Meta(ge=1, le=3650)] = 7
    max_upload_mib: Annotated[int, Meta(ge=0, le=102_400)] = 100
    max_token_ttl_s: Annotated[int, Meta(ge=60, le=TOKEN_TTL_HARD_CAP_S)] = 900
    audit_retention_days: Annotated[int, Meta(ge=1, le=3650)] = 90
    # Whether the tenant's sandboxes may have `{"mode": "open"}` egress (operator's choice).
    network_open_allowed: bool = False
    # Private ranges (inside RFC 1918, CGNAT, ...) the tenant's allowlists may name (operator's
    # choice; none by default). Metadata and link-local addresses stay blocked even inside.
    network_private_cidrs: PrivateCidrs = msgspec.field(default_factory=list)
    # Paused sandboxes (checkpoints on their nodes' disks) count here, not above: how many,
    # their checkpoints' bytes together, and how long one stays paused before it is destroyed.
    max_paused_sandboxes: Annotated[int, Meta(ge=0, le=10_000)] = 10
    max_paused_mib: Annotated[int, Meta(ge=0, le=4_194_304)] = 16_384
    max_paused_s: Annotated[int, Meta(ge=60, le=31_536_000)] = 604_800
    # Idle sleep: the timeout of sandboxes created without one (0: they never sleep) and the
    # longest a sandbox may ask for.
    default_idle_timeout_s: Annotated[int, Meta(ge=0, le=604_800)] = 0
    max_idle_timeout_s: Annotated[int, Meta(ge=10, le=604_800)] = 86_400
    # API requests a second, by class of route (service/ratelimit/classes.py); each class may
    # burst to 5 seconds' worth at once. Past it: 429 `rate_limited` with Retry-After.
    reads_per_s: RequestRate = 100
    writes_per_s: RequestRate = 50
    exec_calls_per_s: RequestRate = 200
    port_requests_per_s: RequestRate = 200
    # Work in flight besides execs, counted while it runs (service/ratelimit/running.py); past
    # it: 429 `quota_exceeded` with Retry-After. Transfers: file and archive uploads and
    # downloads, each holding a process in its sandbox and a stream through the API.
    max_running_transfers: Annotated[int, Meta(ge=0, le=10_000)] = 16
    # Proxied port requests and open port WebSockets. A browser opens about six connections
    # per host at once, a page of a dev server (scripts, styles, images, a live-reload socket)
    # keeps them all busy while it loads, and a tenant's users may have dozens of previews open
    # at a time: 256 lets some forty such pages load at once.
    max_port_connections: Annotated[int, Meta(ge=0, le=100_000)] = 256


class QuotasPatch(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    max_sandboxes: Annotated[int, Meta(ge=0, le=10_000)] | None = None
    max_vcpus: Annotated[int, Meta(ge=0, le=1024)] | None = None
    max_memory_mib: Annotated[int, Meta(ge=0, le=4_194_304)] | None = None
    max_disk_mib: Annotated[int, Meta(ge=0, le=4_194_304)] | None = None
    max_sandbox_ttl_s: Annotated[int, Meta(ge=60, le=2_592_000)] | None = None
    max_lifetime_s: Annotated[int, Meta(ge=60, le=MAX_LIFETIME_S)] | None = None
    max_exec_timeout_s: Annotated[int, Meta(ge=1, le=86_400)] | None = None
    execs_per_minute: Annotated[int, Meta(ge=0, le=1_000_000)] | None = None
    max_running_execs: Annotated[int, Meta(ge=0, le=10_000)] | None = None
    max_queued_reviews: Annotated[int, Meta(ge=0, le=10_000)] | None = None
    max_queued_builds: Annotated[int, Meta(ge=0, le=10_000)] | None = None
    output_retention_days: Annotated[int, Meta(ge=1, le=3650)] | None = None
    max_stored_output_mib: Annotated[int, Meta(ge=1, le=1_048_576)] | None = None
    max_bundles: Annotated[int, Meta(ge=0, le=1000)] | None = None
    bundle_retention_days: Annotated[int, Meta(ge=1, le=3650)] | None = None
    max_upload_mib: Annotated[int, Meta(ge=0, le=102_400)] | None = None
    max_token_ttl_s: Annotated[int, Meta(ge=60, le=TOKEN_TTL_HARD_CAP_S)] | None = None
    audit_retention_days: Annotated[int, Meta(ge=1, le=3650)] | None = None
    network_open_allowed: bool | None = None
    network_private_cidrs: PrivateCidrs | None = None
    max_paused_sandboxes: Annotated[int, Meta(ge=0, le=10_000)] | None = None
    max_paused_mib: Annotated[int, Meta(ge=0, le=4_194_304)] | None = None
    max_paused_s: Annotated[int, Meta(ge=60, le=31_536_000)] | None = None
    default_idle_timeout_s: Annotated[int, Meta(ge=0, le=604_800)] | None = None
    max_idle_timeout_s: Annotated[int, Meta(ge=10, le=604_800)] | None = None
    reads_per_s: RequestRate | None = None
    writes_per_s: RequestRate | None = None
    exec_calls_per_s: RequestRate | None = None
    port_requests_per_s: RequestRate | None = None
    max_running_transfers: Annotated[int, Meta(ge=0, le=10_000)] | None = None
    max_port_connections: Annotated[int, Meta(ge=0, le=100_000)] | None = None


class TenantCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: TenantName
    quotas: QuotasPatch | None = None


class TenantUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    quotas: QuotasPatch | None = None
    status: TenantStatus | None = None


class TenantUsage(msgspec.Struct, kw_only=True):
    """What the tenant holds now. `stored_output_bytes`: its finished execs' stored output
    (trimmed to `max_stored_output_mib`); running execs' output is counted when they end."""

    stored_output_bytes: int


class Tenant(msgspec.Struct, kw_only=True):
    id: str
    name: str
    status: TenantStatus
    quotas: Quotas
    created_at: datetime
    updated_at: datetime
    # In GET /v1/tenants/{id} only.
    usage: TenantUsage | None = None


class TenantCreated(msgspec.Struct, kw_only=True):
    tenant: Tenant
    api_key: str
    api_key_id: str


class TenantPage(msgspec.Struct, kw_only=True):
    items: list[Tenant]
    next_cursor: str | None
