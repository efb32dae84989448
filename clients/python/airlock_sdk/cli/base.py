"""What every `sbx` command shares: its context (service, credential, --json), its helpers and
the command group."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from ..config import Config
from ..sandbox import Sandbox


class Context:
    def __init__(self, url: str | None, api_key: str | None, as_json: bool) -> None:
        self.url, self.api_key, self.as_json = url, api_key, as_json

    def config(self) -> Config:
        return Config.resolve(self.url, self.api_key)

    def sandbox(self, sandbox_id: str) -> Sandbox:
        return Sandbox.connect(sandbox_id, url=self.url, api_key=self.api_key)

    def emit(self, value: Mapping[str, Any]) -> None:
        click.echo(json.dumps(value, default=str, separators=(",", ":")))

    def progress(self, text: str) -> None:
        if sys.stderr.isatty() or not self.as_json:
            click.echo(text, err=True)


class Failure(click.ClickException):
    """An expected failure of a command (a missing file, a wrong target): `sbx: <message>` on
    stderr and exit status 1, as the API's errors are shown."""

    def show(self, file: Any = None) -> None:
        click.echo(f"sbx: {self.format_message()}", err=True)


def pairs(values: Iterable[str], what: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint=what)
        found[name] = value
    return found


def json_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--json` on a subcommand as well as before it (`sbx --json ls` = `sbx ls --json`)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON, one object per line.")(fn)


def context_of(ctx: click.Context, as_json: bool) -> Context:
    obj: Context = ctx.obj
    obj.as_json = obj.as_json or as_json
    return obj


def info_of(sandbox: Any) -> dict[str, Any]:
    return {k: v for k, v in sandbox.to_dict().items() if v is not None}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="AIRLOCK_URL", help="The service (default: AIRLOCK_URL, the config file, or localhost).")
@click.option("--api-key", envvar="AIRLOCK_API_KEY", help="An API key or token (default: AIRLOCK_API_KEY).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON, one object per line.")
@click.pass_context
def main(ctx: click.Context, url: str | None, api_key: str | None, as_json: bool) -> None:
    """Airlock sandboxes from a shell."""
    ctx.obj = Context(url, api_key, as_json)
