"""`sbx new`, `ls`, `get`, `delete`, `history`: sandboxes themselves."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

import click

from .. import _common as common
from ..sandbox import Sandbox
from .base import context_of, info_of, json_option, main, pairs


@main.command()
@click.option("--type", "--size", "size", type=click.Choice(["small", "medium", "large"]), help="Size.")
@click.option("--ttl", type=int, help="Seconds until the sandbox is deleted.")
@click.option("--template", help="Start from this template.")
@click.option("--network", help='none, open, or a JSON policy like \'{"mode": "allowlist", "allow": [...]}\'.')
@click.option("--env", "env", multiple=True, help="NAME=VALUE for every command (repeatable).")
@click.option("--label", "labels", multiple=True, help="NAME=VALUE label (repeatable).")
@json_option
@click.pass_context
def new(
    ctx: click.Context,
    size: str | None,
    ttl: int | None,
    template: str | None,
    network: str | None,
    env: tuple[str, ...],
    labels: tuple[str, ...],
    as_json: bool,
) -> None:
    """Create a sandbox; prints its id (with --json: a `creating` event, then `ready`)."""
    c = context_of(ctx, as_json)
    policy: Any = network
    if network and network.lstrip().startswith("{"):
        policy = json.loads(network)
    if c.as_json:
        c.emit({"event": "creating", "size": size, "template": template, "ttl_s": ttl})
    else:
        c.progress("creating a sandbox…")
    started = time.monotonic()
    sandbox = Sandbox.create(
        size=size,
        ttl=ttl,
        template=template,
        network=policy,
        env=pairs(env, "--env"),
        labels=pairs(labels, "--label"),
        url=c.url,
        api_key=c.api_key,
    )
    took = round(time.monotonic() - started, 3)
    if c.as_json:
        c.emit({"event": "ready", "seconds": took, **info_of(sandbox.info)})
    else:
        click.echo(sandbox.id)
        c.progress(f"ready in {took:.1f} s")
    sandbox.close()


# What `sbx ls` shows unless --all: sandboxes that exist (a stopped or failed one is a record).
LIVE_STATES = ("creating", "running", "pausing", "paused", "resuming", "stopping")


@main.command(name="ls")
@click.option("--all", "show_all", is_flag=True, help="Stopped and failed sandboxes too.")
@json_option
@click.pass_context
def ls(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """List the tenant's live sandboxes (with --all, the stopped and failed ones too)."""
    c = context_of(ctx, as_json)
    found = Sandbox.list(url=c.url, api_key=c.api_key, states=None if show_all else LIVE_STATES)
    if c.as_json:
        for sandbox in found:
            c.emit(info_of(sandbox))
        return
    rows = [["ID", "STATE", "SIZE", "TEMPLATE", "EXPIRES"]]
    for sandbox in found:
        template = sandbox.template if isinstance(sandbox.template, str) else "-"
        rows.append([sandbox.id, str(sandbox.state), str(sandbox.size), template, str(sandbox.expires_at)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        click.echo(" ".join([*(cell.ljust(width) for cell, width in zip(row, widths)), row[-1]]))


@main.command()
@click.argument("sandbox_id")
@json_option
@click.pass_context
def get(ctx: click.Context, sandbox_id: str, as_json: bool) -> None:
    """Show one sandbox."""
    c = context_of(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        info = info_of(sandbox.info)
    if c.as_json:
        c.emit(info)
    else:
        for key, value in info.items():
            click.echo(f"{key}: {json.dumps(value) if isinstance(value, dict | list) else value}")


@main.command()
@click.argument("sandbox_id")
@click.option("--yes", is_flag=True, help="Do not ask.")
@json_option
@click.pass_context
def delete(ctx: click.Context, sandbox_id: str, yes: bool, as_json: bool) -> None:
    """Delete a sandbox."""
    c = context_of(ctx, as_json)
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("deleting needs --yes when there is no terminal to ask on")
        click.confirm(f"delete sandbox {sandbox_id}?", abort=True)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        sandbox.delete()
    if c.as_json:
        c.emit({"event": "deleted", "id": sandbox_id})
    else:
        c.progress(f"deleted {sandbox_id}")


@main.command()
@click.argument("sandbox_id")
@click.option("--limit", type=int, default=50, show_default=True)
@json_option
@click.pass_context
def history(ctx: click.Context, sandbox_id: str, limit: int, as_json: bool) -> None:
    """The sandbox's commands, newest first."""
    c = context_of(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        execs = sandbox.history(limit)
    for item in execs:
        if c.as_json:
            c.emit({k: v for k, v in item.to_dict().items() if k not in ("stdout", "stderr")})
        else:
            code = item.exit_code if isinstance(item.exit_code, int) else "-"
            click.echo(
                f"{item.id}  {item.created_at}  {item.state!s:<9} exit {code!s:<4} {common.shell_join(item.cmd)}"
            )


@main.command()
@click.argument("sandbox_id")
@json_option
@click.pass_context
def pause(ctx: click.Context, sandbox_id: str, as_json: bool) -> None:
    """Checkpoint a sandbox to its node's disk (any exec or file call resumes it)."""
    c = context_of(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        c.progress(f"pausing {sandbox_id} ...")
        info = info_of(sandbox.pause())
    if c.as_json:
        c.emit(info)
    else:
        click.echo(f"{sandbox_id} paused ({info.get('pause_bytes')} bytes)")


@main.command()
@click.argument("sandbox_id")
@json_option
@click.pass_context
def resume(ctx: click.Context, sandbox_id: str, as_json: bool) -> None:
    """Resume a paused sandbox."""
    c = context_of(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        info = info_of(sandbox.resume())
    if c.as_json:
        c.emit(info)
    else:
        click.echo(f"{sandbox_id} {info['state']}")


@main.command()
@click.argument("sandbox_id")
@click.option("--ttl", type=int, help="Seconds the new sandbox lives (default: the parent's TTL).")
@json_option
@click.pass_context
def fork(ctx: click.Context, sandbox_id: str, ttl: int | None, as_json: bool) -> None:
    """Start a new sandbox from a live snapshot of this one; prints its id."""
    c = context_of(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        child = sandbox.fork(ttl=ttl)
        child.owned = False  # it outlives this command
        with contextlib.closing(child):
            info = info_of(child.info)
    if c.as_json:
        c.emit(info)
    else:
        click.echo(info["id"])
