"""`sbx`: Airlock sandboxes from a shell.

    id=$(sbx new --type small --ttl 600 --json | jq -r 'select(.event=="ready") | .id')
    sbx exec "$id" --timeout 60 -- python3 -c "$GENERATED_CODE"
    sbx delete "$id" --yes

The URL and credential come from `--url`/`--api-key`, `AIRLOCK_URL`/`AIRLOCK_API_KEY`, or the
config file (`AIRLOCK_CONFIG`, else ~/.config/airlock/config.json). `--json` makes every command
print JSON, one object per line; progress goes to stderr.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from airlock_client.api.templates import get_template, list_templates
from airlock_client.api.tokens import create_token
from airlock_client.models import TokenCreate

from . import _common as common
from . import errors
from .config import Config
from .sandbox import Sandbox

# How `sbx exec` exits when the command did not exit by itself (as timeout(1) and shells do).
OUTCOME_EXIT = {"timeout": 124, "killed": 137, "oom": 137, "failed": 125}


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


def _pairs(values: Iterable[str], what: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint=what)
        found[name] = value
    return found


def _json_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--json` on a subcommand as well as before it (`sbx --json ls` = `sbx ls --json`)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON, one object per line.")(fn)


def _ctx(ctx: click.Context, as_json: bool) -> Context:
    obj: Context = ctx.obj
    obj.as_json = obj.as_json or as_json
    return obj


def _info(sandbox: Any) -> dict[str, Any]:
    return {k: v for k, v in sandbox.to_dict().items() if v is not None}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="AIRLOCK_URL", help="The service (default: AIRLOCK_URL, the config file, or localhost).")
@click.option("--api-key", envvar="AIRLOCK_API_KEY", help="An API key or token (default: AIRLOCK_API_KEY).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON, one object per line.")
@click.pass_context
def main(ctx: click.Context, url: str | None, api_key: str | None, as_json: bool) -> None:
    """Airlock sandboxes from a shell."""
    ctx.obj = Context(url, api_key, as_json)


@main.command()
@click.option("--type", "--size", "size", type=click.Choice(["small", "medium", "large"]), help="Size.")
@click.option("--ttl", type=int, help="Seconds until the sandbox is deleted.")
@click.option("--template", help="Start from this template.")
@click.option("--network", help='none, open, or a JSON policy like \'{"mode": "allowlist", "allow": [...]}\'.')
@click.option("--env", "env", multiple=True, help="NAME=VALUE for every command (repeatable).")
@click.option("--label", "labels", multiple=True, help="NAME=VALUE label (repeatable).")
@_json_option
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
    c = _ctx(ctx, as_json)
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
        env=_pairs(env, "--env"),
        labels=_pairs(labels, "--label"),
        url=c.url,
        api_key=c.api_key,
    )
    took = round(time.monotonic() - started, 3)
    if c.as_json:
        c.emit({"event": "ready", "seconds": took, **_info(sandbox.info)})
    else:
        click.echo(sandbox.id)
        c.progress(f"ready in {took:.1f} s")
    sandbox.close()


@main.command(name="exec", context_settings={"ignore_unknown_options": True})
@click.argument("sandbox_id")
@click.option("--timeout", type=float, help="Seconds before the command's tree is killed.")
@click.option("--env", "env", multiple=True, help="NAME=VALUE (repeatable).")
@click.option("--secret", "secrets", multiple=True, help="NAME=VALUE, never stored, masked in output (repeatable).")
@click.option("--cwd", help="Working directory (default /work).")
@click.option("--user", help="uid[:gid] to run as.")
@_json_option
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def exec_(
    ctx: click.Context,
    sandbox_id: str,
    timeout: float | None,
    env: tuple[str, ...],
    secrets: tuple[str, ...],
    cwd: str | None,
    user: str | None,
    as_json: bool,
    cmd: tuple[str, ...],
) -> None:
    """Run CMD in a sandbox, streaming its output; exits with the command's exit code."""
    c = _ctx(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        exec_id = sandbox.start(
            list(cmd),
            timeout=timeout,
            env=_pairs(env, "--env"),
            secrets=_pairs(secrets, "--secret"),
            cwd=cwd,
            user=user,
        )
        end: dict[str, Any] = {}
        for event in sandbox.events(exec_id):
            if c.as_json:
                body = {"text": event.text} if event.kind != "exit" else event.exit
                c.emit({"event": event.kind, "exec_id": exec_id, **body})
            elif event.kind == "stdout":
                sys.stdout.write(event.text)
                sys.stdout.flush()
            elif event.kind == "stderr":
                sys.stderr.write(event.text)
                sys.stderr.flush()
            if event.kind == "exit":
                end = event.exit
    outcome = end.get("outcome")
    code = end.get("exit_code")
    if outcome == "exited" and isinstance(code, int):
        sys.exit(code)
    if not c.as_json:
        click.echo(f"sbx: the command ended {outcome}: {end.get('error') or ''}".rstrip(": "), err=True)
    sys.exit(OUTCOME_EXIT.get(str(outcome), 125))


@main.command(name="ls")
@_json_option
@click.pass_context
def ls(ctx: click.Context, as_json: bool) -> None:
    """List the tenant's sandboxes."""
    c = _ctx(ctx, as_json)
    found = Sandbox.list(url=c.url, api_key=c.api_key)
    if c.as_json:
        for sandbox in found:
            c.emit(_info(sandbox))
        return
    click.echo(f"{'ID':<30} {'STATE':<9} {'SIZE':<7} {'TEMPLATE':<16} EXPIRES")
    for sandbox in found:
        template = sandbox.template if isinstance(sandbox.template, str) else "-"
        click.echo(f"{sandbox.id:<30} {sandbox.state!s:<9} {sandbox.size:<7} {template:<16} {sandbox.expires_at}")


@main.command()
@click.argument("sandbox_id")
@_json_option
@click.pass_context
def get(ctx: click.Context, sandbox_id: str, as_json: bool) -> None:
    """Show one sandbox."""
    c = _ctx(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        info = _info(sandbox.info)
    if c.as_json:
        c.emit(info)
    else:
        for key, value in info.items():
            click.echo(f"{key}: {json.dumps(value) if isinstance(value, dict | list) else value}")


@main.command()
@click.argument("sandbox_id")
@click.option("--yes", is_flag=True, help="Do not ask.")
@_json_option
@click.pass_context
def delete(ctx: click.Context, sandbox_id: str, yes: bool, as_json: bool) -> None:
    """Delete a sandbox."""
    c = _ctx(ctx, as_json)
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


def _remote(spec: str) -> tuple[str, str] | None:
    """`ID:/path` (or `ID:relative/to/work`) → (id, path); a local path → None."""
    head, sep, tail = spec.partition(":")
    if sep and head and "/" not in head and not Path(spec).exists():
        return head, tail or "/work"
    return None


@main.command()
@click.argument("source")
@click.argument("target")
@_json_option
@click.pass_context
def cp(ctx: click.Context, source: str, target: str, as_json: bool) -> None:
    """Copy files or directories: `sbx cp ./dir ID:/work/dir`, `sbx cp ID:/work/out ./out`."""
    c = _ctx(ctx, as_json)
    src, dst = _remote(source), _remote(target)
    if (src is None) == (dst is None):
        raise click.UsageError("one side must be ID:/path in a sandbox, the other a local path")
    started = time.monotonic()
    if dst is not None:
        with contextlib.closing(c.sandbox(dst[0])) as sandbox:
            local = Path(source)
            if local.is_dir():
                c.progress(f"uploading {local}/ to {dst[0]}:{dst[1]}…")
                size = sandbox.files.upload_dir(local, dst[1])
                kind = "directory"
            else:
                size = sandbox.files.upload(local, dst[1])
                kind = "file"
    else:
        assert src is not None
        with contextlib.closing(c.sandbox(src[0])) as sandbox:
            local = Path(target)
            try:
                sandbox.files.list(src[1])
                is_dir = True
            except (errors.NotFound, errors.ValidationFailed, errors.Conflict):
                is_dir = False
            if is_dir:
                c.progress(f"downloading {src[0]}:{src[1]} to {local}/…")
                sandbox.files.download_dir(src[1], local)
                size = sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
                kind = "directory"
            else:
                if local.is_dir():
                    local = local / Path(src[1]).name
                size = sandbox.files.download(src[1], local)
                kind = "file"
    took = time.monotonic() - started
    if c.as_json:
        c.emit({"event": "copied", "kind": kind, "source": source, "target": target, "bytes": size})
    else:
        c.progress(f"copied {kind} {source} → {target}: {size} bytes in {took:.1f} s")


@main.command()
@click.argument("sandbox_id")
@click.option("--limit", type=int, default=50, show_default=True)
@_json_option
@click.pass_context
def history(ctx: click.Context, sandbox_id: str, limit: int, as_json: bool) -> None:
    """The sandbox's commands, newest first."""
    c = _ctx(ctx, as_json)
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
@click.option("--sandbox", "sandbox_id", help="Bind the token to this sandbox.")
@click.option("--scope", "scopes", multiple=True, help="A scope (repeatable; default: the key's own).")
@click.option("--ttl", type=int, help="Seconds the token lives (the tenant caps it).")
@_json_option
@click.pass_context
def token(ctx: click.Context, sandbox_id: str | None, scopes: tuple[str, ...], ttl: int | None, as_json: bool) -> None:
    """Mint a short-lived token from the API key (print it, or its grant with --json)."""
    c = _ctx(ctx, as_json)
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
@_json_option
@click.pass_context
def templates(ctx: click.Context, as_json: bool) -> None:
    """List the templates this tenant can start from."""
    c = _ctx(ctx, as_json)
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
@_json_option
@click.pass_context
def logs(ctx: click.Context, template: str, version: int | None, follow: bool, as_json: bool) -> None:
    """A template build's log."""
    c = _ctx(ctx, as_json)
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
        if "--json" in sys.argv[1:]:
            click.echo(json.dumps({"event": "error", "status": exc.status, "code": exc.code, "detail": exc.detail}))
        click.echo(f"sbx: {exc}", err=True)
        sys.exit(1)
