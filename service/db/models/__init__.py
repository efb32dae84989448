"""The record: every table the service owns, one module per part of the service. Alembic
migrations are built from this metadata (every module below is imported here)."""

from __future__ import annotations

from service.db.base import Base
from service.db.models.audit import AuditChainHead, AuditEvent
from service.db.models.execs import Exec, ExecChunk, ExecStartBucket
from service.db.models.nodes import Node, NodeSnapshot
from service.db.models.reviews import Review, ReviewBaseline, ReviewBundle, ReviewBundleChunk
from service.db.models.sandboxes import Sandbox, SandboxSecretValue, SandboxTransition, TenantUsage
from service.db.models.templates import (
    PoolMember,
    PoolRequest,
    PoolTarget,
    Template,
    TemplateVersion,
)
from service.db.models.tenants import (
    ApiKey,
    RequestBucket,
    RevokedToken,
    RunningSlot,
    Tenant,
    TenantSecret,
)

__all__ = [
    "ApiKey",
    "AuditChainHead",
    "AuditEvent",
    "Base",
    "Exec",
    "ExecChunk",
    "ExecStartBucket",
    "Node",
    "NodeSnapshot",
    "PoolMember",
    "PoolRequest",
    "PoolTarget",
    "RequestBucket",
    "Review",
    "ReviewBaseline",
    "ReviewBundle",
    "ReviewBundleChunk",
    "RevokedToken",
    "RunningSlot",
    "Sandbox",
    "SandboxSecretValue",
    "SandboxTransition",
    "Template",
    "TemplateVersion",
    "Tenant",
    "TenantSecret",
    "TenantUsage",
]
