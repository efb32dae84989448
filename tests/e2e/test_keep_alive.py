"""An idle connection outlives a client's own keep-alive: httpx keeps one 5 s for reuse, and a
request it sends on one idle that long must be answered, not met by the server closing it
(which the client sees as a ReadError with nothing answered)."""

from __future__ import annotations

import asyncio
import http.client
import time

from tests.e2e.conftest import Airlock

IDLE_S = 6.0  # past httpx's 5 s, and uvicorn's own default


def _twice_on_one_connection(port: int) -> list[int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        first = conn.getresponse()
        first.read()
        sock = conn.sock
        time.sleep(IDLE_S)
        conn.request("GET", "/healthz")  # on the same socket: http.client reopens only if closed
        assert conn.sock is sock
        second = conn.getresponse()  # RemoteDisconnected if the server closed it meanwhile
        second.read()
        return [first.status, second.status]
    finally:
        conn.close()


async def test_a_connection_idle_past_a_clients_keep_alive_is_still_served(
    airlock: Airlock,
) -> None:
    statuses = await asyncio.to_thread(_twice_on_one_connection, airlock.server.port)
    assert statuses == [200, 200]
