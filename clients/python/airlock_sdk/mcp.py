"""Airlock's sandboxes as MCP tools, for an agent.

`sbx mcp` serves them over stdio with the credential of the shell (`AIRLOCK_URL`,
`AIRLOCK_API_KEY`); `airlock serve` mounts the same tools at `/mcp` (streamable HTTP), where each
call carries the caller's own bearer credential. Either way every tool is one or more calls of
the REST API made with that credential, so scopes, quotas and the audit log apply exactly as
they do to REST. A refused or failed call comes back as a tool error naming the problem's
`code`; a command that exits non-zero is a result, not an error.

Needs the `mcp` extra: `pip install 'airlock-client[mcp]'`.
"""

from __future__ import annotations

import base64
import difflib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations
except ImportError as exc:  # pragma: no cover (depends on the installation)
    raise ImportError("the MCP server needs the mcp extra: pip install 'airlock-client[mcp]'") from exc

from airlock_client import AuthenticatedClient
from airlock_client.api.reviews import create_review, get_review
from airlock_client.api.sandboxes import create_sandbox, delete_sandbox, get_sandbox
from airlock_client.models import ReviewCreate

from . import _common as common
from . import errors
from .aio import AsyncSandbox
from .config import Config

# The REST client for one tool call, made from the call's context (its headers on HTTP).
Connect = Callable[[Context], AbstractAsyncContextManager[AuthenticatedClient]]

INSTRUCTIONS = (
    "Run untrusted code in disposable Airlock sandboxes. Create a sandbox, then run commands or "
    "Python code in it and read and write its files (relative paths are under /work); delete it "
    "when done, or let its ttl end it. A command that exits non-zero is a result with its "
    "exit_code, not an error."
)
# A file read back through a tool is at most this big: it must not flood the model's context,
# nor (over /mcp, where the answer is held whole) the API's memory.
MAX_READ_BYTES = 1 << 20

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)


def stdio_connect(config: Config, timeout: float = 300.0) -> Connect:
    """Every call with one credential: `sbx mcp`'s, from its flags, environment or config file."""

    @asynccontextmanager
    async def connect(_: Context) -> AsyncIterator[AuthenticatedClient]:
        client = common.client_for(config, timeout)
        try:
            yield client
        finally:
            await client.get_async_httpx_client().aclose()

    return connect


