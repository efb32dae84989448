"""The SDK through a proxy that breaks connections: a create whose answer is lost is sent again
and makes one sandbox; an output stream cut mid-way resumes where it was, losing nothing and
repeating nothing."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlparse

from airlock_sdk import AsyncSandbox

from tests.e2e.conftest import Airlock, Tenant


@dataclass
class Cut:
    """Break the next `times` connections whose request contains `request`: once the answer has
    carried `marker` `count` times (count 0: as soon as the answer starts, none of it passed on)."""

    request: bytes
    marker: bytes = b""
    count: int = 0
    times: int = 1
    done: int = 0


@dataclass
class BreakingProxy:
    upstream: tuple[str, int]
    cuts: list[Cut] = field(default_factory=list)
    port: int = 0

    async def _pipe_up(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: list[bytes]
    ) -> None:
        while data := await reader.read(65536):
            seen.append(data)
            writer.write(data)
            await writer.drain()
        writer.close()

    def _cut_for(self, seen: list[bytes]) -> Cut | None:
        sent = b"".join(seen)
        for cut in self.cuts:
            if cut.done < cut.times and cut.request in sent:
                return cut
        return None

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection(*self.upstream)
        seen: list[bytes] = []
        upward = asyncio.create_task(self._pipe_up(client_r, up_w, seen))
        carried = 0
        try:
            while data := await up_r.read(65536):
                cut = self._cut_for(seen)
                if cut is not None:
                    carried += data.count(cut.marker) if cut.marker else 0
                    if cut.count == 0 or carried >= cut.count:
                        if cut.count:
                            client_w.write(data)
                            await client_w.drain()
                        cut.done += 1
                        return
                client_w.write(data)
                await client_w.drain()
        finally:
            upward.cancel()
            for w in (client_w, up_w):
                w.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        server = await asyncio.start_server(self._serve, sock=sock)
        try:
            yield f"http://127.0.0.1:{self.port}"
        finally:
            server.close()


def proxy_for(airlock: Airlock) -> BreakingProxy:
    parsed = urlparse(airlock.server.url)
    return BreakingProxy((parsed.hostname or "127.0.0.1", parsed.port or 80))


async def sandbox_ids(airlock: Airlock, tenant: Tenant) -> list[str]:
    async with airlock.http(tenant.key) as http:
        return [s["id"] for s in (await http.get("/v1/sandboxes")).json()["items"]]


async def test_a_create_whose_answer_was_lost_is_sent_again_and_makes_one(
    airlock: Airlock, tenant: Tenant
) -> None:
    proxy = proxy_for(airlock)
    proxy.cuts.append(Cut(request=b"POST /v1/sandboxes HTTP"))
    async with proxy.running() as url:
        sandbox = await AsyncSandbox.create(url=url, api_key=tenant.key, ttl=600)
    try:
        tenant.sandboxes.append(sandbox.id)
        assert proxy.cuts[0].done == 1  # the first answer never reached the SDK
        assert await sandbox_ids(airlock, tenant) == [sandbox.id]
    finally:
        await sandbox.close()


async def test_an_exec_whose_answer_was_lost_runs_once(airlock: Airlock, tenant: Tenant) -> None:
    proxy = proxy_for(airlock)
    async with proxy.running() as url:
        sandbox = await AsyncSandbox.create(url=url, api_key=tenant.key, ttl=600)
        tenant.sandboxes.append(sandbox.id)
        try:
            proxy.cuts.append(Cut(request=b"/execs HTTP"))
            done = await sandbox.run("echo run >> /work/runs; wc -l < /work/runs")
            assert proxy.cuts[0].done == 1
            assert done.stdout.strip() == "1"  # the retry answered the first run, not a second
            assert (await sandbox.files.read("runs")) == b"run\n"
        finally:
            await sandbox.close()


async def test_an_output_stream_cut_midway_resumes_without_loss_or_repeats(
    airlock: Airlock, tenant: Tenant
) -> None:
    proxy = proxy_for(airlock)
    program = (
        "import time\nfor i in range(8):\n    print('tick', i, flush=True)\n    time.sleep(0.15)\n"
    )
    async with proxy.running() as url:
        sandbox = await AsyncSandbox.create(url=url, api_key=tenant.key, ttl=600)
        tenant.sandboxes.append(sandbox.id)
        try:
            await sandbox.files.write("ticks.py", program)
            proxy.cuts.append(Cut(request=b"/events HTTP", marker=b"tick", count=2, times=2))
            pieces: list[str] = []
            result = await sandbox.run(["python3", "ticks.py"], on_stdout=pieces.append)
            assert proxy.cuts[0].done == 2  # two connections were broken mid-stream
            want = "".join(f"tick {i}\n" for i in range(8))
            assert "".join(pieces) == want and result.stdout == want
            assert result.ok
        finally:
            await sandbox.close()
