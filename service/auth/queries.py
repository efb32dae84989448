"""The API key lookup of every request and its last-use touch, by name (service.auth.authenticate):
`PG_*` sent to asyncpg (parameters `$n`), `LITE_*` run on SQLite's reader and writer connections
(parameters `?`). Each result column has a name, and the key's row is read by it into `ApiKeyFacts`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from service.db.models import ApiKey
from service.db.sqlite import Codec


@dataclass(frozen=True, slots=True)
class ApiKeyFacts:
    """What a request's API key is checked by: the key's row and its tenant's status."""

    id: str
    tenant_id: str
    scopes: list[str]
    revoked_at: datetime | None
    last_used_at: datetime | None
    status: str

    @classmethod
    def read(cls, row: Any, codec: Codec | None = None) -> ApiKeyFacts:
        """From a row of `PG_API_KEY` or `LITE_API_KEY`, by column name; `codec` turns SQLite's
        stored values into what SQLAlchemy's types read."""
        values = {name: row[name] for name in _COLUMNS}
        if codec is not None:
            stored = codec.row([values[name] for name in codec.names])
            values.update(zip(codec.names, stored, strict=True))
        return cls(**values)


_COLUMNS = tuple(f.name for f in fields(ApiKeyFacts))

# How SQLite gives the key's columns it stores other than as SQLAlchemy reads them.
LITE_API_KEY_CODEC = Codec(ApiKey.__table__, ("scopes", "revoked_at", "last_used_at"))

# The key of a hash, with its tenant's status: $1 the key's hash.
PG_API_KEY = """
SELECT k.id, k.tenant_id, k.scopes, k.revoked_at, k.last_used_at, t.status
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = $1
"""
LITE_API_KEY = PG_API_KEY.replace("$1", "?")

# A key's last use: $1 the key, $2 when.
PG_TOUCH_API_KEY = "UPDATE api_keys SET last_used_at = $2 WHERE id = $1"
# A key's last use: when, the key.
LITE_TOUCH_API_KEY = "UPDATE api_keys SET last_used_at = ? WHERE id = ?"
