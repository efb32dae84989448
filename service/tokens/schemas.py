from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta

from service.apikeys.schemas import Scope
from service.tenants.schemas import TOKEN_TTL_HARD_CAP_S


class TokenCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    # Omitted: every scope of the API key.
    scopes: Annotated[list[Scope], Meta(min_length=1, max_length=32)] | None = None
    sandbox_id: Annotated[str, Meta(min_length=1, max_length=64)] | None = None
    # Omitted: the tenant's maximum token lifetime.
    ttl_s: Annotated[int, Meta(ge=1, le=TOKEN_TTL_HARD_CAP_S)] | None = None


class TokenCreated(msgspec.Struct, kw_only=True):
    token: str
    jti: str
    expires_at: datetime
    scopes: list[str]
    sandbox_id: str | None
    token_type: str = "Bearer"  # noqa: S105 (the scheme name)


class JWKS(msgspec.Struct):
    keys: list[dict[str, str]]
