"""The audit key: 32 random bytes in `<state dir>/audit.key` (mode 0600), made on first start.

Every replica must share the file, like the secrets key; without it no event can be recorded
or verified. It never goes to the database.
"""

from __future__ import annotations

import os
from pathlib import Path

from service.errors import ConfigurationError

KEY_BYTES = 32


def load_or_create(path: Path) -> bytes:
    """The key in `path` (Settings.audit_key_path), made when there is none."""
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = os.urandom(KEY_BYTES)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            key = path.read_bytes()
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(key)
    if len(key) != KEY_BYTES:
        raise ConfigurationError(f"{path} must hold {KEY_BYTES} bytes, not {len(key)}")
    return key
