"""The README's walk-throughs work as written against a fresh `airlock serve`
(tests/readme_walkthrough.py runs them and checks every answer)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.e2e.conftest import Airlock
from tests.readme_walkthrough import run_walkthroughs


async def test_readme_walkthroughs_work_as_written(airlock: Airlock, tmp_path: Path) -> None:
    await asyncio.to_thread(run_walkthroughs, airlock.server.url, airlock.operator_key, tmp_path)
