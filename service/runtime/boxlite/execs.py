"""Execs in BoxLite boxes, through BoxLite's exec streams (execution.py supervises each)."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncIterable
from typing import Any

from ..errors import ExecNotFound, InvalidSpec
from ..paths import sandbox_path
from ..types import HELPER_PATH, ExecRequest, ExecResult, TtySize
from .core import Core, Sandbox
from .errors import typed_error
from .execution import BoxExecution


class Execs(Core):
    async def _native_exec(
        self,
        sandbox: Sandbox,
        argv: list[str],
        env: dict[str, str],
        user: str,
        limit_s: int,
        cwd: str,
        tty: TtySize | None = None,
    ) -> Any:
        """Start a process in the box once no snapshot holds it (the caller counts it); with
        `tty`, under BoxLite's pseudo-terminal, given that window before it reads anything."""
        await sandbox.ready.wait()
        try:
            native = await sandbox.box.exec(
                argv[0],
                argv[1:],
                list(env.items()) or None,
                tty is not None,
                "0:0" if user == "root" else user,
                limit_s,
                cwd,
            )
            if tty is not None:
                try:
                    await native.resize_tty(tty.rows, tty.cols)
                except Exception:
                    with contextlib.suppress(Exception):
                        await native.kill()
                    raise
            return native
        except Exception as exc:
            raise typed_error(exc, "exec", sandbox_id=sandbox.info.id) from exc

    async def _start(
        self,
        sandbox_id: str,
        request: ExecRequest,
        stdin: bytes | AsyncIterable[bytes] | None,
    ) -> BoxExecution:
        sandbox = self._sandbox(sandbox_id)
        running = sandbox.execs.get(request.exec_id or "")
        if running is not None and not running.done:
            raise InvalidSpec(f"exec id {request.exec_id!r} is in use")
        requested = time.monotonic()
        sandbox.starting += 1
        try:
            native = await self._native_exec(
                sandbox,
                request.argv,
                {"PATH": HELPER_PATH}
                if request.helper
                else {**sandbox.info.spec.env, **request.env},
                request.user or sandbox.info.spec.user,
                # BoxLite's own timeout is only a backstop behind our deadline watchdog.
                math.ceil(request.timeout_s) + 5,
                sandbox_path(request.cwd),
                request.tty,
            )
            execution = BoxExecution(native, request, stdin, requested)
            for done in [key for key, e in sandbox.execs.items() if e.done]:
                del sandbox.execs[done]  # finished execs are ExecNotFound for kill_exec anyway
            sandbox.execs[execution.id] = execution
        finally:
            sandbox.starting -= 1
        return execution

    async def exec(self, sandbox_id: str, request: ExecRequest) -> BoxExecution:
        if not request.argv:
            raise InvalidSpec("argv must not be empty")
        return await self._start(sandbox_id, request, request.stdin)

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        return await (await self.exec(sandbox_id, request)).wait()

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        sandbox = self._sandbox(sandbox_id)
        execution = sandbox.execs.get(exec_id)
        if execution is None or execution.done:
            raise ExecNotFound(exec_id)
        await execution.kill()

    async def tty_available(self, sandbox_id: str) -> bool:
        self._sandbox(sandbox_id)
        return True

    async def resize_exec(self, sandbox_id: str, exec_id: str, size: TtySize) -> None:
        sandbox = self._sandbox(sandbox_id)
        execution = sandbox.execs.get(exec_id)
        if execution is None or execution.done:
            raise ExecNotFound(exec_id)
        await execution.resize(size)
