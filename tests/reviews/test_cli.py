"""`airlock review` runs the pipeline in its own process, against its own database and state
dir, with no model configured: a failing change is REQUEST_CHANGES, a passing one only a
COMMENT, and the exit status says which."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.reviews.conftest import (
    BILLING,
    BROKEN_BILLING,
    REPO_ROOT,
    TESTS,
    make_repo,
    migrated_database,
    own_state,
)


@pytest.fixture(scope="module")
async def cli_database() -> AsyncIterator[str]:
    async with migrated_database("airlock_review_cli") as url:
        yield url


@pytest.fixture(scope="module")
async def cli_state(
    review_state: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Path]:
    async with own_state(review_state, tmp_path_factory, "review-cli-state") as state:
        yield state


async def airlock_review(
    state: Path, database: str, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "AIRLOCK_STATE_DIR": str(state),
        "AIRLOCK_DATABASE_URL": database,
        "AIRLOCK_RUNTIME": "gvisor",
    }
    return await asyncio.to_thread(
        subprocess.run,
        [str(REPO_ROOT / ".venv/bin/airlock"), "review", *args],
        env=env,
        cwd=state,
        capture_output=True,
        text=True,
        timeout=300,
    )


async def test_the_seed_example_from_the_command_line(
    cli_state: Path, cli_database: str, tmp_path: Path
) -> None:
    repo = make_repo(
        tmp_path, {"billing.py": BILLING}, {"billing.py": BROKEN_BILLING, "test_billing.py": TESTS}
    )
    done = await airlock_review(
        cli_state, cli_database, "--repo", str(repo), "--base", "main", "--head", "pr-42"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "verdict: REQUEST_CHANGES" in out
    assert "1 failed, 1 passed" in out
    stages = ("fetch", "sandbox", "upload", "checkout", "diff", "baseline", "test", "cleanup")
    for stage in (*stages, "gate", "model"):
        assert any(line.startswith(stage) for line in out.splitlines()), (stage, out)
    assert "no model is configured" in out
    assert "base: no tests\nhead: 1 passed, 1 failed\napprovable: no" in out


async def test_a_good_change_without_a_model_is_a_comment_not_an_approval(
    cli_state: Path, cli_database: str, tmp_path: Path
) -> None:
    repo = make_repo(
        tmp_path, {"billing.py": BILLING}, {"test_billing.py": TESTS}, branch="feature"
    )
    done = await airlock_review(
        cli_state, cli_database, "--repo", str(repo), "--head", "feature", "--tenant", "ci"
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert "verdict: COMMENT" in done.stdout
    assert "nothing judged the change" in done.stdout


async def test_refusals_exit_2_before_anything_runs(cli_state: Path, cli_database: str) -> None:
    done = await airlock_review(
        cli_state, cli_database, "--repo", "ssh://git@example.com/x.git", "--head", "pr-1"
    )
    assert done.returncode == 2
    assert "of the form this field takes" in done.stderr and "$.repo" in done.stderr


async def test_the_review_tenant_made_by_another_process_meanwhile_is_used(
    cli_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `airlock review` runs making the same tenant at once: the one whose insert loses
    uses the other's tenant instead of failing."""
    from service.audit.recorder import AuditContext
    from service.db.session import make_engine, make_sessionmaker
    from service.reviews import commands
    from service.settings import Settings
    from service.tenants.repository import TenantRepository

    engine = make_engine(cli_database)
    db = make_sessionmaker(engine)
    ctx = AuditContext(actor="cli", request_id=None, client=None)
    settings = Settings.from_env({}, database_url=cli_database)
    name = "cli-race"
    try:
        first = await commands._tenant(db, ctx, settings, name)
        real = TenantRepository.get_by_name
        calls = 0

        async def unseen_twice(self: TenantRepository, wanted: str) -> object:
            nonlocal calls
            calls += 1
            return None if calls <= 2 else await real(self, wanted)

        # Both looks before the insert miss the row, as when the other insert commits between.
        monkeypatch.setattr(TenantRepository, "get_by_name", unseen_twice)
        assert await commands._tenant(db, ctx, settings, name) == first
        assert calls == 3
    finally:
        await engine.dispose()
