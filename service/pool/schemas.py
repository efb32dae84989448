from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.sandboxes.schemas import SizeName

SnapshotSupport = Literal["supported", "unsupported", "unknown", "disabled"]


class PoolTargetSet(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    size: SizeName = "small"
    target: Annotated[int, Meta(ge=0, le=1000)]


class PoolStatus(msgspec.Struct, kw_only=True):
    template: str
    template_id: str
    # None for the operator's (shared) templates.
    tenant_id: str | None
    size: str
    # Members wanted across the cluster, spread over the nodes that can start them.
    target: int
    # The template version members are started from; None until one is built.
    version: int | None
    # "snapshot": members are restored from the template's snapshot; "image": pre-started
    # from the image with the setup run (the runtime cannot snapshot on this host).
    mode: Literal["snapshot", "image"] | None
    # Members across the cluster; the ready ones per node.
    ready: int
    starting: int
    ready_by_node: dict[str, int] = msgspec.field(default_factory=dict)
    # Creates in the last 24 hours that matched this pool: served by a member, or cold.
    claims: int
    misses: int
    # What each tenant may claim per minute while others ask too.
    fair_share_per_minute: int
    tenants_last_minute: int
    last_refill_at: datetime | None
    last_refill_ms: int | None


class PoolOverview(msgspec.Struct, kw_only=True):
    host: str
    snapshots: SnapshotSupport
    note: str
    pools: list[PoolStatus]
