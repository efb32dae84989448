"""The `airlock` command: serve, migrate, keys, review, and (from the runtime layer) image and
doctor."""

from __future__ import annotations

import argparse
import asyncio
import copy
import difflib
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from service.errors import ConfigurationError
from service.redaction import RedactLinks
from service.settings import Role, Settings, variable_names

# How long an idle connection stays open. Longer than any client keeps one for reuse: httpx
# (the Python client, the tests) keeps an idle connection 5 s, a replica's proxy to a node
# (aiohttp) 30 s, nginx's upstream pool 60 s. At uvicorn's own 5 s, a client's request sent on a
# connection idle for about 5 s met the server closing it: a ReadError with nothing answered.
KEEP_ALIVE_S = 75


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from service.app import create_app

    settings = Settings.from_env(host=args.host, port=args.port, role=args.role)
    # Refuse before binding the port, with the fix in the message.
    asyncio.run(_check_migrated(settings))
    app = create_app(settings)
    print(
        f"airlock: serving on http://{settings.host}:{settings.port} "
        f"({_role_shown(settings)}, {settings.env.value}, database {_shown_url(settings)})",
        file=sys.stderr,
    )
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        log_config=_uvicorn_logging(),
        proxy_headers=False,
        lifespan="on",
        # httptools and uvloop (pinned dependencies): HTTP parsing and the event loop in C;
        # h11 and the stock asyncio loop cost more per request and per database round trip.
        http="httptools",
        loop="uvloop",
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    return 0


