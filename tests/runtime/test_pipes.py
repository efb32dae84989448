"""The pipes the runtime hands to the event loop (the exec agent's link, a `runsc exec`'s
stdio) are closed exactly once, under uvloop (what `airlock serve` runs) and under asyncio's
own loop. A second close takes the number from whichever thread was given it meanwhile:
before this was fixed, a thread running subprocesses beside the link churn below saw EBADF
within a few hundred pipes (and a network setup failed with it under load)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import Awaitable, Callable

import pytest
import uvloop

from service.runtime import execution
from service.runtime.gvisor.agent_link import AgentLink

PIPES = 3000


def _churn(open_and_close: Callable[[], Awaitable[None]], runner: Callable[..., None]) -> list:
    """Open and close pipes through the runtime's code in `runner`'s loop while another
    thread runs subprocesses (each a few pipes of its own); the errors that thread saw."""
    errors: list[OSError] = []
    stop = threading.Event()

    def subprocesses() -> None:
        while not stop.is_set():
            try:
                subprocess.run(["true"], capture_output=True, check=True)
            except OSError as exc:
                errors.append(exc)

    async def main() -> None:
        for _ in range(PIPES):
            await open_and_close()
            await asyncio.sleep(0)
            if errors:
                return

    thread = threading.Thread(target=subprocesses)
    thread.start()
    try:
        runner(main())
    finally:
        stop.set()
        thread.join()
    return errors


async def _agent_link() -> None:
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    link = await AgentLink.connect("alk-test", r1, w2)
    link.close("test")
    for fd in (w1, r2):
        os.close(fd)


async def _exec_stdio() -> None:
    r, w = os.pipe()
    _, reader = await execution._reader(r)
    _, writer = await execution._writer(w)
    reader.close()
    writer.close()


@pytest.mark.parametrize("opened", [_agent_link, _exec_stdio], ids=["agent-link", "exec-stdio"])
@pytest.mark.parametrize("runner", [uvloop.run, asyncio.run], ids=["uvloop", "asyncio"])
def test_pipes_are_closed_once(opened: Callable[[], Awaitable[None]], runner: Callable) -> None:
    before = len(os.listdir("/proc/self/fd"))
    errors = _churn(opened, runner)
    assert errors == [], f"another thread's fds were closed under it: {errors[:3]}"
    # And none is left open: what was opened was closed.
    assert len(os.listdir("/proc/self/fd")) <= before + 2, os.listdir("/proc/self/fd")
