"""`sbx mcp`: the MCP server over stdio, for an agent on this machine."""

from __future__ import annotations

import logging

import anyio
import click

from .base import Context, main


@main.command("mcp")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Seconds one API call may take.")
@click.pass_context
def mcp_command(ctx: click.Context, timeout: float) -> None:
    """Serve Airlock's tools over MCP on stdin/stdout (needs airlock-client[mcp]).

    Every tool calls the API with this shell's credential: the agent can do what it can."""
    try:
        from .. import mcp
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    obj: Context = ctx.obj
    server = mcp.build_server(mcp.stdio_connect(obj.config(), timeout))
    # The MCP server logs at INFO on stderr, where httpx would add a line for every request
    # a tool makes; its warnings and errors still show.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    anyio.run(server.run_stdio_async)
