"""How the settings read the environment: each setting's variable, a value's decoding, what a
value must be (for the message that refuses it), and the database URL with its driver."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from service.errors import ConfigurationError

# The database drivers the service has, by URL scheme, and the schemes taken to mean them:
# libpq, CloudNativePG's app Secret (`uri`) and many platforms write `postgresql://` or
# `postgres://`, which SQLAlchemy would open with psycopg (not installed).
DATABASE_SCHEMES = {
    "postgresql+asyncpg": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "sqlite": "sqlite+aiosqlite",
}


def database_url_with_driver(url: str) -> str:
    """The URL with the driver the service opens it with: `postgresql://` and `postgres://`
    become `postgresql+asyncpg://` (and a `sslmode` parameter `ssl`), `sqlite://`
    `sqlite+aiosqlite://`; the rest is kept as written. A driver the service does not have is
    refused."""
    scheme, separator, rest = url.partition("://")
    driver = DATABASE_SCHEMES.get(scheme.lower()) if separator else None
    if driver is None:  # (the URL itself is not shown: it may hold a password)
        what = f"the driver {scheme}://" if separator else "a URL without a scheme"
        raise ConfigurationError(
            f"AIRLOCK_DATABASE_URL names {what}, which the service cannot open: use "
            "postgresql+asyncpg://user:password@host/db (postgresql:// and postgres:// are "
            "taken as asyncpg) or sqlite+aiosqlite:///path"
        )
    if driver == "postgresql+asyncpg" and "?" in rest:
        # libpq's `sslmode` (as platforms write it) is asyncpg's `ssl`, with the same modes.
        where, query = rest.split("?", 1)
        params = [
            f"ssl={p.removeprefix('sslmode=')}" if p.startswith("sslmode=") else p
            for p in query.split("&")
        ]
        rest = f"{where}?{'&'.join(params)}"
    return f"{driver}://{rest}"


def env_name(field: str) -> str:
    """The environment variable of the setting `field`."""
    return "OTEL_TRACES_EXPORTER" if field == "otel_traces_exporter" else f"AIRLOCK_{field.upper()}"


def wanted(kind: object) -> str:
    """What a setting's value must be, for a message."""
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return "one of " + ", ".join(kind)
    words = {bool: "true or false", int: "a whole number", float: "a number", Path: "a path"}
    for simple, text in words.items():
        if kind is simple or simple in getattr(kind, "__args__", ()):
            return text
    return "a valid value"


def decode(kind: type, value: object) -> object:
    """msgspec's hook for the types it does not convert from a string itself."""
    if kind is Path and isinstance(value, str | Path):
        return Path(value)
    raise NotImplementedError
