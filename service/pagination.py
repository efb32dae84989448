"""Opaque cursors for keyset pagination, tagged with the listing that issued them."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, TypeVar

from service.errors import Unprocessable

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
_MAX_INT = 2**63 - 1

T = TypeVar("T", int, str)


def encode_cursor(kind: str, value: int | str) -> str:
    raw = json.dumps({"k": kind, "v": value}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(cursor: str | None, kind: str, expected: type[T]) -> T | None:
    """The position a cursor holds, or a 422 when this listing did not issue it."""
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unprocessable("cursor is not one this service issued") from exc
    value = data.get("v") if isinstance(data, dict) else None
    valid = (
        isinstance(data, dict)
        and data.get("k") == kind
        and type(value) is expected
        and (expected is not int or 0 <= value <= _MAX_INT)
        and (expected is not str or (len(value) <= 200 and "\x00" not in value))
    )
    if not valid:
        raise Unprocessable("cursor was not issued by this listing")
    return value  # type: ignore[return-value]


def page_of(
    items: list[Any], limit: int, kind: str, key: Callable[[Any], int | str]
) -> tuple[list[Any], str | None]:
    """`items` was fetched with limit + 1 rows; return the page and the next cursor."""
    if len(items) > limit:
        items = items[:limit]
        return items, encode_cursor(kind, key(items[-1]))
    return items, None
