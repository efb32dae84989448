"""Calls into the native `boxlite` library: bounded awaits and what its logs say.

BoxLite's native calls may ignore cancellation; `bounded` keeps a deadline anyway.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

LOG_LINE = 240


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Read a late result of an abandoned call, so it is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()


async def bounded(awaitable: Any, seconds: float) -> Any:
    """Await with a deadline that holds even if the native call ignores cancellation."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)
        raise TimeoutError
    return task.result()


def log_excerpts(home: Path, box_id: str | None) -> str:
    """The telling lines of BoxLite's logs for a box: errors and warnings, else the tail."""
    if not box_id:
        return ""
    box_dir = home / "boxes" / box_id
    parts = []
    for path in [*sorted(box_dir.glob("logs/*")), box_dir / "shim.stderr"]:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        telling = [ln for ln in lines if any(w in ln for w in ("ERROR", "WARN", "error", "fail"))]
        chosen = (telling or lines)[-6:]
        if chosen:
            parts.append(f"{path.name}:\n" + "\n".join(ln[-LOG_LINE:] for ln in chosen))
    return "\n".join(parts)


def home_dir(state_dir: Path, name: str = "boxlite") -> Path:
    home = Path(state_dir).resolve() / name
    home.mkdir(parents=True, exist_ok=True)
    return home
