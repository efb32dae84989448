"""Apply and check migrations programmatically (the `airlock migrate` command and serve's check)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from service.errors import ConfigurationError

# The Alembic scripts ship inside the package, so an installed wheel migrates as a clone does.
# A wheel installs as plain files, which Alembic needs: it reads the scripts by path.
SCRIPTS = Path(str(resources.files("service") / "migrations"))


def alembic_config(url: str) -> Config:
    # No alembic.ini: it sits beside a clone only (for the `alembic` command), never in a wheel.
    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPTS))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Blocking; run it outside an event loop (or in a thread)."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def head_revision(url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(url)).get_current_head()


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as conn:
        return await conn.run_sync(
            lambda sync_conn: MigrationContext.configure(sync_conn).get_current_revision()
        )


async def ensure_migrated(engine: AsyncEngine, url: str) -> None:
    shown = engine.url.render_as_string(hide_password=True)
    try:
        current = await current_revision(engine)
    except (SQLAlchemyError, OSError) as exc:
        raise ConfigurationError(f"cannot reach the database at {shown}: {exc}") from exc
    head = head_revision(url)
    if current != head:
        raise ConfigurationError(
            f"the database at {shown} is not migrated (at {current or 'an empty schema'}, "
            f"needs {head}); run `airlock migrate` first"
        )
