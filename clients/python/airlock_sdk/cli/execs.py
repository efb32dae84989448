"""`sbx exec`: a command in a sandbox, its output streamed, its exit code returned."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from .base import context_of, json_option, main, pairs

# How `sbx exec` exits when the command did not exit by itself (as timeout(1) and shells do).
OUTCOME_EXIT = {"timeout": 124, "killed": 137, "oom": 137, "failed": 125}


@main.command(name="exec", context_settings={"ignore_unknown_options": True})
@click.argument("sandbox_id")
@click.option("--timeout", type=float, help="Seconds before the command's tree is killed.")
@click.option("--env", "env", multiple=True, help="NAME=VALUE (repeatable).")
@click.option("--secret", "secrets", multiple=True, help="NAME=VALUE, never stored, masked in output (repeatable).")
@click.option("--cwd", help="Working directory (default /work).")
@click.option("--user", help="uid[:gid] to run as.")
@json_option
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
    c = context_of(ctx, as_json)
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        exec_id = sandbox.start(
            list(cmd),
            timeout=timeout,
            env=pairs(env, "--env"),
            secrets=pairs(secrets, "--secret"),
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
