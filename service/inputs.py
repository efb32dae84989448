"""One policy for what a request may carry, applied to the matched route before its handler
(and before authentication), and without buffering anything:

- a NUL character in the path or the query is a 422 (databases refuse or silently keep it;
  argv cannot carry it);
- a route whose handler streams the body under its own cap (`opt={"streamed_body": True}`:
  file, archive and bundle uploads) gets the body untouched, whatever content type the caller
  claims;
- every other route takes at most its `request_max_body_size` (the app's default, 1 MiB, or
  the route's own): a larger `Content-Length` is a 413 at once, with nothing read; a body that
  streams past the limit is a 413 as soon as it does; a NUL byte or a `\\u0000` escape is a 422
  (except in a body of raw bytes, `opt={"raw_body": True}`: an exec's stdin). Both are checked
  chunk by chunk as the handler reads the body;
- a JSON body bound to a msgspec Struct is decoded strictly against the handler's `data` type
  once it is whole (Litestar converts leniently, which takes a JSON 0 for a bool and "5" for an
  int): a value of the wrong JSON type is a 422 naming the field. A number is one JSON type,
  so 118.0 is an int (as the document's `integer` says) and 118.5 is not. Malformed JSON is
  left to Litestar's own 422.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import msgspec
from litestar.enums import RequestEncodingType
from litestar.exceptions import ValidationException
from litestar.params import BodyKwarg

from service.errors import AppError, Unprocessable
from service.requestid import request_id_for

MIB = 1 << 20
# The JSON body of a route that names no limit of its own.
DEFAULT_BODY_LIMIT = MIB

# `\u0000` in JSON text, unless its backslash is itself escaped (`\\u0000` is plain text).
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_ESCAPE = b"u0000"


class BodyTooLarge(AppError):
    status, code, title = 413, "payload_too_large", "The request body is too large"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"this route accepts a body of at most {limit} bytes", extra={"limit_bytes": limit}
        )


class NulScanner:
    """Finds a NUL byte or an unescaped `\\u0000` in a body read in chunks. An escape can be cut
    anywhere, so the end of a chunk that could begin one (an unescaped backslash and the start
    of `u0000`) is carried into the next."""

    def __init__(self) -> None:
        self._carry = b""

    def found(self, chunk: bytes) -> bool:
        if b"\x00" in chunk:
            return True
        text = self._carry + chunk
        if _JSON_NUL.search(text):
            return True
        self._carry = _open_escape(text)
        return False


def _open_escape(text: bytes) -> bytes:
    """The end of `text` that begins a `\\u0000` escape still open, or b""."""
    for after in range(min(len(_ESCAPE) - 1, len(text)), -1, -1):
        tail = text[len(text) - after :]
        if not _ESCAPE.startswith(tail):
            continue
        head = text[: len(text) - after]
        if (len(head) - len(head.rstrip(b"\\"))) % 2 == 1:  # an odd run: it escapes
            return b"\\" + tail
    return b""


def body_limit(handler: Any) -> int | None:
    """The most a route's body may be, or None for a route that streams it under its own cap."""
    if handler is None:
        return DEFAULT_BODY_LIMIT
    if handler.opt.get("streamed_body"):
        return None
    resolve = getattr(handler, "resolve_request_max_body_size", None)
    return (resolve() if resolve is not None else None) or DEFAULT_BODY_LIMIT


def _is_struct(field: Any) -> bool:
    return field.is_subclass_of(msgspec.Struct)


