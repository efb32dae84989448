"""`sbx`: Airlock sandboxes from a shell.

    id=$(sbx new --type small --ttl 600 --json | jq -r 'select(.event=="ready") | .id')
    sbx exec "$id" --timeout 60 -- python3 -c "$GENERATED_CODE"
    sbx delete "$id" --yes

The URL and credential come from `--url`/`--api-key`, `AIRLOCK_URL`/`AIRLOCK_API_KEY`, or the
config file `sbx login` writes (`AIRLOCK_CONFIG`, else ~/.config/airlock/config.json), in that
order. `--json` makes every command print JSON, one object per line; progress goes to stderr.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import NoReturn

import click
import httpx

from .. import errors
from . import account, admin, code, execs, files, login, mcp, sandboxes  # noqa: F401 (they add their commands to `main`)
from .base import main

__all__ = ["main", "run"]


def run() -> None:
    """The `sbx` command: click's, with the API's errors as one line (or one JSON object)."""
    try:
        main.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except errors.AirlockError as exc:
        fail(exc)
    except httpx.TransportError as exc:  # a generated client's call that got no answer
        fail(errors.TransportError(f"cannot reach {_where(exc)}: {exc or type(exc).__name__}"))


def fail(exc: errors.AirlockError) -> NoReturn:
    """The error on stderr; with --json also as an object on stdout, with the refused values
    (`errors`: field, message, source) the API named."""
    if "--json" in sys.argv[1:]:
        shown = {"event": "error", "status": exc.status, "code": exc.code, "detail": exc.detail}
        click.echo(json.dumps({**shown, "errors": [dataclasses.asdict(e) for e in exc.errors]}))
    click.echo(f"sbx: {exc}", err=True)
    sys.exit(1)


def _where(exc: httpx.TransportError) -> str:
    try:
        url = exc.request.url
    except RuntimeError:  # no request attached
        return "the service"
    return str(url.copy_with(path="/", query=None)).rstrip("/")
