"""A secret given to one exec stays masked after the server's process restarts (a deploy: the
sandbox and what runs in it outlive it and are adopted again). A later exec without secrets
that prints `/proc/*/environ`, where a process the first exec left behind still holds it, sees
`***` in its answer and its stored record; so does an exec in a fork made after the restart
that prints the file the first exec wrote it to. What the server keeps to know this is sealed:
the secret is nowhere in its rows."""

from __future__ import annotations

import secrets
import sqlite3

import pytest

from tests.conftest import database_kind
from tests.e2e.conftest import Airlock, Tenant, run_exec

pytestmark = pytest.mark.sqlite

DUMP_ENVIRON = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'"
LEAVE_IT = 'echo "RST_SECRET=$RST_SECRET" > /tmp/kept; nohup sleep 600 >/dev/null 2>&1 &'

HOLDS_IT = "grep -ls RST_SECRET /proc/[0-9]*/environ 2>/dev/null | wc -l"
KEPT = "SELECT sandbox_id, tenant_id, key_id, nonce, ciphertext FROM sandbox_secret_values"


async def kept_rows(site: Airlock, sandbox_ids: list[str]) -> list[tuple[object, ...]]:
    """The server's rows of the secret values given to these sandboxes, read with SQL."""
    if database_kind() == "sqlite":
        with sqlite3.connect(site.server.state_dir / "airlock.db") as conn:
            marks = ", ".join("?" for _ in sandbox_ids)
            return conn.execute(f"{KEPT} WHERE sandbox_id IN ({marks})", sandbox_ids).fetchall()
    rows = await site.db.fetch(f"{KEPT} WHERE sandbox_id = ANY($1::varchar[])", sandbox_ids)
    return [tuple(row.values()) for row in rows]


def shows(text: str, canary: str) -> bool:
    return canary in text or canary[:16] in text


async def restart(site: Airlock) -> None:
    site.server.stop()
    site.server.start()
    await site.server.wait_ready()


async def shows_masked(
    site: Airlock, tenant: Tenant, sandbox_id: str, canary: str, command: str
) -> None:
    """An exec without secrets prints where the secret is (`command`): masked, in the answer
    and in the stored record."""
    _, dumped = await run_exec(tenant.client, sandbox_id, cmd=["sh", "-c", command])
    assert dumped is not None and dumped.exit_code == 0, dumped
    assert "RST_SECRET=***" in dumped.stdout, dumped.stdout
    assert not shows(dumped.stdout, canary), dumped.stdout
    async with site.http(tenant.key) as http:
        r = await http.get(f"/v1/sandboxes/{sandbox_id}/execs/{dumped.id}")
    assert r.status_code == 200, r.text
    assert "RST_SECRET=***" in r.json()["stdout"], r.json()
    assert not shows(r.text, canary), r.text


async def test_a_secret_stays_masked_after_a_restart_and_in_a_later_fork(site: Airlock) -> None:
    tenant = await site.tenant()
    canary = "rst-" + secrets.token_hex(16)
    box = await site.sandbox(tenant)
    # Exec 1 leaves a background process holding the secret in its environment.
    _, first = await run_exec(
        tenant.client,
        box.id,
        cmd=["sh", "-c", LEAVE_IT],
        secrets={"RST_SECRET": canary},
    )
    assert first is not None and first.exit_code == 0, first

    await restart(site)

    _, still = await run_exec(tenant.client, box.id, cmd=["sh", "-c", HOLDS_IT])
    assert still is not None and int(still.stdout) >= 1, "the process holding it is gone"
    await shows_masked(site, tenant, box.id, canary, DUMP_ENVIRON)

    # A snapshot keeps no process an adopted sandbox's execs started: the file carries it over.
    _, ended = await run_exec(tenant.client, box.id, cmd=["sh", "-c", "kill $(pidof sleep)"])
    assert ended is not None and ended.exit_code == 0, ended
    async with site.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{box.id}/fork", json={})
        assert r.status_code == 201, r.text
        child = r.json()["id"]
        tenant.sandboxes.append(child)
    await shows_masked(site, tenant, child, canary, "cat /tmp/kept")

    rows = await kept_rows(site, [box.id, child])
    assert {row[0] for row in rows} == {box.id, child}, rows
    cells = [
        bytes(c) if isinstance(c, bytes | memoryview) else str(c).encode() for r in rows for c in r
    ]
    assert not [c for c in cells if canary.encode() in c or canary[4:].encode() in c], rows