@functools.cache
def _strict_decoder(annotation: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(annotation, strict=True)


def strict_body_type(handler: Any) -> Any:
    """The type the route's JSON body is decoded strictly into when it binds a msgspec Struct
    (alone, in an Optional or in a collection), else None."""
    field = getattr(handler, "parsed_data_field", None)
    if field is None:
        return None
    kwarg = field.kwarg_definition
    if isinstance(kwarg, BodyKwarg) and kwarg.media_type != RequestEncodingType.JSON:
        return None
    if not field.match_predicate_recursively(_is_struct):
        return None
    return field.annotation


def _integral(value: Any) -> Any:
    """`value` with each float that has no fraction made an int: JSON has one number type, and
    the document's `integer` (JSON Schema's) is any number with a zero fractional part."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(item) for item in value]
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    return value


def _check_types(annotation: Any, body: bytes, scope: Any) -> None:
    try:
        _strict_decoder(annotation).decode(body)
        return
    except msgspec.ValidationError:
        pass  # judged again below, where 118.0 is 118 (the fast path above takes only 118)
    except msgspec.DecodeError:
        return  # not JSON at all: Litestar's own refusal says so
    except RecursionError:
        raise _nested_refusal(scope) from None
    try:
        msgspec.convert(_integral(msgspec.json.decode(body)), annotation, strict=True)
    except msgspec.ValidationError as error:
        raise _strict_refusal(scope, error) from None
    except msgspec.DecodeError:
        # A value of the wrong type before what makes it not JSON (`1)`): the typed decoder
        # stopped at the type, the plain one at the syntax; Litestar's refusal says so.
        return
    except RecursionError:
        raise _nested_refusal(scope) from None


def _nested_refusal(scope: Any) -> ValidationException:
    return ValidationException(
        detail=f"Validation failed for {scope.get('method')} {scope.get('path')}",
        extra=[{"message": "the body is nested too deeply", "source": "body"}],
    )


_REGEX = re.compile(r"Expected `str` matching regex '.*'", re.DOTALL)


def readable(error: msgspec.ValidationError) -> str:
    """msgspec's message, with a pattern it quotes whole (hundreds of characters for a URL or
    a host name) replaced by where to read it."""
    return _REGEX.sub(
        "Expected `str` of the form this field takes (its `pattern` in /schema/openapi.json)",
        str(error),
    )


def _strict_refusal(scope: Any, error: msgspec.ValidationError) -> ValidationException:
    """The same problem Litestar gives for a body that does not validate: a message and the
    field's dotted path (msgspec says `Expected `bool`, got `int` - at `$.wait``)."""
    message, _, where = readable(error).partition(" - at ")
    entry: dict[str, str] = {"message": message, "source": "body"}
    key = where.strip("`").removeprefix("$").removeprefix(".")
    if key:
        entry["key"] = key
    return ValidationException(
        detail=f"Validation failed for {scope.get('method')} {scope.get('path')}", extra=[entry]
    )


def _has_nul(part: bytes) -> bool:
    return b"\x00" in part or b"%00" in part.lower()


def _content_length(scope: Any) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(scope: Any, send: Any, error: AppError) -> None:
    body = json.dumps(
        {
            "type": f"https://airlock.dev/problems/{error.code}",
            "title": error.title,
            "status": error.status,
            "code": error.code,
            "detail": error.detail,
            "instance": scope.get("path"),
            "request_id": request_id_for(scope),
            **error.extra,
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _nul_refusal(where: str) -> Unprocessable:
    error = Unprocessable(f"invalid {where}: a NUL character is not allowed")
    if where == "path":
        error.code = "invalid_path"
    return error


def checked_receive(
    receive: Any,
    limit: int,
    strict_type: Any = None,
    scope: Any = None,
    *,
    binary: bool = False,
) -> Any:
    """`receive` that raises BodyTooLarge past `limit` bytes and a 422 on a NUL, chunk by
    chunk, and, given a `strict_type`, a 422 when the whole body has a value of the wrong
    type; the handler's own exception handling renders each as a problem response."""
    scanner = NulScanner()
    seen = 0
    chunks: list[bytes] = []

    async def receive_checked() -> Any:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                raise BodyTooLarge(limit)
            if not binary and scanner.found(chunk):
                raise _nul_refusal("request body")
            if strict_type is not None:
                chunks.append(chunk)
                if not message.get("more_body", False):
                    _check_types(strict_type, b"".join(chunks), scope)
        return message

    return receive_checked


class InputPolicy:
    """ASGI middleware (Litestar runs it per route, so the matched handler is in the scope)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Some servers put the query in raw_path too; the query is judged below.
        raw_path = (scope.get("raw_path") or scope.get("path", "").encode()).split(b"?", 1)[0]
        if _has_nul(raw_path):
            await _refuse(scope, send, _nul_refusal("path"))
            return
        if _has_nul(scope.get("query_string", b"")):
            await _refuse(scope, send, _nul_refusal("query"))
            return
        handler = scope.get("route_handler")
        limit = body_limit(handler)
        if limit is None:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(scope, send, BodyTooLarge(limit))
            return
        strict_type = strict_body_type(handler)
        binary = bool(handler is not None and handler.opt.get("raw_body"))
        checked = checked_receive(receive, limit, strict_type, scope, binary=binary)
        await self.app(scope, checked, send)