class _StrictServer(MCPServer):
    """Tools that refuse an argument they do not take, where the MCP server would drop it and
    run with the default (`ttl` for `ttl_s`: a sandbox with the default lifetime)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = next((t for t in await self.list_tools() if t.name == name), None)
        if tool is not None:
            taken = list(tool.input_schema.get("properties", {}))
            unknown = [key for key in arguments if key not in taken]
            if unknown:
                raise ToolError(_unknown_arguments(name, unknown, taken))
        return await super().call_tool(name, arguments, context)


def _unknown_arguments(tool: str, unknown: list[str], taken: list[str]) -> str:
    named = []
    for key in unknown:
        close = difflib.get_close_matches(key, taken, n=1, cutoff=0.6)
        named.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
    what = "argument" if len(unknown) == 1 else "arguments"
    return f"Error executing tool {tool}: unknown {what} {', '.join(named)}; it takes {', '.join(taken)}"


def build_server(connect: Connect) -> MCPServer:
    """The tools, each calling the REST API through `connect`."""
    server = _StrictServer("airlock", instructions=INSTRUCTIONS)

    @asynccontextmanager
    async def api(ctx: Context) -> AsyncIterator[AuthenticatedClient]:
        """The REST client for this call, with the API's problems turned into tool errors."""
        try:
            async with connect(ctx) as client:
                yield client
        except errors.AirlockError as exc:
            raise ToolError(str(exc)) from exc

    async def sandbox(client: AuthenticatedClient, sandbox_id: str) -> AsyncSandbox:
        info = common.unwrap(await get_sandbox.asyncio_detailed(sandbox_id, client=client))
        return AsyncSandbox(info, client)

    @server.tool(name="create_sandbox")
    async def create_sandbox_tool(
        ctx: Context,
        template: str | None = None,
        size: Literal["small", "medium", "large"] | None = None,
        ttl_s: int | None = None,
        network: Literal["none", "allowlist", "open"] | None = None,
        allow: list[str] | None = None,
    ) -> dict[str, Any]:
        """Create a sandbox (from a template, else the default image) and wait until it runs.

        ttl_s: seconds it lives before it is destroyed. network: "none" (the default: no network
        at all), "allowlist" (only the `allow` entries, such as "pypi.org:443") or "open" (where
        the operator allows it)."""
        policy = None if network is None else {"mode": network, "allow": allow or []}
        body = common.sandbox_body(
            template=template, size=size, ttl=ttl_s, network=policy, env=None, labels=None, image=None
        )
        async with api(ctx) as client:
            answer = await create_sandbox.asyncio_detailed(client=client, body=body, idempotency_key=common.new_key())
            return _sandbox(common.unwrap(answer))

    @server.tool(name="delete_sandbox", annotations=ToolAnnotations(destructive_hint=True))
    async def delete_sandbox_tool(ctx: Context, sandbox_id: str) -> dict[str, Any]:
        """Destroy a sandbox and everything in it."""
        async with api(ctx) as client:
            common.unwrap(await delete_sandbox.asyncio_detailed(sandbox_id, client=client))
        return {"id": sandbox_id, "deleted": True}

    @server.tool(name="get_sandbox", annotations=_READ_ONLY)
    async def get_sandbox_tool(ctx: Context, sandbox_id: str) -> dict[str, Any]:
        """A sandbox's state, size, network and when it expires."""
        async with api(ctx) as client:
            return _sandbox((await sandbox(client, sandbox_id)).info)

    @server.tool()
    async def run_command(
        ctx: Context,
        sandbox_id: str,
        command: str | list[str],
        cwd: str = "/work",
        timeout_s: float = 60.0,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> dict[str, Any]:
        """Run a command in a sandbox and wait for it: a string runs in `sh -c`, a list as argv.
        Answers its exit_code, outcome (exited, timeout, oom, killed) and its output."""
        async with api(ctx) as client:
            box = await sandbox(client, sandbox_id)
            return _result(await box.run(command, cwd=cwd, timeout=timeout_s, env=env, stdin=stdin))

    @server.tool()
    async def run_python(ctx: Context, sandbox_id: str, code: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """Run Python 3 code in a sandbox (`python3 -c code`, in /work) and wait for it."""
        async with api(ctx) as client:
            box = await sandbox(client, sandbox_id)
            return _result(await box.run(["python3", "-c", code], timeout=timeout_s))

    @server.tool()
    async def run_code(
        ctx: Context, sandbox_id: str, code: str, context_id: str | None = None, timeout_s: float = 60.0
    ) -> dict[str, Any]:
        """Run Python code in an execution context of a sandbox: a Python interpreter kept between
        calls, so variables, imports and open files stay. Without context_id it runs in the
        sandbox's first live context, or a new one; the answer names the context. Answers what
        the code printed, the value of its last expression (`result`), and the exception that
        ended it (`error`, with its traceback). timeout_s interrupts the code; the context goes on."""
        async with api(ctx) as client:
            box = await sandbox(client, sandbox_id)
            if context_id is None:
                context_id, _ = await box.default_context()
            return _code_run(await box.run_code(code, context=context_id, timeout=timeout_s))

    @server.tool()
    async def write_file(
        ctx: Context, sandbox_id: str, path: str, content: str, encoding: Literal["utf-8", "base64"] = "utf-8"
    ) -> dict[str, Any]:
        """Write a file in a sandbox (parents made, replaced if it exists). `content` is text,
        or base64 with encoding="base64" for bytes."""
        data = base64.b64decode(content, validate=True) if encoding == "base64" else content.encode()
        async with api(ctx) as client:
            size = await (await sandbox(client, sandbox_id)).files.write(path, data)
        return {"path": common.remote_path(path), "size": size}

    @server.tool(annotations=_READ_ONLY)
    async def read_file(ctx: Context, sandbox_id: str, path: str) -> dict[str, Any]:
        """Read a file of at most 1 MiB from a sandbox: text when it is UTF-8, else base64.
        For larger files, run a command (head, tail, grep) instead."""
        where = common.remote_path(path)
        async with api(ctx) as client:
            box = await sandbox(client, sandbox_id)
            # The service reads no more than the cap, whatever the path turns out to be (a link
            # to a big file, a device, a file that grows): over /mcp the answer is held whole.
            try:
                data = await box.files.read(where, max_bytes=MAX_READ_BYTES)
            except errors.FileTooLarge as exc:
                raise ToolError(_too_large(where, exc)) from exc
        try:
            content, encoding = data.decode(), "utf-8"
        except UnicodeDecodeError:
            content, encoding = base64.b64encode(data).decode(), "base64"
        return {"path": where, "size": len(data), "encoding": encoding, "content": content}

    @server.tool(annotations=_READ_ONLY)
    async def list_files(ctx: Context, sandbox_id: str, dir: str = "/work") -> list[dict[str, Any]]:  # noqa: A002
        """The entries of a directory in a sandbox: name, type, size, mode."""
        async with api(ctx) as client:
            entries = await (await sandbox(client, sandbox_id)).files.list(dir)
        return [entry.to_dict() for entry in entries]

    @server.tool()
    async def start_review(
        ctx: Context,
        repo: str,
        head: str,
        base: str = "main",
        test: list[str] | None = None,
        install: list[str] | None = None,
        template: str | None = None,
    ) -> dict[str, Any]:
        """Review a pull request: fetch `repo` at `head`, run its tests against `base` in a fresh
        sandbox and ask the model for a verdict. Answers the review's id; `get_review` follows it."""
        body = ReviewCreate(repo=repo, head=head, base=base)
        if test:
            body.test = test
        if install:
            body.install = install
        if template:
            body.template = template
        async with api(ctx) as client:
            answer = await create_review.asyncio_detailed(client=client, body=body, idempotency_key=common.new_key())
            return common.unwrap(answer).to_dict()

    @server.tool(name="get_review", annotations=_READ_ONLY)
    async def get_review_tool(ctx: Context, review_id: str) -> dict[str, Any]:
        """A review's state and, once it is done, its verdict and the test output."""
        async with api(ctx) as client:
            return common.unwrap(await get_review.asyncio_detailed(review_id, client=client)).to_dict()

    return server


def _too_large(where: str, exc: errors.FileTooLarge) -> str:
    size = exc.problem.get("size")
    what = f"is {size} bytes" if isinstance(size, int) else "gives more bytes than that"
    return (
        f"file_too_large: {where} {what}, more than read_file's {MAX_READ_BYTES}: read parts of "
        "it with run_command (head -c, tail, grep)"
    )


def _sandbox(info: Any) -> dict[str, Any]:
    data = info.to_dict()
    keep = ("id", "state", "size", "template", "network", "ttl_s", "expires_at", "created_at", "error")
    return {key: data[key] for key in keep if key in data}


def _result(done: common.ExecResult) -> dict[str, Any]:
    return {
        "exit_code": done.exit_code,
        "outcome": done.outcome,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "stdout_truncated": done.stdout_truncated,
        "stderr_truncated": done.stderr_truncated,
        "duration_ms": done.duration_ms,
        "exec_id": done.id,
    }


def _code_run(run: common.CodeRun) -> dict[str, Any]:
    """A run for a model: its text, and of its rich results only which kinds they were (an image
    as base64 would fill the model's context)."""
    return {
        "context_id": run.context_id,
        "ok": run.ok,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "result": run.text,
        "other_results": [sorted(k for k in data if k != "text/plain") for data in run.results if len(data) > 1],
        "error": None if run.error is None else str(run.error),
        "timed_out": run.timed_out,
        "context_lost": run.context_lost,
        "execution_count": run.execution_count,
    }
