from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta

from service.hostnames import SECRET_HOST

# The value's limit is checked by the service (a 422 that never repeats the value).
MAX_VALUE_BYTES = 64 << 10
NAME_PATTERN = r"^(?![^\n]*\n)[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"


class SecretPut(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    # Stored encrypted; never returned, logged or audited. 1 to 65536 bytes as UTF-8 (the
    # service checks the bytes; the schema states the same bound in characters).
    value: Annotated[
        str,
        Meta(
            extra_json_schema={"minLength": 1, "maxLength": MAX_VALUE_BYTES},
            description=f"1 to {MAX_VALUE_BYTES} bytes as UTF-8",
        ),
    ]
    # Where the value may be sent: host names or IP addresses, each with an optional port
    # (`github.com`, `git.example.com:8443`). A review fetches with the secret only from these;
    # a secret with none is sent nowhere. A PUT replaces the list with the one given.
    allowed_hosts: Annotated[
        list[Annotated[str, Meta(min_length=1, max_length=262, pattern=SECRET_HOST)]],
        Meta(max_length=20),
    ] = msgspec.field(default_factory=list)


class Secret(msgspec.Struct, kw_only=True):
    """A secret's name and times; its value is write-only."""

    name: str
    allowed_hosts: list[str]
    created_at: datetime
    updated_at: datetime
    created_by: str


class SecretPage(msgspec.Struct, kw_only=True):
    items: list[Secret]
    next_cursor: str | None
