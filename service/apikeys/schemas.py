from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta

from service.auth.principal import SCOPES

KeyName = Annotated[str, Meta(min_length=1, max_length=100)]
# The document names the scopes; the service refuses any other with the list of known ones.
Scope = Annotated[str, Meta(min_length=1, max_length=40, extra_json_schema={"enum": list(SCOPES)})]


class ApiKeyCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: KeyName
    # Omitted: every scope the caller holds.
    scopes: Annotated[list[Scope], Meta(max_length=32)] | None = None


class ApiKey(msgspec.Struct, kw_only=True):
    id: str
    tenant_id: str
    name: str
    prefix: str
    scopes: list[str]
    created_at: datetime
    created_by: str
    last_used_at: datetime | None
    revoked_at: datetime | None


class ApiKeyCreated(msgspec.Struct, kw_only=True):
    api_key: ApiKey
    # Shown once; only its hash is stored.
    key: str


class ApiKeyPage(msgspec.Struct, kw_only=True):
    items: list[ApiKey]
    next_cursor: str | None
