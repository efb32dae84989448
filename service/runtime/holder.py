"""The service's handle on the sandbox runtime: opened once, on first need.

A host where no runtime works still serves everything but sandboxes; those routes answer 503
`runtime_unavailable` (problems.py, the one mapping of runtime failures) with Retry-After
`RETRY_S`, the interval at which the holder tries to open the runtime again: asking sooner
would get the same answer. The runtime's whole diagnosis goes to the server's log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from .errors import RuntimeUnavailable
from .problems import RETRY_S, problem
from .protocol import SandboxRuntime

log = logging.getLogger("airlock.runtime")

__all__ = ["RETRY_S", "RuntimeHolder"]


class RuntimeHolder:
    def __init__(self, opener: Callable[[], Awaitable[SandboxRuntime]]) -> None:
        self._opener = opener
        self._runtime: SandboxRuntime | None = None
        self._failure: tuple[float, RuntimeUnavailable] | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def of(cls, runtime: SandboxRuntime) -> RuntimeHolder:
        holder = cls(_already(runtime))
        holder._runtime = runtime
        return holder

    @property
    def current(self) -> SandboxRuntime | None:
        return self._runtime

    async def get(self) -> SandboxRuntime:
        """The runtime; ServiceUnavailable (a 503 `runtime_unavailable`) while none works."""
        if self._runtime is not None:
            return self._runtime
        async with self._lock:
            if self._runtime is not None:
                return self._runtime
            if self._failure is not None and time.monotonic() - self._failure[0] < RETRY_S:
                raise problem(self._failure[1])
            try:
                self._runtime = await self._opener()
            except RuntimeUnavailable as exc:
                log.error("no sandbox runtime: %s", exc)
                self._failure = (time.monotonic(), exc)
                raise problem(exc) from exc
            return self._runtime

    async def close(self) -> None:
        if self._runtime is not None:
            await self._runtime.close()


def _already(runtime: SandboxRuntime) -> Callable[[], Awaitable[SandboxRuntime]]:
    async def opener() -> SandboxRuntime:
        return runtime

    return opener
