"""`sbx tenant`, `sbx key`: tenants (with the operator key) and API keys.

A new key is printed once, alone on stdout (`KEY=$(sbx key create ci)`), what it is on stderr;
`--json` prints the API's answer, the key in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import click

from airlock_client.api.api_keys import create_api_key
from airlock_client.api.tenants import create_tenant, create_tenant_api_key, list_tenants
from airlock_client.models import ApiKeyCreate, QuotasPatch, TenantCreate
from airlock_client.models.api_key_create_scopes_type_0_item import API_KEY_CREATE_SCOPES_TYPE_0_ITEM_VALUES

from .. import _common as common
from .. import errors
from .base import Context, context_of, json_option, main, pairs

SCOPES = sorted(API_KEY_CREATE_SCOPES_TYPE_0_ITEM_VALUES)
QUOTAS = sorted(f.name for f in attrs.fields(QuotasPatch) if f.name != "additional_properties")


@main.group()
def tenant() -> None:
    """Tenants (with the operator key)."""


@tenant.command("create")
@click.argument("name")
@click.option(
    "--quota", "quotas", multiple=True, metavar="NAME=VALUE", help="A quota other than the default (repeatable)."
)
@json_option
@click.pass_context
def create_tenant_command(ctx: click.Context, name: str, quotas: tuple[str, ...], as_json: bool) -> None:
    """Create a tenant; prints its first API key (every scope), shown once."""
    c = context_of(ctx, as_json)
    body: dict[str, Any] = {"name": name}
    if quotas:
        body["quotas"] = _quotas(quotas)
    with common.client_for(c.config(), 30.0) as client:
        created = common.unwrap(create_tenant.sync_detailed(client=client, body=TenantCreate.from_dict(body)))
    if c.as_json:
        c.emit(created.to_dict())
        return
    click.echo(f"created tenant {created.tenant.name} ({created.tenant.id}); its API key, shown once:", err=True)
    click.echo(created.api_key)


@tenant.command("ls")
@json_option
@click.pass_context
def list_tenants_command(ctx: click.Context, as_json: bool) -> None:
    """List the tenants."""
    c = context_of(ctx, as_json)
    for item in _tenants(c):
        if c.as_json:
            c.emit(item.to_dict())
        else:
            click.echo(f"{item.id:<30} {item.status!s:<10} {item.name}")


@main.group()
def key() -> None:
    """API keys."""


@key.command("create")
@click.argument("name")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=click.Choice(SCOPES),
    help="A scope (repeatable; default: every scope the caller has).",
)
@click.option(
    "--tenant",
    "tenant_ref",
    metavar="ID|NAME",
    help="The tenant, with the operator key (a tenant's key makes its own tenant's keys).",
)
@json_option
@click.pass_context
def create_key_command(
    ctx: click.Context, name: str, scopes: tuple[str, ...], tenant_ref: str | None, as_json: bool
) -> None:
    """Create an API key; prints it, shown once. Needs the `keys:write` scope, or the operator key
    with --tenant."""
    c = context_of(ctx, as_json)
    body = ApiKeyCreate.from_dict({"name": name, **({"scopes": list(scopes)} if scopes else {})})
    with common.client_for(c.config(), 30.0) as client:
        if tenant_ref:
            tenant_id = _tenant_id(c, tenant_ref)
            answer = create_tenant_api_key.sync_detailed(tenant_id, client=client, body=body)
        else:
            answer = create_api_key.sync_detailed(client=client, body=body)
    try:
        created = common.unwrap(answer)
    except errors.Forbidden as exc:
        if tenant_ref or isinstance(exc, errors.MissingScope):
            raise
        raise errors.Forbidden(
            f"{exc.detail}: with the operator key, name the tenant (--tenant ID|NAME)", status=403
        ) from exc
    if c.as_json:
        c.emit(created.to_dict())
        return
    made = created.api_key
    click.echo(
        f"created API key {made.name} ({made.id}) of tenant {made.tenant_id}, scopes {' '.join(made.scopes)}; shown once:",
        err=True,
    )
    click.echo(created.key)


def _quotas(given: tuple[str, ...]) -> dict[str, Any]:
    quotas: dict[str, Any] = {}
    for name, raw in pairs(given, "--quota").items():
        if name not in QUOTAS:
            raise click.BadParameter(f"no quota named {name!r} (quotas: {', '.join(QUOTAS)})", param_hint="--quota")
        try:
            quotas[name] = json.loads(raw)
        except ValueError:
            quotas[name] = raw
    return quotas


def _tenants(c: Context) -> Iterator[Any]:
    cursor: str | None = None
    with common.client_for(c.config(), 30.0) as client:
        while True:
            page = common.unwrap(list_tenants.sync_detailed(client=client, **({"cursor": cursor} if cursor else {})))
            yield from page.items
            cursor = page.next_cursor if isinstance(page.next_cursor, str) else None
            if not cursor:
                return


def _tenant_id(c: Context, ref: str) -> str:
    """A tenant's id from its id or its name (names are unique)."""
    if ref.startswith("ten_"):
        return ref
    found = next((t.id for t in _tenants(c) if t.name == ref), None)
    if found is None:
        raise errors.NotFound(f"no tenant named {ref!r}", status=404)
    return found
