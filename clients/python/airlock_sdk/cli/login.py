"""`sbx login`, `sbx logout`: the URL and API key kept in the user's config file.

`login` checks the key with one read the service answers for any valid credential before it
stores anything; the environment (`AIRLOCK_URL`, `AIRLOCK_API_KEY`) still wins over the file.
"""

from __future__ import annotations

import os
import sys

import click
import httpx

from .. import config as stored_config
from .. import errors
from .base import context_of, json_option, main


@main.command()
@click.option("--url", "login_url", help="The service (default: --url before the command, AIRLOCK_URL, or asked).")
@click.option("--api-key", "login_key", help="The key (default: AIRLOCK_API_KEY, asked, or a line on stdin).")
@json_option
@click.pass_context
def login(ctx: click.Context, login_url: str | None, login_key: str | None, as_json: bool) -> None:
    """Check a URL and API key against the service and store them in the config file."""
    c = context_of(ctx, as_json)
    url = _url(login_url or c.url).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{url!r} is not an http:// or https:// URL", param_hint="--url")
    key = login_key or c.api_key or _asked_key()
    who = _check(url, key)
    path = stored_config.store(url, key)
    if c.as_json:
        c.emit({"event": "login", "url": url, "as": who, "config": str(path)})
    else:
        click.echo(f"logged in to {url} as {who}; stored in {path}")
    _note_environment(url, key)


@main.command()
@json_option
@click.pass_context
def logout(ctx: click.Context, as_json: bool) -> None:
    """Remove the API key stored by `sbx login` (the URL stays)."""
    c = context_of(ctx, as_json)
    path = stored_config.forget_key()
    shown = path or stored_config.config_path()
    if c.as_json:
        c.emit({"event": "logout", "removed": path is not None, "config": str(shown)})
    else:
        click.echo(f"removed the API key from {shown}" if path else f"no API key stored in {shown}")
    if os.environ.get("AIRLOCK_API_KEY"):
        click.echo("sbx: AIRLOCK_API_KEY is still set in this environment, and is used", err=True)


def _url(given: str | None) -> str:
    if given:
        return given
    known = _stored().get("url") or stored_config.DEFAULT_URL
    if sys.stdin.isatty():
        return str(click.prompt("Airlock URL", default=known))
    return known


def _asked_key() -> str:
    if sys.stdin.isatty():
        key = str(click.prompt("API key", hide_input=True)).strip()
    else:
        key = sys.stdin.readline().strip()
    if not key:
        raise click.UsageError("no API key: pass --api-key, set AIRLOCK_API_KEY, or give it on stdin")
    return key


def _stored() -> dict[str, str]:
    try:
        return stored_config.stored()
    except errors.AirlockError:
        return {}  # an unreadable file is replaced by the login


def _check(url: str, key: str) -> str:
    """Who the key is to the service ("the operator", "a tenant's key"); raises when the service
    cannot be reached, is not Airlock, or refuses the key. One or two cheap reads: the sandbox
    list answers a tenant's credential, the tenant list the operator's."""
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=15.0) as http:
            answer = http.get("/v1/sandboxes", params={"limit": 1})
            if answer.status_code == 403:
                if http.get("/v1/tenants", params={"limit": 1}).status_code == 200:
                    return "the operator"
                return "a tenant's key"  # one without sandboxes:read
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise errors.TransportError(f"cannot reach {url}: {exc or type(exc).__name__}") from exc
    kind = answer.headers.get("content-type", "")
    if answer.status_code == 200 and kind.startswith("application/json"):
        return "a tenant's key"
    if kind.startswith("application/problem+json"):
        problem = errors.from_answer(answer.status_code, answer.content, answer.headers)
        if answer.status_code == 401:
            raise errors.Unauthenticated(f"{url} refused the key: {problem.detail}", status=401)
        raise problem
    raise errors.AirlockError(
        f"{url} does not answer as an Airlock API (GET /v1/sandboxes: {answer.status_code})",
        code="not_airlock",
    )


def _note_environment(url: str, key: str) -> None:
    """The environment wins over the file: say so when it would hide what was just stored."""
    if os.environ.get("AIRLOCK_API_KEY", key) != key:
        click.echo("sbx: AIRLOCK_API_KEY is set in this environment and wins over the stored key", err=True)
    if os.environ.get("AIRLOCK_URL", url).rstrip("/") != url:
        click.echo("sbx: AIRLOCK_URL is set in this environment and wins over the stored URL", err=True)
