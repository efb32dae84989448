"""What the server answered is in the database when its process is killed at once after the
answer (SIGKILL, no shutdown): execs with their output, a secret's sealed value, their audit
events, and a chain that still verifies after the restart. On the embedded SQLite database this
is the promise of its settings (WAL, synchronous=NORMAL: a commit is in the WAL file before the
answer; README, "The embedded database")."""

from __future__ import annotations

import secrets
import sqlite3

import pytest

from tests.conftest import database_kind
from tests.e2e.conftest import Airlock, run_exec

pytestmark = pytest.mark.sqlite

EXECS = """
SELECT e.id, e.state, e.exit_code, e.stdout_bytes, e.stored_bytes,
  (SELECT count(*) FROM exec_chunks c WHERE c.exec_id = e.id),
  (SELECT count(*) FROM audit_events a WHERE a.target = e.id AND a.action = 'exec.start'),
  (SELECT count(*) FROM audit_events a WHERE a.target = e.id AND a.action = 'exec.finish')
FROM execs e WHERE e.sandbox_id = {mark}
"""
SEALED = "SELECT count(*) FROM sandbox_secret_values WHERE sandbox_id = {mark}"


async def rows(site: Airlock, sql: str, sandbox_id: str) -> list[tuple[object, ...]]:
    """Rows read with SQL from the database file (SQLite) or the server's database."""
    if database_kind() == "sqlite":
        with sqlite3.connect(site.server.state_dir / "airlock.db") as conn:
            return conn.execute(sql.format(mark="?"), (sandbox_id,)).fetchall()
    found = await site.db.fetch(sql.format(mark="$1"), sandbox_id)
    return [tuple(row.values()) for row in found]


async def test_answered_execs_and_their_audit_survive_a_kill(site: Airlock) -> None:
    tenant = await site.tenant()
    box = await site.sandbox(tenant)
    answered = {}
    for n in range(5):
        _, done = await run_exec(
            tenant.client,
            box.id,
            cmd=["sh", "-c", f"echo out-{n}; exit {n}"],
            secrets={"CRASH_SECRET": "crash-" + secrets.token_hex(8)} if n == 4 else {},
        )
        assert done is not None and done.exit_code == n, done
        answered[done.id] = n
    site.server.kill()  # right after the last answer: no shutdown, nothing flushed after

    kept = {row[0]: row[1:] for row in await rows(site, EXECS, box.id)}
    assert set(kept) == set(answered)
    for exec_id, n in answered.items():
        state, exit_code, stdout_bytes, stored, chunks, starts, finishes = kept[exec_id]
        assert (state, exit_code, stdout_bytes) == ("finished", n, len(f"out-{n}\n"))
        assert stored == stdout_bytes and chunks >= 1, kept[exec_id]
        assert (starts, finishes) == (1, 1), kept[exec_id]
    assert (await rows(site, SEALED, box.id))[0][0] == 1

    site.server.start()
    await site.server.wait_ready()
    async with site.http(tenant.key) as http:
        verified = await http.get("/v1/audit/verify", params={"full": "true"})
        assert verified.status_code == 200, verified.text
        assert verified.json()["valid"] is True, verified.json()
        assert verified.json()["events_checked"] >= 2 * len(answered)
        listed = await http.get(f"/v1/sandboxes/{box.id}/execs")
    assert {item["id"] for item in listed.json()["items"]} == set(answered)
