"""Keyset pagination: a page's `next_cursor` is the key of its last item (an id, a name or an
audit sequence number), and the next page starts after it.

Each listing's `cursor` parameter states the form of its key (`cursor_parameter`), so any value
of that form is a valid position (a key that names nothing just starts after it) and a cursor
of another listing is refused with 422 before the handler runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from litestar.params import QueryParameter

from service.errors import Unprocessable

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
_MAX_INT = 2**63 - 1

T = TypeVar("T", int, str)

# The key forms of the listings: time-ordered ids (service.ids), secret names, audit seqs.
SEQ_PATTERN = r"^[0-9]{1,18}$"


def id_pattern(prefix: str) -> str:
    return rf"^{prefix}_[0-9a-f]{{32}}$"


def cursor_parameter(pattern: str) -> Any:
    """The `cursor` query parameter of a listing whose keys match `pattern`."""
    return Annotated[
        str | None,
        QueryParameter(
            pattern=pattern,
            max_length=200,
            description="`next_cursor` of the previous page: the key of its last item",
        ),
    ]


def decode_cursor(cursor: str | None, expected: type[T]) -> T | None:
    """The key a cursor names (its form was checked against the listing's pattern)."""
    if cursor is None:
        return None
    if expected is int:
        if not cursor.isdigit() or int(cursor) > _MAX_INT:
            raise Unprocessable("cursor is not a position of this listing")
        return int(cursor)  # type: ignore[return-value]
    return cursor  # type: ignore[return-value]


def page_of(
    items: list[Any], limit: int, key: Callable[[Any], int | str]
) -> tuple[list[Any], str | None]:
    """`items` was fetched with limit + 1 rows; return the page and the next cursor."""
    if len(items) > limit:
        items = items[:limit]
        return items, str(key(items[-1]))
    return items, None
