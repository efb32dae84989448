"""What a newcomer meets first, through `sbx` and the SDK against a real server: a refused value
named with the rule it broke, an output stream that outlives many drops, and a token honoured a
few seconds past its expiry. (The README's async example runs in the client README's walk.)"""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest
from airlock_sdk import AsyncSandbox, Sandbox, errors

from service.auth.tokens import LEEWAY_S
from tests.e2e.conftest import REPO, Airlock, Tenant
from tests.e2e.test_sbx import bash
from tests.e2e.test_sdk_resilience import Cut, proxy_for

CLIENT_README = REPO / "clients/python/README.md"
MAIN_README = REPO / "README.md"


async def test_a_refused_value_is_named_with_its_rule(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    done = await bash(
        'sbx new --ttl 99999999; echo "new=$?"\n'
        f'sbx exec {sandbox.id} --timeout 100000 -- true; echo "exec=$?"\n',
        airlock,
        tenant,
    )
    assert "new=1" in done.stdout and "exec=1" in done.stdout, done.stdout
    assert "ttl_s: must be at most 2592000" in done.stderr, done.stderr
    assert "timeout_s: must be at most 86400" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

    def create_huge() -> Sandbox:
        return Sandbox.create(url=airlock.server.url, api_key=tenant.key, size="huge")

    with pytest.raises(errors.ValidationFailed) as refused:
        await asyncio.to_thread(create_huge)
    assert [(e.field, e.source) for e in refused.value.errors] == [("size", "body")]
    assert "; size: " in str(refused.value), str(refused.value)


async def test_json_errors_name_the_refused_values(airlock: Airlock, tenant: Tenant) -> None:
    done = await bash('sbx new --ttl 99999999 --json; echo "new=$?"', airlock, tenant)
    creating, error_line, status = done.stdout.splitlines()
    assert json.loads(creating)["event"] == "creating" and status == "new=1", done.stdout
    error = json.loads(error_line)
    assert (error["status"], error["code"]) == (422, "validation_failed"), error
    refused = {"field": "ttl_s", "message": "must be at most 2592000", "source": "body"}
    assert error["event"] == "error" and error["errors"] == [refused], error
    assert "Traceback" not in done.stderr


async def test_an_output_stream_resumes_after_every_one_of_many_drops(
    airlock: Airlock, tenant: Tenant
) -> None:
    proxy = proxy_for(airlock)
    ticks = 20
    program = (
        f"import time\nfor i in range({ticks}):\n"
        "    print('tick', i, flush=True)\n    time.sleep(0.15)\n"
    )
    want = "".join(f"tick {i}\n" for i in range(ticks))
    async with proxy.running() as url:
        sandbox = await AsyncSandbox.create(url=url, api_key=tenant.key, ttl=600)
        tenant.sandboxes.append(sandbox.id)
        try:
            await sandbox.files.write("ticks.py", program)
            cut = Cut(request=b"/events HTTP", marker=b"tick", count=2, times=5)
            proxy.cuts.append(cut)
            pieces: list[str] = []
            result = await sandbox.run(["python3", "ticks.py"], on_stdout=pieces.append)
            assert cut.done >= 4, cut  # each broken mid-stream, each resumed
            assert "".join(pieces) == want and result.stdout == want and result.ok

            again = Cut(request=b"/events HTTP", marker=b"tick", count=2, times=5)
            proxy.cuts[:] = [again]

            def run_synchronously() -> str:
                with Sandbox.connect(sandbox.id, url=url, api_key=tenant.key) as same:
                    return same.run(["python3", "ticks.py"], on_stdout=lambda _: None).stdout

            assert await asyncio.to_thread(run_synchronously) == want
            assert again.done >= 4, again
        finally:
            await sandbox.close()


def expiry_of(token: str) -> float:
    payload = token.split(".")[1]
    return float(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"])


async def test_a_token_is_honoured_for_the_documented_leeway_past_its_expiry(
    airlock: Airlock, tenant: Tenant
) -> None:
    for readme in (CLIENT_README, MAIN_README):
        said = " ".join(readme.read_text().split())
        assert f"up to {LEEWAY_S} s after its `exp`" in said, readme
    sandbox = await airlock.sandbox(tenant)
    mint = f"sbx token --sandbox {sandbox.id} --scope sandboxes:read --ttl 1"
    minted = await bash(mint, airlock, tenant)
    assert minted.returncode == 0, minted.stderr
    token = minted.stdout.strip()
    expires = expiry_of(token)
    get = f"sbx --api-key {token} get {sandbox.id} --json"

    await asyncio.sleep(max(0.0, expires + LEEWAY_S - 3 - time.time()))
    late = await bash(get, airlock, tenant)
    assert late.returncode == 0, late.stderr  # past `exp`, within the leeway
    assert json.loads(late.stdout)["id"] == sandbox.id

    await asyncio.sleep(max(0.0, expires + LEEWAY_S + 1.5 - time.time()))
    refused = await bash(get, airlock, tenant)
    assert refused.returncode == 1
    assert "401 unauthenticated: token expired" in refused.stderr, refused.stderr
