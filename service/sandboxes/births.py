"""A new sandbox's row and its `sandbox.create` event, as every birth writes them: a create,
a fork, a claim from a warm pool."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec

from service.db.models import Sandbox as SandboxRow
from service.ids import new_id
from service.sandboxes.quotas import Caps
from service.sandboxes.schemas import (
    SandboxCreate,
    SandboxNetwork,
)


@dataclass(frozen=True, slots=True)
class TemplateRef:
    """The template build a new sandbox starts from."""

    name: str
    id: str
    version: int


@dataclass(frozen=True, slots=True)
class RequestKey:
    """What a create is replayed by: its Idempotency-Key, if it had one, and its hash."""

    idempotency_key: str | None
    request_hash: str


def new_row(
    tenant_id: str,
    data: SandboxCreate,
    *,
    image: str,
    size: str,
    caps: Caps,
    network: SandboxNetwork,
    template: TemplateRef | None,
    started_from: str,
    request: RequestKey,
    now: datetime,
    node_id: str | None = None,
) -> SandboxRow:
    """A new sandbox's row before its first transition; `node_id`: the node that runs it."""
    return SandboxRow(
        id=new_id("sbx"),
        tenant_id=tenant_id,
        node_id=node_id,
        state=None,
        image=image,
        template=template.name if template else None,
        template_id=template.id if template else None,
        template_version=template.version if template else None,
        started_from=started_from,
        size=size,
        cpus=caps.cpus,
        memory_mib=caps.memory_mib,
        disk_mib=caps.disk_mib,
        network=msgspec.to_builtins(network),
        env=dict(data.env),
        labels=dict(data.labels),
        ttl_s=data.ttl_s,
        idempotency_key=request.idempotency_key,
        request_hash=request.request_hash,
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(seconds=data.ttl_s),
        last_activity_at=now,
    )


def create_details(row: SandboxRow, preset: str | None) -> dict[str, Any]:
    """The details of a `sandbox.create` audit event."""
    return {
        "image": row.image,
        "size": row.size,
        "cpus": row.cpus,
        "memory_mib": row.memory_mib,
        "disk_mib": row.disk_mib,
        "ttl_s": row.ttl_s,
        "network": row.network,
        "preset": preset,
        "labels": row.labels,
        "env_names": sorted(row.env),
        "template": row.template,
        "template_version": row.template_version,
        "started_from": row.started_from,
    }


def request_hash(data: msgspec.Struct) -> str:
    return hashlib.sha256(msgspec.json.encode(data)).hexdigest()
