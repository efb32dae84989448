"""On-disk records both runtimes keep: JSON written atomically, and snapshot records.

A snapshot's record holds what a sandbox started from it needs to know (image, digest, spec)
plus what each runtime adds of its own (gVisor: the rootfs, PATH, whether the agent runs).
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import msgspec

from .errors import SnapshotNotFound
from .types import SandboxSpec, SnapshotInfo

SNAPSHOT_PREFIX = "snap-"
SNAPSHOT_ID = re.compile(r"snap-[0-9a-f]{24}")


def new_snapshot_id() -> str:
    return SNAPSHOT_PREFIX + secrets.token_hex(12)


def check_snapshot_id(snapshot_id: str) -> str:
    """The id if it is one this project makes (never a path), else SnapshotNotFound."""
    if not SNAPSHOT_ID.fullmatch(snapshot_id):
        raise SnapshotNotFound(snapshot_id)
    return snapshot_id


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace `path` whole: a reader sees the old record or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def read_snapshot(path: Path, snapshot_id: str) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SnapshotNotFound(snapshot_id) from exc


def snapshot_info(meta: dict[str, Any], runtime: str, size_bytes: int) -> SnapshotInfo:
    return SnapshotInfo(
        id=meta["id"],
        runtime=runtime,
        sandbox_id=meta["sandbox_id"],
        image=meta["image"],
        image_digest=meta["image_digest"],
        spec=msgspec.convert(meta["spec"], SandboxSpec),
        created_at=meta["created_at"],
        size_bytes=size_bytes,
    )