def _uvicorn_logging() -> dict[str, Any]:
    """uvicorn's own logging set-up, every handler of it hiding preview links: the access log
    prints each request's path with its query, where a link travels. Its lines begin with the
    time, as the service's own do: when a request came is what an operator reads it for."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    for formatter in config["formatters"].values():
        formatter["fmt"] = "%(asctime)s " + formatter["fmt"]
    config.setdefault("filters", {})["preview_links"] = {"()": RedactLinks}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("preview_links")
    return config


async def _check_migrated(settings: Settings) -> None:
    from service.db.migrate import ensure_migrated
    from service.db.session import make_engine

    _make_state_dir(settings)
    engine = make_engine(settings.effective_database_url, settings.database_pool_size)
    try:
        await ensure_migrated(engine, settings.effective_database_url)
    finally:
        await engine.dispose()


def _make_state_dir(settings: Settings) -> None:
    try:
        settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigurationError(
            f"AIRLOCK_STATE_DIR: cannot make {settings.state_dir}: {exc.strerror}"
        ) from exc


def _role_shown(settings: Settings) -> str:
    if settings.role == Role.API:
        return "API replica"
    from service.nodes.local import local_node_id

    node = local_node_id(settings)
    return f"node {node}" if settings.role == Role.NODE else f"API and node {node}"


def _shown_url(settings: Settings) -> str:
    from sqlalchemy.engine import make_url

    return make_url(settings.effective_database_url).render_as_string(hide_password=True)


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from service.db import migrate

    url = settings.effective_database_url
    _make_state_dir(settings)
    if args.revision.startswith("-") or args.down:
        migrate.downgrade(url, args.revision)
    else:
        migrate.upgrade(url, args.revision)
    print(f"airlock: database {_shown_url(settings)} is at {args.revision}", file=sys.stderr)
    return 0


def _keys_rotate(args: argparse.Namespace, settings: Settings) -> int:
    from service.auth.keyring import create_key

    key = create_key(settings.keys_dir)
    print(f"airlock: new signing key {key.kid} in {settings.keys_dir}; it signs from now on")
    return 0


def _keys_list(args: argparse.Namespace, settings: Settings) -> int:
    from service.auth.keyring import KeyRing

    ring = KeyRing(settings.keys_dir)
    keys = ring.all()
    for key in keys:
        marker = "signing" if key is keys[-1] else "verify-only"
        print(f"{key.kid}  {marker}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="airlock", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8080)")
    serve.add_argument(
        "--role",
        choices=("all", "api", "node"),
        default=None,
        help="all: the API and this host's node (default); api: a replica that routes to "
        "nodes; node: this host's sandboxes, for the replicas (AIRLOCK_ROLE)",
    )
    serve.set_defaults(func=_serve)

    mig = sub.add_parser("migrate", help="apply database migrations")
    mig.add_argument("revision", nargs="?", default="head")
    mig.add_argument("--down", action="store_true", help="downgrade to REVISION")
    mig.set_defaults(func=_migrate)

    keys = sub.add_parser("keys", help="manage token signing keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    keys_sub.add_parser("rotate", help="add a new signing key").set_defaults(func=_keys_rotate)
    keys_sub.add_parser("list", help="list signing keys").set_defaults(func=_keys_list)

    from service.reviews.commands import add_commands as add_review_commands

    add_review_commands(sub)

    try:
        from service.runtime.commands import add_commands
    except ImportError:
        pass
    else:
        add_commands(sub, Settings.from_env)
    return parser


# `AIRLOCK_*` names that are not settings of the server but that other parts of the project
# read, so they may well be in its environment: `sbx`'s, deploy/compose.yaml's .env, the node
# image's entrypoint, the review runner's, the scripts' and the tests'.
_NOT_SETTINGS = frozenset(
    "AIRLOCK_URL AIRLOCK_API_KEY AIRLOCK_CONFIG AIRLOCK_VERSION AIRLOCK_PUBLISH AIRLOCK_KEYS "
    "AIRLOCK_DATABASE_PASSWORD AIRLOCK_LOOP_DEVICES AIRLOCK_REVIEW_RESULTS AIRLOCK_APT_DIR "
    "AIRLOCK_SECURITY_MIRROR".split()
)
_NOT_SETTINGS_PREFIXES = ("AIRLOCK_TEST_", "AIRLOCK_IMAGES_", "AIRLOCK_LOAD_", "AIRLOCK_FUZZ_")


def _unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """What is wrong with each `AIRLOCK_*` variable that names no setting (a misspelling the
    service would otherwise ignore), with the setting it most likely meant."""
    settings = variable_names()
    found = []
    for name in sorted(environ):
        known = name in settings or name in _NOT_SETTINGS or name.startswith(_NOT_SETTINGS_PREFIXES)
        if not name.startswith("AIRLOCK_") or known:
            continue
        close = difflib.get_close_matches(name, settings, n=1, cutoff=0.8)
        meant = f" (did you mean {close[0]}?)" if close else ""
        found.append(f"{name} is not a setting{meant}; it is ignored")
    return found


# The service's own loggers: `airlock.*` by name, `service.*` by module.
SERVICE_LOGGERS = ("airlock", "service")


def _set_log_level(level: str) -> None:
    """AIRLOCK_LOG_LEVEL for the service's own lines (uvicorn gets it separately). The
    libraries' lines follow it up, never down past INFO: at DEBUG they would all speak."""
    level = level.upper()
    for name in SERVICE_LOGGERS:
        logging.getLogger(name).setLevel(level)
    root = logging.getLogger()
    root.setLevel(max(logging.INFO, logging.getLevelNamesMapping()[level]))


def main(argv: Sequence[str] | None = None) -> int:
    # The service's own lines pass one handler, which hides preview links as uvicorn's do.
    handler = logging.StreamHandler()
    handler.addFilter(RedactLinks())
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        handlers=[handler],
    )
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    # /mcp is stateless: the transport ends its "session" (None) after every request and says
    # so at INFO. Its warnings and errors (a failed response, a crashed writer) still show.
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    args = build_parser().parse_args(argv)
    for problem in _unknown_variables(os.environ):
        print(f"airlock: warning: {problem}", file=sys.stderr)
    try:
        settings = Settings.from_env()
        _set_log_level(settings.log_level)
        return int(args.func(args, settings) or 0)
    except ConfigurationError as exc:
        print(f"airlock: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
