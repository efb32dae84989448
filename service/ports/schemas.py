from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta

from service.tenants.schemas import TOKEN_TTL_HARD_CAP_S

Port = Annotated[int, Meta(ge=1, le=65535, description="A TCP port inside the sandbox")]


class PreviewLinkCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    port: Port
    # Omitted: the tenant's maximum token lifetime.
    ttl_s: Annotated[int, Meta(ge=1, le=TOKEN_TTL_HARD_CAP_S)] | None = None


class PreviewLink(msgspec.Struct, kw_only=True):
    sandbox_id: str
    port: int
    # The port's path route with the link; a browser opening it gets a cookie for the rest.
    url: str
    # The same on the port's own host name, when the service has a preview domain.
    host_url: str | None
    expires_at: datetime
    jti: str
