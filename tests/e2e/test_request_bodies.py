"""Request bodies against a real `airlock serve`: an oversized body is refused as soon as its
size is known, never held in the server's memory, whoever sends it (anonymous or not) and
whatever content type it claims; uploads keep their own streamed cap."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import Airlock, Tenant

MIB = 1 << 20
FLOOD = 10  # requests at once
FLOOD_BYTES = 100 * MIB  # each


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    sent: int  # bytes of the body sent when the answer arrived
    total: int


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, Any]]:
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    raw = await reader.readexactly(length)
    return status, json.loads(raw) if raw else {}


async def send_body(
    port: int,
    path: str,
    total: int,
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    chunked: bool = False,
    content_type: str = "application/json",
    chunk: bytes | None = None,
) -> Answer:
    """Send `total` bytes as the body like a hostile client: all of it, whatever the server
    answers meanwhile. Records how much had been sent when the answer came."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Type: {content_type}"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    answer = asyncio.ensure_future(_read_answer(reader))
    block = chunk or b'{"scopes": ["' + b"a" * (MIB - 16) + b'"], '
    sent, sent_at_answer = 0, None
    try:
        while sent < total:
            part = block[: total - sent]
            writer.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
            await writer.drain()
            sent += len(part)
            # A server that drains the socket as fast as it is written leaves drain() nothing
            # to wait for: yield, so an answer already here is read before the next piece.
            await asyncio.sleep(0)
            if sent_at_answer is None and answer.done():
                sent_at_answer = sent
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    except ConnectionError:
        pass  # the server may stop listening once it has answered
    status, body = await answer
    writer.close()
    return Answer(status, body, sent if sent_at_answer is None else sent_at_answer, total)


class PeakRss:
    """The server process's peak resident memory over a block (VmHWM, reset at the start)."""

    def __init__(self, pid: int) -> None:
        self.proc = Path(f"/proc/{pid}")

    def _kib(self, field: str) -> int:
        for line in (self.proc / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {field} in {self.proc}/status")

    def __enter__(self) -> PeakRss:
        self.before = self._kib("VmRSS") * 1024
        (self.proc / "clear_refs").write_text("5")  # resets VmHWM to the current RSS
        return self

    def __exit__(self, *exc: object) -> None:
        self.growth = self._kib("VmHWM") * 1024 - self.before


async def poll_healthz(url: str, stop: asyncio.Event) -> list[tuple[int, float]]:
    """GET /healthz over and over until `stop`: (status, seconds) of each answer."""
    seen: list[tuple[int, float]] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        while not stop.is_set():
            start = time.monotonic()
            status = (await http.get("/healthz")).status_code
            seen.append((status, time.monotonic() - start))
            await asyncio.sleep(0.05)
    return seen


async def test_parallel_oversized_bodies_neither_fill_memory_nor_stall_the_server(
    airlock: Airlock, tenant: Tenant
) -> None:
    server = airlock.server
    assert server.proc is not None
    # Half anonymous with a declared length (refused before authentication, unread), half
    # authenticated and chunked (refused once the streamed bytes pass the route's limit).
    stop = asyncio.Event()
    health = asyncio.ensure_future(poll_healthz(server.url, stop))
    await asyncio.sleep(0.2)
    with PeakRss(server.proc.pid) as rss:
        answers = await asyncio.gather(
            *(
                send_body(server.port, "/v1/tokens", FLOOD_BYTES)
                if i % 2 == 0
                else send_body(
                    server.port,
                    "/v1/tokens",
                    FLOOD_BYTES,
                    chunked=True,
                    headers={"Authorization": f"Bearer {tenant.key}"},
                )
                for i in range(FLOOD)
            )
        )
        stop.set()
        polled = await health
    sent = sum(a.total for a in answers)
    latencies = sorted(s for _, s in polled)
    print(
        f"\n{FLOOD} x {FLOOD_BYTES // MIB} MiB: server peak RSS growth "
        f"{rss.growth / MIB:.1f} MiB for {sent / MIB:.0f} MiB sent; /healthz answered "
        f"{len(polled)} times, median {latencies[len(latencies) // 2] * 1000:.0f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms"
    )
    for a in answers:
        assert a.status == 413, a
        assert a.body["code"] == "payload_too_large"
        assert a.body["limit_bytes"] < a.total
        # Answered while the body was still coming, not after reading it all.
        assert a.sent < a.total, a
    assert polled and all(status == 200 for status, _ in polled), polled
    # What the server held is a small fraction of what it was sent.
    assert rss.growth < sent / 16, (rss.growth, sent)
    # The server still serves.
    async with airlock.http(tenant.key) as http:
        assert (await http.post("/v1/tokens", json={"ttl_s": 60})).status_code == 201


async def test_a_json_content_type_does_not_lift_the_upload_cap(
    airlock: Airlock, tenant: Tenant
) -> None:
    async with airlock.http(airlock.operator_key) as op:
        r = await op.patch(f"/v1/tenants/{tenant.id}", json={"quotas": {"max_upload_mib": 1}})
        assert r.status_code == 200, r.text
    sandbox = await airlock.sandbox(tenant)
    server = airlock.server
    assert server.proc is not None
    auth = {"Authorization": f"Bearer {tenant.key}"}
    path = f"/v1/sandboxes/{sandbox.id}/files/work/big.json"
    total = 64 * MIB
    with PeakRss(server.proc.pid) as rss:
        declared = await send_body(server.port, path, total, method="PUT", headers=auth)
        streamed = await send_body(
            server.port, path, total, method="PUT", headers=auth, chunked=True
        )
    for a in (declared, streamed):
        assert a.status == 413, a
        # The tenant's upload cap answered, not a JSON body limit.
        assert a.body["code"] == "payload_too_large"
        assert a.body["limit_bytes"] == 1 * MIB
        assert a.sent < a.total, a
    assert rss.growth < 2 * total / 16, (rss.growth, 2 * total)
    async with airlock.http(tenant.key) as http:
        assert (await http.get(path)).status_code == 404  # nothing left behind
        # Within the cap, a binary file claimed to be JSON is stored as it is: file content
        # is not a JSON document, so its NUL bytes are not refused.
        payload = b"\x00\\u0000" + secrets.token_bytes(4096) + b"\x00"
        r = await http.put(path, content=payload, headers={"Content-Type": "application/json"})
        assert r.status_code == 201, r.text
        assert (await http.get(path)).content == payload


async def test_nul_in_a_streamed_json_body_is_refused(airlock: Airlock, tenant: Tenant) -> None:
    server = airlock.server
    auth = {"Authorization": f"Bearer {tenant.key}"}
    before = await airlock.db.count("SELECT count(*) FROM api_keys WHERE tenant_id = $1", tenant.id)
    # The escape arrives in two chunks: the scan must see it across the boundary.
    body = json.dumps({"name": "a\x00b", "scopes": ["exec"]}).encode()
    cut = body.index(b"\\u0000") + 3
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        b"POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: " + auth["Authorization"].encode() + b"\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    for part in (body[:cut], body[cut:]):
        writer.write(b"%x\r\n%s\r\n" % (len(part), part))
        await writer.drain()
        await asyncio.sleep(0.2)
    writer.write(b"0\r\n\r\n")
    status, problem = await _read_answer(reader)
    writer.close()
    assert status == 422, problem
    assert problem["code"] == "validation_failed"
    after = await airlock.db.count("SELECT count(*) FROM api_keys WHERE tenant_id = $1", tenant.id)
    assert after == before
