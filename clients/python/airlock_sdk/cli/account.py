"""`sbx token`, `templates`, `logs`: what the tenant has besides sandboxes."""

from __future__ import annotations

import time

import click

from airlock_client.api.templates import get_template, list_templates
from airlock_client.api.tokens import create_token
from airlock_client.models import TokenCreate

from .. import _common as common
from .. import errors
from .base import context_of, json_option, main


@main.command()
@click.option("--sandbox", "sandbox_id", help="Bind the token to this sandbox.")
@click.option("--scope", "scopes", multiple=True, help="A scope (repeatable; default: the key's own).")
@click.option("--ttl", type=int, help="Seconds the token lives (the tenant caps it).")
@json_option
@click.pass_context
def token(ctx: click.Context, sandbox_id: str | None, scopes: tuple[str, ...], ttl: int | None, as_json: bool) -> None:
    """Mint a short-lived token from the API key (print it, or its grant with --json)."""
    c = context_of(ctx, as_json)
    body = TokenCreate()
    if sandbox_id:
        body.sandbox_id = sandbox_id
    if scopes:
        body.scopes = list(scopes)
    if ttl is not None:
        body.ttl_s = ttl
    with common.client_for(c.config(), 30.0) as client:
        grant = common.unwrap(create_token.sync_detailed(client=client, body=body))
    if c.as_json:
        c.emit(grant.to_dict())
    else:
        click.echo(grant.token)


@main.command()
@json_option
@click.pass_context
def templates(ctx: click.Context, as_json: bool) -> None:
    """List the templates this tenant can start from."""
    c = context_of(ctx, as_json)
    with common.client_for(c.config(), 30.0) as client:
        page = common.unwrap(list_templates.sync_detailed(client=client))
    for item in page.items:
        if c.as_json:
            c.emit(item.to_dict())
        else:
            click.echo(f"{item.name:<24} v{item.latest_version:<4} {item.state!s}")


@main.command()
@click.argument("template")
@click.option("--version", "version", type=int, help="The build of this version (default: the latest).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing until the build ends.")
@json_option
@click.pass_context
def logs(ctx: click.Context, template: str, version: int | None, follow: bool, as_json: bool) -> None:
    """A template build's log."""
    c = context_of(ctx, as_json)
    shown = 0
    with common.client_for(c.config(), 30.0) as client:
        while True:
            found = common.unwrap(get_template.sync_detailed(template, client=client))
            versions = found.versions if isinstance(found.versions, list) else []
            wanted = version or found.latest_version
            build = next((v for v in versions if v.version == wanted), None)
            if build is None:
                raise errors.NotFound(f"template {template} has no version {wanted}", status=404)
            text = build.build_log or ""
            if text[shown:]:
                if c.as_json:
                    c.emit({"event": "log", "version": wanted, "text": text[shown:]})
                else:
                    click.echo(text[shown:], nl=False)
                shown = len(text)
            state = str(build.state)
            if not follow or state not in ("queued", "building"):
                if c.as_json:
                    c.emit({"event": "state", "version": wanted, "state": state})
                return
            time.sleep(1.0)
