"""Prefixed, time-ordered identifiers (`ten_…`, `key_…`): ids sort by creation, for cursors."""

from __future__ import annotations

import secrets
import time


def new_id(prefix: str) -> str:
    # 12 hex digits of milliseconds (good until the year 10889) then 80 random bits.
    return f"{prefix}_{int(time.time() * 1000):012x}{secrets.token_hex(10)}"
