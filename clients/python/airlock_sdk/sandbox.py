"""`Sandbox`: one sandbox, driven synchronously (`AsyncSandbox` in aio.py is the same, awaited).

with Sandbox.create(template="py", ttl=600) as sandbox:      # deleted when the block ends
    sandbox.files.write("task.py", "print(6 * 7)")
    result = sandbox.run(["python3", "task.py"])              # exit code as data
    print(result.exit_code, result.stdout)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx
from httpx_sse import connect_sse

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
from .files import Files
from .retries import retry

Output = Callable[[str], object]

# Scopes of `Sandbox.token()` unless asked otherwise: enough to work in this one sandbox.
WORK_SCOPES = ("sandboxes:read", "exec", "files:read", "files:write")


class Sandbox:
    def __init__(self, info: SandboxInfo, client: AuthenticatedClient, *, owned: bool = False) -> None:
        self.info = info
        self.client = client
        # A sandbox this object created is deleted when its `with` block ends; one it connected
        # to is only let go of (its connection closed).
        self.owned = owned
        self.files = Files(self)
        self._context: str | None = None  # the context `run_code` uses unless told another

    # -- making and finding ------------------------------------------------------------------

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
    ) -> Sandbox:
        """A new running sandbox. `network` is `"none"` (the default), `"open"`, or a policy
        `{"mode": "allowlist", "allow": [...]}`; `timeout` bounds each HTTP call (None: none)."""
        client = common.client_for(Config.resolve(url, api_key), timeout)
        body = common.sandbox_body(
            template=template, size=size, ttl=ttl, network=network, env=env, labels=labels, image=image
        )
        key = idempotency_key or common.new_key()
        try:
            info = retry(
                lambda: common.unwrap(create_sandbox.sync_detailed(client=client, body=body, idempotency_key=key))
            )
        except BaseException:
            client.get_httpx_client().close()
            raise
        return cls(info, client, owned=True)

    @classmethod
    def connect(
        cls,
        sandbox_id: str,
        *,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> Sandbox:
        """An existing sandbox, by id (a token bound to it is enough)."""
        client = common.client_for(Config.resolve(url, api_key), timeout)
        try:
            info = retry(lambda: common.unwrap(get_sandbox.sync_detailed(sandbox_id, client=client)))
        except BaseException:
            client.get_httpx_client().close()
            raise
        return cls(info, client)

    @staticmethod
    def list(
        *, url: str | None = None, api_key: str | None = None, states: Sequence[str] | None = None
    ) -> list[SandboxInfo]:
        """Every sandbox of the tenant (only those in `states`, if given), all pages."""
        client = common.client_for(Config.resolve(url, api_key), 30.0)
        found: list[SandboxInfo] = []
        cursor: str | None = None
        only = [check_state(s) for s in states] if states is not None else common.UNSET
        with client:
            while True:
                page = retry(
                    lambda c=cursor: common.unwrap(
                        list_sandboxes.sync_detailed(client=client, cursor=c or common.UNSET, limit=200, state=only)
                    )
                )
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

    def refresh(self) -> SandboxInfo:
        self.info = retry(lambda: common.unwrap(get_sandbox.sync_detailed(self.id, client=self.client)))
        return self.info

    # -- commands ----------------------------------------------------------------------------

    def run(
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
        """Run `cmd` to its end (a string goes through `sh -c`). With `on_stdout`/`on_stderr`
        the output reaches them as it is written; the result has it all either way."""
        streaming = on_stdout is not None or on_stderr is not None
        body = common.exec_body(
            cmd, timeout=timeout, env=env, secrets=secrets, cwd=cwd, user=user, stdin=stdin, wait=not streaming
        )
        key = idempotency_key or common.new_key()
        done: Exec = retry(
            lambda: common.unwrap(
                create_exec.sync_detailed(self.id, client=self.client, body=body, idempotency_key=key)
            )
        )
        if not streaming and done.finished_at:
            return ExecResult.from_exec(done)
        seen: list[OutputEvent] = []
        for event in self.events(done.id):
            seen.append(event)
            callback = on_stdout if event.kind == "stdout" else on_stderr if event.kind == "stderr" else None
            if callback is not None:
                callback(event.text)
        return common.result_of(done.id, seen)

    def start(
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
        """Start `cmd` without waiting; returns the exec's id (follow it with `events`). With
        `stdin_open` its stdin stays open for `write_stdin` until one closes it. With `tty` it
        runs under a terminal of `rows` x `cols` (24 x 80 by default; `resize` changes it),
        whose output, stderr included, arrives as `stdout`. `max_output_bytes` is how much of
        each of stdout and stderr is kept (1 MiB unless given, at most 8 MiB); past it the
        output is cut and the exit says so (`stdout_truncated`, `stderr_truncated`)."""
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
        key = common.new_key()
        started: Exec = retry(
            lambda: common.unwrap(
                create_exec.sync_detailed(self.id, client=self.client, body=body, idempotency_key=key)
            )
        )
        return started.id

    def write_stdin(self, exec_id: str, data: bytes | str = b"", *, close: bool = False) -> None:
        """Write to the stdin of an exec started with `stdin_open`; `close` ends it (EOF)."""
        try:
            errors.check(self.client.get_httpx_client().post(**common.stdin_request(self.id, exec_id, data, close)))
        except httpx.TransportError as exc:
            raise errors.TransportError(str(exc) or type(exc).__name__) from exc

    def resize(self, exec_id: str, rows: int, cols: int) -> None:
        """Resize the terminal of an exec started with `tty`."""
        body = TerminalSize(rows=rows, cols=cols)
        retry(lambda: common.unwrap(resize_exec_tty.sync_detailed(self.id, exec_id, client=self.client, body=body)))

    def stream(self, cmd: str | Sequence[str], **options: Any) -> Iterator[OutputEvent]:
        """`cmd`'s output as it comes (`stdout`/`stderr` events), then its `exit` event."""
        yield from self.events(self.start(cmd, **options))

    def events(self, exec_id: str) -> Iterator[OutputEvent]:
        """An exec's events from the start, resumed after the last one seen when the connection
        drops, ending with `exit`."""
        cursor = common.EventCursor(self.id, exec_id)
        http = self.client.get_httpx_client()
        while True:
            try:
                with connect_sse(http, "GET", cursor.url, headers=cursor.headers()) as source:
                    errors.check(source.response)
                    if source.response.status_code == 204:  # everything was delivered already
                        return
                    for sse in source.iter_sse():
                        event = cursor.take(sse.event, sse.data, sse.id)
                        if event is not None:
                            yield event
                            if event.kind == "exit":
                                return
            except httpx.TransportError as exc:
                cursor.dropped(exc)
                time.sleep(common.BACKOFF_S[min(cursor.drops, len(common.BACKOFF_S)) - 1])

    def get_exec(self, exec_id: str) -> ExecResult:
        return ExecResult.from_exec(
            retry(lambda: common.unwrap(get_exec.sync_detailed(self.id, exec_id, client=self.client)))
        )

    def exec_record(self, exec_id: str) -> Exec:
        """An exec's record as the service keeps it: its command, limits, state, outcome and
        the output stored so far (also after the sandbox has stopped)."""
        return retry(lambda: common.unwrap(get_exec.sync_detailed(self.id, exec_id, client=self.client)))

    def history(self, limit: int = 50) -> list[Exec]:
        """The sandbox's execs, newest first."""
        page = retry(lambda: common.unwrap(list_execs.sync_detailed(self.id, client=self.client, limit=limit)))
        return list(page.items)

    # -- credentials and lifetime ------------------------------------------------------------

    # -- code (execution contexts) -------------------------------------------------------------

    def create_context(
        self, *, cwd: str | None = None, env: Mapping[str, str] | None = None, user: str | None = None
    ) -> str:
        """A new Python interpreter in the sandbox, kept between runs; returns its id."""
        body = common.context_body(cwd, env, user)
        made = retry(lambda: common.unwrap(create_context.sync_detailed(self.id, client=self.client, body=body)))
        return str(made.id)

    def default_context(self) -> tuple[str, bool]:
        """The context to run in when none is named: the one this object's `run_code` already
        uses, else the sandbox's first live one (ready or busy), else a new one; returns its id
        and whether it was made now. From then on `run_code` without `context` runs there."""
        made = False
        if self._context is None:
            live = [c for c in self.contexts() if c["state"] != "gone"]
            made = not live
            self._context = self.create_context() if made else str(live[0]["id"])
        return self._context, made

    def run_code(self, code: str, *, context: str | None = None, timeout: float | None = None) -> CodeRun:
        """Run Python `code` in `context` (by default one this object starts on first use and
        keeps), after its earlier runs and with their variables. The answer holds what it
        printed, the last expression's value and figures (`results`, `text`), and the exception
        that ended it (`error`); `timeout` (60 s unless given) interrupts the code and keeps the
        context. It is sent once: a connection lost on the way is a TransportError, not a retry
        (the code may have run)."""
        if context is None:
            if self._context is None:
                self._context = self.create_context()
            context = self._context
        body = common.run_body(code, timeout)
        done = retry(
            lambda: common.unwrap(run_code.sync_detailed(self.id, context, client=self.client, body=body)),
            resend=False,
        )
        return CodeRun.from_run(done)

    def contexts(self) -> list[dict[str, Any]]:
        """The sandbox's contexts (id, state: ready, busy or gone, runs, created_at, …), oldest first."""
        page = retry(lambda: common.unwrap(list_contexts.sync_detailed(self.id, client=self.client)))
        return [item.to_dict() for item in page.items]

    def delete_context(self, context: str) -> None:
        """End a context and its interpreter."""
        retry(lambda: common.unwrap(delete_context.sync_detailed(self.id, context, client=self.client)))
        if context == self._context:
            self._context = None

    def token(self, scopes: Sequence[str] = WORK_SCOPES, ttl: int | None = None) -> str:
        """A short-lived token good for this sandbox only, with `scopes` (a subset of the
        caller's): what to hand an agent instead of the API key."""
        body = TokenCreate(scopes=list(scopes), sandbox_id=self.id)
        if ttl is not None:
            body.ttl_s = ttl
        grant = retry(lambda: common.unwrap(create_token.sync_detailed(client=self.client, body=body)))
        return grant.token

    def pause(self) -> SandboxInfo:
        """Checkpoint the sandbox to its node's disk; it holds no CPU or memory until resumed
        (any exec or file call resumes it first)."""
        self.info = retry(lambda: common.unwrap(pause_sandbox.sync_detailed(self.id, client=self.client)))
        return self.info

    def resume(self) -> SandboxInfo:
        self.info = retry(lambda: common.unwrap(resume_sandbox.sync_detailed(self.id, client=self.client)))
        return self.info

    def fork(self, *, ttl: int | None = None, labels: Mapping[str, str] | None = None) -> Sandbox:
        """A new sandbox from a live snapshot of this one (its files and memory now), deleted
        when its own `with` block ends. Not retried: a fork has no Idempotency-Key."""
        body = common.fork_body(ttl, labels)
        info = common.unwrap(fork_sandbox.sync_detailed(self.id, client=self.client, body=body))
        return Sandbox(info, self.client.with_headers({}), owned=True)

    def delete(self) -> None:
        """Delete the sandbox (a sandbox already gone is no error)."""
        try:
            retry(lambda: common.unwrap(delete_sandbox.sync_detailed(self.id, client=self.client)))
        except errors.NotFound:
            pass

    def close(self) -> None:
        self.client.get_httpx_client().close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.owned:
                self.delete()
        finally:
            self.close()
