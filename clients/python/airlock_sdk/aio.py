"""`AsyncSandbox`: `Sandbox` for asyncio, the same methods awaited.

async with AsyncSandbox.create(ttl=600) as sandbox:      # deleted when the block ends
    result = await sandbox.run("echo hi")

sandbox = await AsyncSandbox.create(ttl=600)             # or kept, and deleted when one says
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from airlock_client import AuthenticatedClient
from airlock_client.api.contexts import create_context, delete_context, list_contexts, run_code
from airlock_client.api.execs import create_exec, get_exec, list_execs, resize_exec_tty
from airlock_client.api.sandboxes import (
    create_sandbox,
    delete_sandbox,
    fork_sandbox,
    get_sandbox,
    list_sandboxes,
    pause_sandbox,
    resume_sandbox,
)
from airlock_client.api.tokens import create_token
from airlock_client.models import Exec, TerminalSize, TokenCreate
from airlock_client.models import Sandbox as SandboxInfo
from airlock_client.models.state import check_state

from . import _common as common
from . import errors
from ._common import CodeRun, ExecResult, OutputEvent
from .config import Config
from .files import AsyncFiles
from .retries import aretry
from .sandbox import WORK_SCOPES, Output


class Creating(Awaitable["AsyncSandbox"]):
    """A sandbox on its way: awaited, the new `AsyncSandbox`; opened with `async with`, the
    same, deleted when the block ends (as `with Sandbox.create(...)` does). Nothing is sent
    before one of the two."""

    def __init__(self, make: Callable[[], Awaitable[AsyncSandbox]]) -> None:
        self._make = make
        self._sandbox: AsyncSandbox | None = None

    def __await__(self) -> Generator[Any, None, AsyncSandbox]:
        return self._make().__await__()

    async def __aenter__(self) -> AsyncSandbox:
        self._sandbox = await self._make()
        return await self._sandbox.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._sandbox is not None:
            await self._sandbox.__aexit__(kind, exc, tb)


class AsyncSandbox:
    def __init__(self, info: SandboxInfo, client: AuthenticatedClient, *, owned: bool = False) -> None:
        self.info = info
        self.client = client
        # A sandbox this object created is deleted when its `with` block ends; one it connected
        # to is only let go of (its connection closed).
        self.owned = owned
        self.files = AsyncFiles(self)
        self._context: str | None = None  # the context `run_code` uses unless told another

    @classmethod
    def create(
        cls,
        *,
        template: str | None = None,
        size: str | None = None,
        ttl: int | None = None,
        network: str | Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        image: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
    ) -> Creating:
        """A new running sandbox: `await` it, or open it with `async with` to have it deleted
        when the block ends. The options are `Sandbox.create`'s."""

        async def make() -> AsyncSandbox:
            client = common.client_for(Config.resolve(url, api_key), timeout)
            body = common.sandbox_body(
                template=template, size=size, ttl=ttl, network=network, env=env, labels=labels, image=image
            )
            key = idempotency_key or common.new_key()

            async def call() -> SandboxInfo:
                answer = await create_sandbox.asyncio_detailed(client=client, body=body, idempotency_key=key)
                return common.unwrap(answer)

            try:
                info = await aretry(call)
            except BaseException:
                await client.get_async_httpx_client().aclose()
                raise
            return cls(info, client, owned=True)

        return Creating(make)

    @classmethod
    async def connect(
        cls,
        sandbox_id: str,
        *,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> AsyncSandbox:
        client = common.client_for(Config.resolve(url, api_key), timeout)

        async def call() -> SandboxInfo:
            return common.unwrap(await get_sandbox.asyncio_detailed(sandbox_id, client=client))

        try:
            info = await aretry(call)
        except BaseException:
            await client.get_async_httpx_client().aclose()
            raise
        return cls(info, client)

    @staticmethod
    async def list(
        *, url: str | None = None, api_key: str | None = None, states: Sequence[str] | None = None
    ) -> list[SandboxInfo]:
        """`Sandbox.list`, awaited."""
        client = common.client_for(Config.resolve(url, api_key), 30.0)
        found: list[SandboxInfo] = []
        cursor: str | None = None
        only = [check_state(s) for s in states] if states is not None else common.UNSET
        async with client:
            while True:

                async def call(c: str | None = cursor) -> Any:
                    answer = await list_sandboxes.asyncio_detailed(
                        client=client, cursor=c or common.UNSET, limit=200, state=only
                    )
                    return common.unwrap(answer)

                page = await aretry(call)
                found.extend(page.items)
                cursor = page.next_cursor if isinstance(page.next_cursor, str) else None
                if not cursor:
                    return found

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def state(self) -> str:
        return str(self.info.state)

    async def _send(self, call: Callable[..., Awaitable[Any]], *args: Any, **named: Any) -> Any:
        """The answer of a call of the generated client on this sandbox, unwrapped and retried."""

        async def send() -> Any:
            return common.unwrap(await call(self.id, *args, client=self.client, **named))

        return await aretry(send)

    async def _update(self, call: Callable[..., Awaitable[Any]]) -> SandboxInfo:
        self.info = await self._send(call)
        return self.info

    async def refresh(self) -> SandboxInfo:
        return await self._update(get_sandbox.asyncio_detailed)

    async def _create_exec(self, body: Any, key: str) -> Exec:
        async def call() -> Exec:
            answer = await create_exec.asyncio_detailed(self.id, client=self.client, body=body, idempotency_key=key)
            return common.unwrap(answer)

        return await aretry(call)

    async def run(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        cwd: str | None = None,
        user: str | None = None,
        stdin: str | None = None,
        on_stdout: Output | None = None,
        on_stderr: Output | None = None,
        idempotency_key: str | None = None,
    ) -> ExecResult:
        streaming = on_stdout is not None or on_stderr is not None
        body = common.exec_body(
            cmd, timeout=timeout, env=env, secrets=secrets, cwd=cwd, user=user, stdin=stdin, wait=not streaming
        )
        done = await self._create_exec(body, idempotency_key or common.new_key())
        if not streaming and done.finished_at:
            return ExecResult.from_exec(done)
        seen: list[OutputEvent] = []
        async for event in self.events(done.id):
            seen.append(event)
            callback = on_stdout if event.kind == "stdout" else on_stderr if event.kind == "stderr" else None
            if callback is not None:
                callback(event.text)
        return common.result_of(done.id, seen)

    async def start(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        cwd: str | None = None,
        user: str | None = None,
        stdin: str | None = None,
        stdin_open: bool = False,
        tty: bool = False,
        rows: int | None = None,
        cols: int | None = None,
        max_output_bytes: int | None = None,
    ) -> str:
        """`Sandbox.start`, awaited."""
        body = common.exec_body(
            cmd,
            timeout=timeout,
            env=env,
            secrets=secrets,
            cwd=cwd,
            user=user,
            stdin=stdin,
            wait=False,
            stdin_open=stdin_open,
            tty=tty,
            rows=rows,
            cols=cols,
            max_output_bytes=max_output_bytes,
        )
        return (await self._create_exec(body, common.new_key())).id

    async def write_stdin(self, exec_id: str, data: bytes | str = b"", *, close: bool = False) -> None:
        """Write to the stdin of an exec started with `stdin_open`; `close` ends it (EOF)."""
        http = self.client.get_async_httpx_client()
        try:
            await errors.acheck(await http.post(**common.stdin_request(self.id, exec_id, data, close)))
        except httpx.TransportError as exc:
            raise errors.TransportError(str(exc) or type(exc).__name__) from exc

    async def resize(self, exec_id: str, rows: int, cols: int) -> None:
        """Resize the terminal of an exec started with `tty`."""
        body = TerminalSize(rows=rows, cols=cols)

        async def call() -> TerminalSize:
            return common.unwrap(
                await resize_exec_tty.asyncio_detailed(self.id, exec_id, client=self.client, body=body)
            )

        await aretry(call)

    async def stream(self, cmd: str | Sequence[str], **options: Any) -> AsyncIterator[OutputEvent]:
        async for event in self.events(await self.start(cmd, **options)):
            yield event

    async def events(self, exec_id: str) -> AsyncIterator[OutputEvent]:
        cursor = common.EventCursor(self.id, exec_id)
        http = self.client.get_async_httpx_client()
        while True:
            try:
                async with aconnect_sse(http, "GET", cursor.url, headers=cursor.headers()) as source:
                    await errors.acheck(source.response)
                    if source.response.status_code == 204:
                        return
                    async for sse in source.aiter_sse():
                        event = cursor.take(sse.event, sse.data, sse.id)
                        if event is not None:
                            yield event
                            if event.kind == "exit":
                                return
            except httpx.TransportError as exc:
                cursor.dropped(exc)
                await asyncio.sleep(common.BACKOFF_S[min(cursor.drops, len(common.BACKOFF_S)) - 1])

    async def get_exec(self, exec_id: str) -> ExecResult:
        return ExecResult.from_exec(await self.exec_record(exec_id))

    async def exec_record(self, exec_id: str) -> Exec:
        """`Sandbox.exec_record`, awaited."""

        return await self._send(get_exec.asyncio_detailed, exec_id)

    async def history(self, limit: int = 50) -> list[Exec]:
        return list((await self._send(list_execs.asyncio_detailed, limit=limit)).items)

    # -- code (execution contexts) -------------------------------------------------------------

    async def create_context(
        self, *, cwd: str | None = None, env: Mapping[str, str] | None = None, user: str | None = None
    ) -> str:
        """A new Python interpreter in the sandbox, kept between runs; returns its id."""
        body = common.context_body(cwd, env, user)
        return str((await self._send(create_context.asyncio_detailed, body=body)).id)

    async def default_context(self) -> tuple[str, bool]:
        """`Sandbox.default_context`, awaited."""
        made = False
        if self._context is None:
            live = [c for c in await self.contexts() if c["state"] != "gone"]
            made = not live
            self._context = await self.create_context() if made else str(live[0]["id"])
        return self._context, made

    async def run_code(self, code: str, *, context: str | None = None, timeout: float | None = None) -> CodeRun:
        """`Sandbox.run_code`, awaited."""
        if context is None:
            if self._context is None:
                self._context = await self.create_context()
            context = self._context
        body = common.run_body(code, timeout)
        chosen = context

        async def call() -> Any:
            return common.unwrap(await run_code.asyncio_detailed(self.id, chosen, client=self.client, body=body))

        return CodeRun.from_run(await aretry(call, resend=False))

    async def contexts(self) -> list[dict[str, Any]]:
        """The sandbox's contexts (id, state: ready, busy or gone, runs, created_at, …), oldest first."""
        return [item.to_dict() for item in (await self._send(list_contexts.asyncio_detailed)).items]

    async def delete_context(self, context: str) -> None:
        """End a context and its interpreter."""
        await self._send(delete_context.asyncio_detailed, context)
        if context == self._context:
            self._context = None

    async def token(self, scopes: Sequence[str] = WORK_SCOPES, ttl: int | None = None) -> str:
        body = TokenCreate(scopes=list(scopes), sandbox_id=self.id)
        if ttl is not None:
            body.ttl_s = ttl

        async def call() -> Any:
            return common.unwrap(await create_token.asyncio_detailed(client=self.client, body=body))

        return (await aretry(call)).token

    async def pause(self) -> SandboxInfo:
        return await self._update(pause_sandbox.asyncio_detailed)

    async def resume(self) -> SandboxInfo:
        return await self._update(resume_sandbox.asyncio_detailed)

    async def fork(self, *, ttl: int | None = None, labels: Mapping[str, str] | None = None) -> AsyncSandbox:
        body = common.fork_body(ttl, labels)  # not retried: a fork has no Idempotency-Key
        answer = await fork_sandbox.asyncio_detailed(self.id, client=self.client, body=body)
        return AsyncSandbox(common.unwrap(answer), self.client.with_headers({}), owned=True)

    async def delete(self) -> None:
        try:
            await self._send(delete_sandbox.asyncio_detailed)
        except errors.NotFound:
            pass

    async def close(self) -> None:
        await self.client.get_async_httpx_client().aclose()

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self.owned:
                await self.delete()
        finally:
            await self.close()
