"""A preview link (service.ports.links) is a bearer credential that travels in a URL's query,
as `PREVIEW_PARAM`. Wherever this process writes a URL down (its log lines, its traces'
attributes), the link's value is shown as `***`.

The name is matched in every spelling the service accepts it in: the query is decoded before
the link is looked for (service.ports.access.link_in), so `airlock%5Fpreview=` carries a link
as well. A value that is not a link but looks like one is hidden too; nothing else is touched.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

# The query parameter (and cookie) a preview link travels in.
PREVIEW_PARAM = "airlock_preview"
SHOWN = "***"


def _spellings(name: str) -> str:
    """Each character as itself or as its percent-escape."""
    return "".join(f"(?:{re.escape(c)}|%{ord(c):02x})" for c in name)


# The value runs to the next parameter, or to the end of the URL in a line of text. `=` may be
# escaped too: a link inside another parameter's value (a `next=` URL) is still a link.
_LINK = re.compile(rf"((?:{_spellings(PREVIEW_PARAM)})(?:=|%3d))[^&\s\"'#]+", re.IGNORECASE)


def redact(text: str) -> str:
    """The text with every preview link's value replaced by `***`."""
    return _LINK.sub(rf"\g<1>{SHOWN}", text)


class RedactLinks(logging.Filter):
    """A handler's filter: the records it writes carry no preview link, in their message, their
    arguments (kept one by one: uvicorn's access formatter reads them so) or their traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, Mapping):
            record.args = {key: _redacted(value) for key, value in record.args.items()}
        elif isinstance(record.args, tuple):
            record.args = tuple(_redacted(value) for value in record.args)
        if record.exc_info and not record.exc_text:
            # Formatted here, once, so that the handler writes the redacted text.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def _redacted(value: Any) -> Any:
    """An argument as it was unless its text holds a link (numbers keep their `%d`)."""
    if value is None or isinstance(value, int | float):
        return value
    text = value if isinstance(value, str) else str(value)
    hidden = redact(text)
    return value if hidden == text else hidden
