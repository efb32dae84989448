"""What a stopped server left in a state dir: its sandboxes and snapshots, destroyed."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from pathlib import Path

from ..errors import RuntimeUnavailable
from .runtime import GVisorRuntime

log = logging.getLogger(__name__)


async def destroy_left(state_dir: Path, *, snapshots: bool = False, strict: bool = False) -> int:
    """Destroy every sandbox a stopped server left in `state_dir` (sandboxes and pool members
    outlive a server by design), and with `snapshots` every snapshot too; returns how many
    sandboxes were destroyed. Nothing where gVisor cannot run: no sandbox can have been made
    there. One that will not go is logged and the rest still are; with `strict` (tests) the
    first such failure is raised once all were tried."""
    try:
        runtime = await GVisorRuntime.open(state_dir)
    except RuntimeUnavailable:
        return 0
    failures: list[Exception] = []
    destroyed = 0

    async def attempt(what: str, step: Awaitable[None]) -> bool:
        try:
            await step
            return True
        except Exception as exc:
            log.exception("%s left in %s could not be removed", what, state_dir)
            failures.append(exc)
            return False

    try:
        for info in await runtime.list_sandboxes():
            destroyed += await attempt(f"sandbox {info.id}", runtime.destroy(info.id))
        if snapshots:
            for snapshot in await runtime.list_snapshots():
                await attempt(f"snapshot {snapshot.id}", runtime.delete_snapshot(snapshot.id))
    finally:
        await runtime.close()
    if strict and failures:
        raise failures[0]
    return destroyed
