"""`sbx code`: Python run in a sandbox's execution context, its variables kept between calls."""

from __future__ import annotations

import contextlib
import dataclasses
import sys

import click

from .base import context_of, json_option, main

# How `sbx code` exits when the code did not end by itself, as `sbx exec` does for a command.
TIMED_OUT, LOST = 124, 125


@main.command()
@click.argument("sandbox_id")
@click.argument("code", required=False)
@click.option(
    "--context", "context_id", help="The context to run in (default: the sandbox's first live one, else a new one)."
)
@click.option("--new-context", is_flag=True, help="Start a new context for this run (its id goes to stderr).")
@click.option("--timeout", type=float, help="Seconds before the code is interrupted (the context goes on).")
@json_option
@click.pass_context
def code(
    ctx: click.Context,
    sandbox_id: str,
    code: str | None,
    context_id: str | None,
    new_context: bool,
    timeout: float | None,
    as_json: bool,
) -> None:
    """Run Python CODE (or what stdin gives) in a context of the sandbox: variables, imports and
    open files stay for the next `sbx code`. Prints what the code printed and the value of its
    last expression; an exception's traceback goes to stderr and the exit status is 1."""
    c = context_of(ctx, as_json)
    if code is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("give the code as an argument, or pipe it in")
        code = sys.stdin.read()
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        made = False
        if new_context:
            context_id, made = sandbox.create_context(), True
        elif context_id is None:
            context_id, made = sandbox.default_context()
        if made:
            c.progress(f"sbx: new context {context_id}")
        run = sandbox.run_code(code, context=context_id, timeout=timeout)
    if c.as_json:
        c.emit(dataclasses.asdict(run))
    else:
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.text is not None:
            sys.stdout.write(run.text + "\n")
        for data in run.results:
            shown = sorted(k for k in data if k != "text/plain")
            if shown:
                click.echo(f"sbx: a result also has {', '.join(shown)} (--json shows it)", err=True)
        if run.error is not None:
            sys.stderr.write(str(run.error))
        sys.stdout.flush()
        if run.context_lost:
            click.echo(f"sbx: the code did not stop after its deadline: context {context_id} is gone", err=True)
    if run.context_lost:
        sys.exit(LOST)
    if run.timed_out:
        sys.exit(TIMED_OUT)
    sys.exit(0 if run.ok else 1)
