from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

FileKind = Literal["file", "dir", "symlink", "other"]

# An absolute path inside a sandbox as the files routes take it: components without NUL or
# backslash, none empty (no `//`), none `.` or `..` (service.runtime.paths checks the same).
_COMPONENT = r"(?:[^/\\\x00.][^/\\\x00]*|\.[^/\\\x00.][^/\\\x00]*|\.\.[^/\\\x00]+)"
ABSOLUTE_PATH_PATTERN = rf"^(?:/{_COMPONENT})*/?$"
# The same path as the `{path}` of the files routes' URLs carries it: without its leading `/`.
# Written as "a component, then optionally more and a trailing `/`" (the same strings as
# `C(/C)*/?`): a generator drawing from it then yields a one-component path, the only kind a
# client can put in one URL segment, often enough to test the route.
URL_PATH_PATTERN = rf"^{_COMPONENT}(?:(?:/{_COMPONENT})*/?)?$"


class FileWritten(msgspec.Struct, kw_only=True):
    """A file stored in the sandbox: its absolute path and size in bytes."""

    path: str
    size: int


class FileInfo(msgspec.Struct, kw_only=True):
    name: str
    kind: FileKind
    size: int
    mode: str  # octal permission bits, as `?mode=` takes them: "0644"
    mtime: datetime


class FileList(msgspec.Struct, kw_only=True):
    dir: str
    items: list[FileInfo]


class ArchiveWritten(msgspec.Struct, kw_only=True):
    """An archive unpacked into `dir`; `size` is the archive's size in bytes."""

    dir: str
    size: int
