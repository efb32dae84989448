from __future__ import annotations

from datetime import datetime

import msgspec

# The value's limit is checked by the service (a 422 that never repeats the value).
MAX_VALUE_BYTES = 64 << 10
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"


class SecretPut(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    # Stored encrypted; never returned, logged or audited.
    value: str


class Secret(msgspec.Struct, kw_only=True):
    """A secret's name and times; its value is write-only."""

    name: str
    created_at: datetime
    updated_at: datetime
    created_by: str


class SecretPage(msgspec.Struct, kw_only=True):
    items: list[Secret]
    next_cursor: str | None
