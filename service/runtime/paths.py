"""Validation of file paths that name something inside a sandbox.

Paths are only ever resolved by processes inside the sandbox; this check keeps requests
unambiguous (no `..`, no `.`, no NUL, no empty components) so what a caller names is what
the sandbox opens. Relative paths are taken from the sandbox's work directory.
"""

from __future__ import annotations

from .errors import InvalidPath

WORKDIR = "/work"
MAX_PATH = 4096


def sandbox_path(path: str, base: str = WORKDIR) -> str:
    """Return the absolute, normalised path inside the sandbox, or raise InvalidPath."""
    if not isinstance(path, str) or path == "":
        raise InvalidPath(str(path), "empty")
    if "\x00" in path:
        raise InvalidPath(path, "contains NUL")
    if len(path.encode()) > MAX_PATH:
        raise InvalidPath(path, "too long")
    if "\\" in path:
        raise InvalidPath(path, "contains a backslash")
    parts = path.split("/")
    inner = parts[1:-1] if path.startswith("/") else parts[:-1]
    for part in parts:
        if part == "..":
            raise InvalidPath(path, "contains '..'")
        if part == ".":
            raise InvalidPath(path, "contains '.'")
    if any(part == "" for part in inner):
        raise InvalidPath(path, "contains an empty component")
    cleaned = "/".join(p for p in parts if p)
    absolute = f"/{cleaned}" if path.startswith("/") else f"{base.rstrip('/')}/{cleaned}"
    return absolute.rstrip("/") or "/"
