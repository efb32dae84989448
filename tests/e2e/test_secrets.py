"""A secret passed in `secrets` reaches the command and nothing else: not the database, the
audit log, the server log, the returned output, the event stream or the exec history."""

from __future__ import annotations

import secrets

from tests.e2e.conftest import Airlock, Tenant, audit_events, run_exec, sse_events

# Writes the secret in two pieces with a pause between, so it crosses output chunks.
SPLIT = (
    "import os, sys, time\n"
    "s = os.environ['API_TOKEN']\n"
    "sys.stdout.write('split=' + s[:9]); sys.stdout.flush(); time.sleep(0.4)\n"
    "sys.stdout.write(s[9:] + '\\n'); sys.stdout.flush()\n"
)


async def test_secret_canary_leaks_nowhere(airlock: Airlock, tenant: Tenant) -> None:
    canary = "canary-" + secrets.token_hex(16)
    sandbox = await airlock.sandbox(tenant)

    r1, echoed = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["sh", "-c", 'echo "token=$API_TOKEN"; echo "$API_TOKEN" >&2; echo done'],
        secrets={"API_TOKEN": canary},
    )
    assert echoed is not None and echoed.exit_code == 0
    assert echoed.stdout == "token=***\ndone\n"
    assert echoed.stderr == "***\n"
    assert echoed.secret_names == ["API_TOKEN"]

    r2, split = await run_exec(
        tenant.client, sandbox.id, cmd=["python3", "-c", SPLIT], secrets={"API_TOKEN": canary}
    )
    assert split is not None and split.stdout == "split=***\n"

    # Someone puts the secret in argv anyway: it must be masked wherever argv is shown.
    r3, in_argv = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["sh", "-c", "echo ok", "argv-carries", canary],
        secrets={"API_TOKEN": canary},
    )
    assert in_argv is not None and in_argv.exit_code == 0
    assert in_argv.cmd == ["sh", "-c", "echo ok", "argv-carries", "***"]

    seen = {"exec answers": b"".join(r.content for r in (r1, r2, r3))}
    async with airlock.http(tenant.key) as http:
        history = await http.get(f"/v1/sandboxes/{sandbox.id}/execs")
        assert history.status_code == 200
        seen["exec history"] = history.content
        cmds = [e["cmd"] for e in history.json()["items"]]
        assert ["sh", "-c", "echo ok", "argv-carries", "***"] in cmds
        for ran in (echoed, split, in_argv):
            one = await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{ran.id}")
            seen[f"GET exec {ran.id}"] = one.content
            async with http.stream(
                "GET", f"/v1/sandboxes/{sandbox.id}/execs/{ran.id}/events"
            ) as stream:
                body = b""
                async for event in sse_events(stream):
                    body += repr(event).encode()
                seen[f"events of {ran.id}"] = body
    seen["audit log"] = repr(await audit_events(airlock, tenant)).encode()
    seen["database"] = (await airlock.db.dump()).encode()
    seen["server log"] = airlock.server.log_path.read_bytes()

    # The checks can see the secret at all: the masked output above is where it would be.
    assert b"***" in seen["exec answers"]
    assert "sandbox.create" in seen["audit log"].decode()
    assert sandbox.id.encode() in seen["database"]
    leaked = [where for where, data in seen.items() if canary.encode() in data]
    assert leaked == [], f"the secret appears in: {leaked}"
    # Nor a recognisable half of it (a mask that misses a secret split across chunks).
    halves = (canary[:20].encode(), canary[-20:].encode())
    partial = [where for where, data in seen.items() if any(h in data for h in halves)]
    assert partial == [], f"part of the secret appears in: {partial}"


async def test_secret_in_cwd_is_not_stored(airlock: Airlock, tenant: Tenant) -> None:
    canary = "canary-" + secrets.token_hex(16)
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["pwd"],
        cwd=f"/tmp/{canary}",
        secrets={"API_TOKEN": canary},
    )
    assert ex is not None
    assert canary not in await airlock.db.dump()
    assert canary not in repr(await audit_events(airlock, tenant))


async def test_output_cap_inside_a_secret_leaks_no_part_of_it(
    airlock: Airlock, tenant: Tenant
) -> None:
    canary = "canary-" + secrets.token_hex(16)
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["sh", "-c", 'printf "%0990d$API_TOKEN\\n" 0'],
        secrets={"API_TOKEN": canary},
        max_output_bytes=1000,
    )
    assert ex is not None and ex.stdout_truncated
    assert ex.stdout.startswith("0" * 990)
    assert canary[:10] not in ex.stdout, ex.stdout[990:]
    assert canary[:10] not in await airlock.db.dump()
