"""Opaque cursors for keyset pagination."""

from __future__ import annotations

import base64
import json
from typing import Any

from service.errors import Unprocessable

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def encode_cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def decode_cursor(cursor: str | None) -> Any:
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unprocessable("cursor is not one this service issued") from exc


def page_of(items: list[Any], limit: int, key: Any) -> tuple[list[Any], str | None]:
    """`items` was fetched with limit + 1 rows; return the page and the next cursor."""
    if len(items) > limit:
        items = items[:limit]
        return items, encode_cursor(key(items[-1]))
    return items, None
